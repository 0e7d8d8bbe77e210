//! `Availability`: a feature is ready, or unavailable with a sentence that says why.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Whether something this machine may lack (io_uring, SQPOLL, a perf counter) can be used.
///
/// Serialized as the string `"ready"` or `"unavailable: <reason>"`, the form the results
/// schema and `ringside env` print.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Availability {
    Ready,
    Unavailable(String),
}

impl Availability {
    pub(crate) fn unavailable(reason: impl Into<String>) -> Self {
        Availability::Unavailable(reason.into())
    }
    pub fn is_ready(&self) -> bool {
        matches!(self, Availability::Ready)
    }
    /// The reason, if unavailable.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Availability::Ready => None,
            Availability::Unavailable(r) => Some(r),
        }
    }
    /// `Ready` when `self` and `other` are both ready; otherwise the first reason.
    pub(crate) fn and(self, other: &Availability) -> Availability {
        match self {
            Availability::Ready => other.clone(),
            u => u,
        }
    }
}

impl fmt::Display for Availability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Availability::Ready => f.write_str("ready"),
            Availability::Unavailable(r) => write!(f, "unavailable: {r}"),
        }
    }
}

impl Serialize for Availability {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl schemars::JsonSchema for Availability {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Availability".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "\"ready\", or \"unavailable: <reason>\".",
            "type": "string",
            "pattern": "^(ready|unavailable: .*)$"
        })
    }
}

impl<'de> Deserialize<'de> for Availability {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(match s.strip_prefix("unavailable: ") {
            Some(r) => Availability::Unavailable(r.to_string()),
            None if s == "ready" => Availability::Ready,
            None => Availability::Unavailable(s),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_json() {
        for a in [
            Availability::Ready,
            Availability::unavailable("SQPOLL refused: EPERM"),
        ] {
            let j = serde_json::to_string(&a).unwrap();
            assert_eq!(serde_json::from_str::<Availability>(&j).unwrap(), a);
        }
        assert_eq!(
            serde_json::to_string(&Availability::unavailable("x")).unwrap(),
            "\"unavailable: x\""
        );
    }
}
