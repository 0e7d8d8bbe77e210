//! `run`'s knob flags (`--conns`, `--clients`, `--rate`, `--msg-bytes`, `--body-bytes`,
//! `--duration`, `--warmup`): each replaces one parameter in the points of the workloads that
//! take it. A workload takes a knob when its points carry the parameter or it lists it in
//! [`Workload::optional_params`]; a knob some selected workload does not take is refused,
//! naming those that do not and those that do. A list (`--conns 10,100`) is a sweep: every
//! point of the profile is run at each value, points made equal by the override run once.

use super::Case;
use crate::error::InputError;
use crate::measure::pin::CpuPlan;
use crate::model::ModelSpec;
use crate::profile::Profile;
use crate::registry::MODELS;
use crate::workload::{Limits, Point, Workload};

/// A knob of `ringside run` over the workloads' parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Knob {
    Conns,
    Clients,
    Rate,
    MsgBytes,
    BodyBytes,
    Duration,
    Warmup,
}

use crate::load::MAX_CONNS;
/// Fds a process needs beside its connections (`io::sys::raise_nofile`'s margin).
const FD_MARGIN: u64 = 64;

impl Knob {
    pub const ALL: [Knob; 7] = [
        Knob::Conns,
        Knob::Clients,
        Knob::Rate,
        Knob::MsgBytes,
        Knob::BodyBytes,
        Knob::Duration,
        Knob::Warmup,
    ];

    /// Its flag on the command line.
    pub fn flag(self) -> &'static str {
        match self {
            Knob::Conns => "--conns",
            Knob::Clients => "--clients",
            Knob::Rate => "--rate",
            Knob::MsgBytes => "--msg-bytes",
            Knob::BodyBytes => "--body-bytes",
            Knob::Duration => "--duration",
            Knob::Warmup => "--warmup",
        }
    }

    /// The parameter it sets, under the name results files record.
    pub fn param(self) -> &'static str {
        match self {
            Knob::Conns => "conns",
            Knob::Clients => "clients",
            Knob::Rate => "rate_per_sec",
            Knob::MsgBytes => "msg_bytes",
            Knob::BodyBytes => "body_bytes",
            Knob::Duration => "duration_ms",
            Knob::Warmup => "warmup_ms",
        }
    }

    /// A workload's own range of it, where narrower than [`Knob::range`].
    fn limit(self, l: &Limits) -> Option<(u64, u64)> {
        match self {
            Knob::MsgBytes => l.msg_bytes,
            Knob::Conns
            | Knob::Clients
            | Knob::Rate
            | Knob::BodyBytes
            | Knob::Duration
            | Knob::Warmup => None,
        }
    }

    /// Seconds, given as "3", "2.5", "3s" or "500ms" and set in milliseconds.
    fn is_time(self) -> bool {
        matches!(self, Knob::Duration | Knob::Warmup)
    }

    /// The values it may take, in the parameter's unit (ms for the times).
    fn range(self) -> (u64, u64) {
        match self {
            // Each connection is an fd in the load generator and one in the server.
            Knob::Conns | Knob::Clients => (
                1,
                MAX_CONNS.min(
                    crate::io::sys::nofile_reachable()
                        .saturating_sub(FD_MARGIN)
                        .max(1),
                ),
            ),
            Knob::Rate => (1, 100_000_000),
            Knob::MsgBytes => (
                crate::load::echo::MIN_MSG_BYTES as u64,
                crate::load::echo::MAX_MSG_BYTES as u64,
            ),
            Knob::BodyBytes => (0, crate::proto::http::MAX_BODY_BYTES as u64),
            Knob::Duration => (50, 3_600_000),
            Knob::Warmup => (0, 600_000),
        }
    }

    fn valid_text(self) -> String {
        let (lo, hi) = self.range();
        match self {
            Knob::Duration | Knob::Warmup => format!(
                "must be seconds between {} and {} (\"3\", \"2.5\", \"3s\", \"500ms\"; a \
                 comma-separated list is a sweep)",
                lo as f64 / 1000.0,
                hi as f64 / 1000.0
            ),
            Knob::Conns | Knob::Clients => format!(
                "must be between {lo} and {hi} (at most {MAX_CONNS}, and within the open-file \
                 limit this process can reach, less {FD_MARGIN}; a comma-separated list is a \
                 sweep)"
            ),
            _ => format!("must be between {lo} and {hi} (a comma-separated list is a sweep)"),
        }
    }

    /// One value as typed, in the parameter's unit.
    fn parse_one(self, v: &str) -> Option<u64> {
        let v = v.trim();
        if !self.is_time() {
            return v.parse::<u64>().ok();
        }
        let secs = match v.parse::<f64>() {
            Ok(s) => s,
            Err(_) => humantime::parse_duration(v).ok()?.as_secs_f64(),
        };
        (0.0..1e9)
            .contains(&secs)
            .then(|| (secs * 1000.0).round() as u64)
    }
}

