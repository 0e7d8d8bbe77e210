//! External contenders as data: `--contender [PROTO:]NAME='command with {port}'` parsed into an
//! [`External`], and the run's [`Catalog`] of them — the model row `ext:NAME` of each and its
//! command — passed to the workloads in their context ([`crate::workload::Ctx`]). Starting one
//! is `peer::external`'s.

use super::{Family, Knobs, ModelSpec, PeerKind};
use crate::error::InputError;

/// Placeholder in the command replaced by the chosen port.
pub const PORT_PLACEHOLDER: &str = "{port}";

/// Protocols a contender may be restricted to with a `PROTO:` prefix (the network suites'
/// names).
pub const CONTENDER_PROTOCOLS: &[&str] = &["echo", "http"];

/// An external contender as given on the command line: `[PROTO:]NAME=command with {port}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct External {
    /// `[a-z0-9-]+`; the model id is `ext:NAME`.
    pub(crate) name: String,
    /// Shell command containing `{port}` at least once.
    pub(crate) command: String,
    /// The one protocol it speaks (`http:nginx=...`), or `None`: every network suite run
    /// measures it.
    pub(crate) protocol: Option<&'static str>,
}

impl External {
    /// Parses `[PROTO:]NAME=command`. PROTO is one of [`CONTENDER_PROTOCOLS`], NAME must be
    /// `[a-z0-9-]+` (at most 40 characters) and the command must contain `{port}`.
    pub fn parse(spec: &str) -> Result<External, InputError> {
        let bad = |why: &str| InputError::BadContender {
            given: spec.to_string(),
            why: why.to_string(),
        };
        let (name, command) = spec
            .split_once('=')
            .ok_or_else(|| bad("no '=' after NAME"))?;
        let (protocol, name) = match name.split_once(':') {
            Some((p, n)) => match CONTENDER_PROTOCOLS.iter().find(|&&v| v == p) {
                Some(&v) => (Some(v), n),
                None => {
                    return Err(bad(&format!(
                        "unknown protocol '{p}' before NAME; valid: {}",
                        CONTENDER_PROTOCOLS.join(", ")
                    )))
                }
            },
            None => (None, name),
        };
        if name.is_empty() {
            return Err(bad("NAME is empty"));
        }
        if name.len() > 40 {
            return Err(bad("NAME is longer than 40 characters"));
        }
        if !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        {
            return Err(bad(&format!(
                "NAME '{name}' may only contain a-z, 0-9 and '-'"
            )));
        }
        if !command.contains(PORT_PLACEHOLDER) {
            return Err(bad("the command does not contain {port}"));
        }
        Ok(External {
            name: name.to_string(),
            command: command.to_string(),
            protocol,
        })
    }

    /// Whether this contender takes part in suites of `protocol`.
    pub(crate) fn speaks(&self, protocol: &str) -> bool {
        self.protocol.is_none_or(|p| p == protocol)
    }

    /// The model id of this contender: `ext:NAME`.
    pub(crate) fn model_id(&self) -> String {
        format!("ext:{}", self.name)
    }

    /// The command with `{port}` replaced.
    pub(crate) fn command_for(&self, port: u16) -> String {
        self.command.replace(PORT_PLACEHOLDER, &port.to_string())
    }
}

/// The external contenders of one run: each one's command and its model row.
#[derive(Debug, Default)]
pub struct Catalog {
    entries: Vec<(External, &'static ModelSpec)>,
}

/// A catalog without contenders.
pub static NO_CONTENDERS: Catalog = Catalog {
    entries: Vec::new(),
};

impl Catalog {
    /// The contenders of `--contender` flags, in the order given. Two with one NAME are
    /// refused, naming it.
    ///
    /// Each gets a model row (`ext:NAME`, `Knobs::Peer(PeerKind::External)`) that lives as
    /// long as the process: a case refers to its model as `&'static`. A run builds one catalog.
    pub fn from_specs(specs: &[String]) -> Result<Catalog, InputError> {
        let mut entries: Vec<(External, &'static ModelSpec)> = Vec::new();
        for spec in specs {
            let ext = External::parse(spec)?;
            if entries.iter().any(|(e, _)| e.name == ext.name) {
                return Err(InputError::BadContender {
                    given: spec.clone(),
                    why: format!(
                        "the name '{}' is given twice (each --contender needs a NAME of its own)",
                        ext.name
                    ),
                });
            }
            let row: &'static ModelSpec = Box::leak(Box::new(ModelSpec {
                id: Box::leak(ext.model_id().into_boxed_str()),
                summary: "external contender: a server command given with --contender",
                family: Family::Peer,
                default_run: true,
                knobs: Knobs::Peer(PeerKind::External),
            }));
            entries.push((ext, row));
        }
        Ok(Catalog { entries })
    }

    /// The contenders' model rows, in the order given.
    pub fn models(&self) -> impl Iterator<Item = &'static ModelSpec> + '_ {
        self.entries.iter().map(|(_, m)| *m)
    }

    /// The contender of model id `ext:NAME`.
    pub(crate) fn get(&self, model_id: &str) -> Option<&External> {
        self.entries
            .iter()
            .find(|(_, m)| m.id == model_id)
            .map(|(e, _)| e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_refuses() {
        let e = External::parse("node=node echo.js {port}").unwrap();
        assert_eq!(e.name, "node");
        assert_eq!(e.command_for(8080), "node echo.js 8080");
        assert_eq!(e.model_id(), "ext:node");
        // '=' inside the command is kept.
        assert_eq!(e.protocol, None);
        assert!(e.speaks("echo") && e.speaks("http"));
        let e = External::parse("c-ref2=env A=1 ./srv {port} {port}").unwrap();
        assert_eq!(e.command_for(9), "env A=1 ./srv 9 9");
        let e = External::parse("http:nginx=nginx -g 'listen {port};'").unwrap();
        assert_eq!((e.name.as_str(), e.protocol), ("nginx", Some("http")));
        assert!(e.speaks("http") && !e.speaks("echo"));
        let err = External::parse("ftp:x=cmd {port}").unwrap_err().to_string();
        assert!(err.contains("'ftp'") && err.contains("echo, http"), "{err}");
        for bad in [
            "node",
            "=cmd {port}",
            "Node=cmd {port}",
            "no_de=cmd {port}",
            "node=cmd 8080",
            "node=",
        ] {
            let err = External::parse(bad).unwrap_err().to_string();
            assert!(err.contains(bad), "{err}");
            assert!(err.contains("{port}"), "{err}");
        }
    }

    #[test]
    fn the_catalog_finds_contenders_by_model_id_and_refuses_a_name_twice() {
        let c = Catalog::from_specs(&["echo:a=x {port}".into(), "b=y {port}".into()]).unwrap();
        let ids: Vec<_> = c.models().map(|m| m.id).collect();
        assert_eq!(ids, ["ext:a", "ext:b"]);
        assert!(c.models().all(
            |m| m.family == Family::Peer && matches!(m.knobs, Knobs::Peer(PeerKind::External))
        ));
        assert_eq!(c.get("ext:a").map(|e| e.command.as_str()), Some("x {port}"));
        assert_eq!(c.get("ext:nobody"), None);
        assert_eq!(c.get("a"), None);
        assert!(NO_CONTENDERS.entries.is_empty() && NO_CONTENDERS.get("ext:a").is_none());
        let e = Catalog::from_specs(&["a=x {port}".into(), "http:a=y {port}".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("'a'") && e.contains("twice"), "{e}");
    }
}