/// A knob and the values it sweeps.
#[derive(Clone, Debug, PartialEq)]
pub struct Override {
    pub knob: Knob,
    pub values: Vec<u64>,
}

impl Override {
    /// The values as the flag takes them (seconds for the times).
    fn given_text(&self) -> String {
        let one = |v: u64| {
            if self.knob.is_time() {
                (v as f64 / 1000.0).to_string()
            } else {
                v.to_string()
            }
        };
        self.values
            .iter()
            .map(|&v| one(v))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// The run's knob flags, in [`Knob::ALL`] order; empty: the profile's points as they are.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overrides(pub Vec<Override>);

impl Overrides {
    /// Parses what the user typed for each knob (`None`: not given). Every value is checked
    /// against the knob's range; a value given twice is refused.
    pub fn parse(given: &[(Knob, Option<&str>)]) -> Result<Overrides, InputError> {
        let mut out = Vec::new();
        for knob in Knob::ALL {
            let Some(text) = given.iter().find(|(k, _)| *k == knob).and_then(|(_, t)| *t) else {
                continue;
            };
            let bad = |why: String| InputError::BadValue {
                flag: knob.flag(),
                given: format!("'{text}'"),
                valid: why,
            };
            let (lo, hi) = knob.range();
            let mut values = Vec::new();
            for part in text.split(',') {
                if part.trim().is_empty() {
                    return Err(bad(
                        "has an empty element: separate the values with single commas \
                         (\"10,100\")"
                            .into(),
                    ));
                }
                let v = knob
                    .parse_one(part)
                    .filter(|v| (lo..=hi).contains(v))
                    .ok_or_else(|| bad(knob.valid_text()))?;
                if values.contains(&v) {
                    return Err(bad(format!(
                        "names '{}' twice; name each value once",
                        part.trim()
                    )));
                }
                values.push(v);
            }
            out.push(Override { knob, values });
        }
        Ok(Overrides(out))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The values of `knob`, when given.
    pub fn get(&self, knob: Knob) -> Option<&[u64]> {
        self.0
            .iter()
            .find(|o| o.knob == knob)
            .map(|o| o.values.as_slice())
    }

    /// Refuses a knob that a selected workload does not take, naming the ones that do not
    /// and the ones that do, and a value outside a workload's own range of it
    /// ([`Workload::limits`]), naming the workload and its range.
    pub fn check(
        &self,
        workloads: &[&'static dyn Workload],
        profile: Profile,
        cpus: &CpuPlan,
    ) -> Result<(), InputError> {
        for o in &self.0 {
            let (given, not): (Vec<&&'static dyn Workload>, Vec<_>) = workloads
                .iter()
                .partition(|w| takes(**w, o.knob, profile, cpus));
            if not.is_empty() {
                // Each value within the range of every workload that takes it.
                for w in &given {
                    let Some((lo, hi)) = o.knob.limit(&w.limits()) else {
                        continue;
                    };
                    if let Some(v) = o.values.iter().find(|v| !(lo..=hi).contains(*v)) {
                        return Err(InputError::BadValue {
                            flag: o.knob.flag(),
                            given: v.to_string(),
                            valid: format!(
                                "{} takes {} between {lo} and {hi}",
                                w.id(),
                                o.knob.param()
                            ),
                        });
                    }
                }
                continue;
            }
            let names = |v: &[&&'static dyn Workload]| {
                v.iter().map(|w| w.id()).collect::<Vec<_>>().join(", ")
            };
            let elsewhere: Vec<&str> = crate::registry::WORKLOADS
                .iter()
                .filter(|w| takes(**w, o.knob, profile, cpus))
                .map(|w| w.id())
                .collect();
            let valid = if given.is_empty() {
                format!(
                    "no selected workload takes it ({} sets `{}`); the workloads that do: {}",
                    o.knob.flag(),
                    o.knob.param(),
                    elsewhere.join(", ")
                )
            } else {
                format!(
                    "{} {} not take it ({} sets `{}`); it applies to {}: select only those",
                    names(&not),
                    if not.len() == 1 { "does" } else { "do" },
                    o.knob.flag(),
                    o.knob.param(),
                    names(&given)
                )
            };
            return Err(InputError::BadValue {
                flag: o.knob.flag(),
                given: o.given_text(),
                valid,
            });
        }
        Ok(())
    }

    /// The cases with every point overridden: each knob's values replace its parameter in
    /// the points that take it (a list multiplies them), and points the override made equal
    /// (same workload, model, params and variant) are kept once, first come first kept, so a
    /// capacity point still comes before the equal-load point that names it.
    pub fn apply(&self, cases: Vec<Case>) -> Result<Vec<Case>, InputError> {
        if self.is_empty() {
            return Ok(cases);
        }
        let mut out: Vec<Case> = Vec::with_capacity(cases.len());
        for c in cases {
            let Some(p) = &c.point else {
                out.push(c);
                continue;
            };
            let mut points = vec![p.clone()];
            for o in &self.0 {
                let param = o.knob.param();
                let mut next = Vec::with_capacity(points.len() * o.values.len());
                for p in points {
                    if !point_takes(c.workload, &p, param) {
                        next.push(p);
                        continue;
                    }
                    for &v in &o.values {
                        next.push(p.set(param, v).map_err(|e| InputError::BadValue {
                            flag: o.knob.flag(),
                            given: o.given_text(),
                            valid: format!("{} cannot take it: {e}", c.workload.id()),
                        })?);
                    }
                }
                points = next;
            }
            for p in points {
                held_bodies_fit(&p)?;
                let same = |x: &Case| {
                    x.workload.id() == c.workload.id()
                        && x.model.id == c.model.id
                        && x.point.as_ref().is_some_and(|q| {
                            q.params == p.params
                                && q.variant == p.variant
                                && q.equal_load.is_some() == p.equal_load.is_some()
                        })
                };
                if !out.iter().any(same) {
                    out.push(Case {
                        workload: c.workload,
                        model: c.model,
                        point: Some(p),
                        not_applicable: None,
                    });
                }
            }
        }
        Ok(out)
    }
}

/// Refuses a point whose connections would hold more expected HTTP body bytes together than
/// the load generator allows ([`MAX_HELD_BODY_BYTES`]): each connection holds the body it
/// checks.
fn held_bodies_fit(p: &Point) -> Result<(), InputError> {
    use crate::load::http::MAX_HELD_BODY_BYTES;
    let get = |k: &str| p.params.0.get(k).and_then(|v| v.as_u64());
    let (Some(body), Some(clients)) = (get(Knob::BodyBytes.param()), get(Knob::Clients.param()))
    else {
        return Ok(());
    };
    let held = crate::proto::http::served_body(Some(body as usize)).len() as u64;
    if clients.saturating_mul(held) <= MAX_HELD_BODY_BYTES {
        return Ok(());
    }
    Err(InputError::BadValue {
        flag: Knob::BodyBytes.flag(),
        given: body.to_string(),
        valid: format!(
            "a point of {clients} clients would hold {} body bytes (each client holds the body \
             it checks; at most {MAX_HELD_BODY_BYTES} in all): fewer --clients or a smaller body",
            clients.saturating_mul(held)
        ),
    })
}

/// Whether `p`, a point of `w`, has the parameter `param` to set.
fn point_takes(w: &dyn Workload, p: &Point, param: &str) -> bool {
    p.params.0.contains_key(param) || w.optional_params().contains(&param)
}

/// Whether `w` takes `knob`: a point of it (under any model it accepts) carries the parameter,
/// or the workload lists it as optional.
pub fn takes(w: &dyn Workload, knob: Knob, profile: Profile, cpus: &CpuPlan) -> bool {
    let param = knob.param();
    if w.optional_params().contains(&param) {
        return true;
    }
    let accepted = |m: &&ModelSpec| w.accepts(m).is_ok();
    MODELS.iter().filter(accepted).any(|m| {
        w.points_on(profile, m, cpus)
            .iter()
            .any(|p| p.params.0.contains_key(param))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry;

    fn parse(k: Knob, s: &str) -> Result<Overrides, InputError> {
        Overrides::parse(&[(k, Some(s))])
    }

    #[test]
    fn values_are_checked_and_times_are_seconds() {
        assert_eq!(
            parse(Knob::Conns, "10,100").unwrap().get(Knob::Conns),
            Some(&[10, 100][..])
        );
        for t in ["3", "3s", "3000ms", "3.0"] {
            assert_eq!(
                parse(Knob::Duration, t).unwrap().get(Knob::Duration),
                Some(&[3000][..]),
                "{t}"
            );
        }
        assert_eq!(
            parse(Knob::Warmup, "0").unwrap().get(Knob::Warmup),
            Some(&[0][..])
        );
        assert_eq!(
            parse(Knob::BodyBytes, "0").unwrap().get(Knob::BodyBytes),
            Some(&[0][..])
        );
        for (k, s) in [
            (Knob::Conns, "0"),
            (Knob::Conns, "ten"),
            (Knob::Conns, "10,,20"),
            (Knob::Conns, "100000000"),
            (Knob::Rate, "0"),
            (Knob::MsgBytes, "2"),
            (Knob::BodyBytes, "99999999"),
            (Knob::Duration, "0"),
            (Knob::Duration, "-1"),
            (Knob::Duration, "3 fortnights"),
            (Knob::Warmup, "NaN"),
        ] {
            let e = parse(k, s).unwrap_err().to_string();
            let says = match s.contains(",,") {
                true => "empty element",
                false => "between",
            };
            assert!(
                e.contains(k.flag()) && e.contains(s) && e.contains(says),
                "{e}"
            );
        }
        let e = parse(Knob::Conns, "10,10").unwrap_err().to_string();
        assert!(e.contains("twice"), "{e}");
        assert!(Overrides::parse(&[(Knob::Conns, None)]).unwrap().is_empty());
    }

    #[test]
    fn a_knob_a_selected_workload_does_not_take_is_refused_by_name() {
        let plan = CpuPlan::pair(1, Some(0));
        let ws = |ids: &[&str]| -> Vec<&'static dyn Workload> {
            ids.iter().map(|i| registry::workload(i).unwrap()).collect()
        };
        let conns = parse(Knob::Conns, "100").unwrap();
        conns
            .check(&ws(&["echo.payload", "echo.conns"]), Profile::Smoke, &plan)
            .unwrap();
        let e = conns
            .check(&ws(&["echo.payload", "micro.pipe"]), Profile::Smoke, &plan)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--conns") && e.contains("micro.pipe does not take"),
            "{e}"
        );
        assert!(e.contains("applies to echo.payload"), "{e}");
        let e = conns
            .check(&ws(&["micro.pipe"]), Profile::Smoke, &plan)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no selected workload") && e.contains("echo.payload"),
            "{e}"
        );
        // Every knob is taken by some workload.
        for k in Knob::ALL {
            assert!(
                registry::WORKLOADS
                    .iter()
                    .any(|w| takes(*w, k, Profile::Quick, &plan)),
                "{}",
                k.flag()
            );
        }
    }

    #[test]
    fn overrides_replace_params_multiply_by_lists_and_keep_equal_points_once() {
        let plan = CpuPlan::pair(1, Some(0));
        let w = registry::workload("echo.payload").unwrap();
        let m = registry::model("epoll-lt").unwrap();
        let cases = super::super::expand(&[w], &[m], false, Profile::Quick, &plan);
        let sizes = cases.len();
        assert!(sizes > 1);
        let o = Overrides::parse(&[(Knob::Conns, Some("7,9")), (Knob::Duration, Some("250ms"))])
            .unwrap();
        let out = o.apply(cases.clone()).unwrap();
        assert_eq!(out.len(), sizes * 2);
        for c in &out {
            let p = c.point.as_ref().unwrap();
            assert!([7, 9].contains(&p.params.u64("conns").unwrap()));
            assert_eq!(p.params.u64("duration_ms").unwrap(), 250);
            // The typed args were remade: the workload reads the new values.
            let a = p.args::<crate::workload::net::echo::Args>().unwrap();
            assert_eq!(
                (a.duration_ms, a.conns),
                (250, p.params.u64("conns").unwrap())
            );
        }
        // A body every client of a point holds must fit the load generator's bound.
        let h = registry::workload("http.clients").unwrap();
        let hc = super::super::expand(&[h], &[m], false, Profile::Quick, &plan);
        let big = Overrides::parse(&[
            (Knob::BodyBytes, Some("1048576")),
            (Knob::Clients, Some("2000")),
        ]);
        let e = big.unwrap().apply(hc.clone()).err().unwrap().to_string();
        assert!(
            e.contains("--body-bytes 1048576") && e.contains("2000 clients"),
            "{e}"
        );
        assert!(parse(Knob::BodyBytes, "1048576").unwrap().apply(hc).is_ok());
        // One message size for every point: the sweep collapses to one point.
        let one = parse(Knob::MsgBytes, "2048").unwrap().apply(cases).unwrap();
        assert_eq!(
            one.len(),
            1,
            "{:?}",
            one.iter().map(|c| &c.point).collect::<Vec<_>>()
        );
        assert_eq!(
            one[0]
                .point
                .as_ref()
                .unwrap()
                .params
                .u64("msg_bytes")
                .unwrap(),
            2048
        );
    }

    #[test]
    fn equal_load_points_follow_their_capacity_point() {
        let plan = CpuPlan::pair(1, Some(0));
        let w = registry::workload("echo.conns").unwrap();
        let m = registry::model("epoll-lt").unwrap();
        let cases = super::super::expand(&[w], &[m], false, Profile::Full, &plan);
        assert!(cases
            .iter()
            .any(|c| c.point.as_ref().unwrap().equal_load.is_some()));
        let out = parse(Knob::Conns, "33").unwrap().apply(cases).unwrap();
        assert_eq!(out.len(), 2, "a capacity point and its equal-load point");
        let eq = out[1].point.as_ref().unwrap();
        let cap = out[0].point.as_ref().unwrap();
        assert!(cap.equal_load.is_none());
        assert_eq!(eq.equal_load.as_ref().unwrap().capacity_of, cap.params);
    }
}
