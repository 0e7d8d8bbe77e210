//! Each workload's finding, decided once and typed: what it is ranked by (its basis) and the
//! ranking over its points, or why it is not ranked; where its capacity was only probed; each
//! family's best row against the other's at its equal-load points; and the pairs of models at
//! each point. `export::words` words them.

use super::basis::{higher_is_better, measured, points, Basis, NotRanked, Ranked};
use crate::model::Family;
use crate::results::facts::{Facts, Metric};
use crate::results::CaseResult;
use crate::stats::findings::{self, Confidence, Finding, Pair, Point, Standing};

/// What a workload's cells support. One per workload: its size is of no concern.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum Ranks {
    /// No basis to rank it on.
    NotRanked(NotRanked),
    /// A basis, but no point with two models on it: the first point's first model alone
    /// (`None`: nothing measured).
    Alone { basis: Basis, only: Option<Only> },
    /// Ranked over its points; with the same cells' p99s where the workload is a server's and
    /// its basis is not the p99 already.
    Ranked {
        basis: Basis,
        finding: Finding,
        p99: Option<Finding>,
    },
}

/// The one model measured at a workload's first point.
#[derive(Clone, Debug, PartialEq)]
pub struct Only {
    pub label: String,
    pub at: String,
    pub value: f64,
    /// The 95% bootstrap interval of its median over its repetitions.
    pub ci: Option<(f64, f64)>,
}

/// One family's best row against another's at one equal-load point (each family's lowest
/// server CPU per op there).
#[derive(Clone, Debug, PartialEq)]
pub struct FamilyPair {
    pub at: String,
    /// Where the point is, in words ("50 connections"), for a sentence of its own.
    pub place: String,
    /// The rate every model was offered there (the median of its cells'), per second.
    pub offered: Option<f64>,
    pub uring: String,
    pub epoll: String,
    pub confidence: Confidence,
}

/// A contender of the user's (`ext:NAME`) against one family's best row at one equal-load
/// point (that family's lowest server CPU per op there), or against the run's first contender
/// (`family` `None`: two builds of one server, the A/B recipe): how many times the other's CPU
/// per op the contender used.
#[derive(Clone, Debug, PartialEq)]
pub struct ContenderPair {
    pub at: String,
    pub place: String,
    pub offered: Option<f64>,
    pub contender: String,
    pub family: Option<Family>,
    pub against: String,
    pub confidence: Confidence,
}

/// The best row of the family a built-in runtime drives (epoll for tokio and tokio-mt,
/// io_uring for monoio) against that runtime at one equal-load point: how many times the
/// runtime's server CPU per op ringside's best row of the family used. Whether ringside's
/// own servers are the best of their family is a claim about ringside, made like any other.
#[derive(Clone, Debug, PartialEq)]
pub struct PeerPair {
    pub at: String,
    /// The runtime (`tokio`, `tokio-mt`, `monoio`).
    pub peer: String,
    pub family: Family,
    /// The family's best row at the point (its lowest server CPU per op).
    pub best: String,
    pub confidence: Confidence,
}

/// One workload's finding.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadFinding {
    pub ranks: Ranks,
    /// Where its capacity points were probes (the load generator had no headroom over the
    /// servers): the most any model achieved at a probed point, lowest and highest over them.
    pub probed: Option<(f64, f64)>,
    /// io_uring's best row against epoll's at each equal-load point with both.
    pub families: Vec<FamilyPair>,
    /// Each contender against each family's best row at each equal-load point.
    pub contenders: Vec<ContenderPair>,
    /// Each built-in runtime against the best row of the family it drives, at each
    /// equal-load point with both.
    pub peers: Vec<PeerPair>,
}

/// A workload's leader in a few words' worth: who led the most points of those ranked.
#[derive(Clone, Debug, PartialEq)]
pub enum Leader {
    NotRanked,
    Alone(String),
    NoneDecided,
    Led {
        label: String,
        led: usize,
        points: usize,
    },
}

impl WorkloadFinding {
    /// The finding of one workload's cells, whose basis and rankings are `ranked`.
    pub(crate) fn of(
        f: &Facts,
        cases: &[&CaseResult],
        ranked: &Result<Ranked<'_>, NotRanked>,
    ) -> Self {
        let ranks = match ranked {
            Err(n) => Ranks::NotRanked(*n),
            Ok(r) => {
                let b = r.basis;
                match findings::of_rankings(r.rankings().cloned().collect()) {
                    Some(finding) => {
                        let p99 = (f.net && b.metric != Metric::LatencyP99)
                            .then(|| {
                                let pp = points(f, &r.cells, Metric::LatencyP99);
                                findings::of_points(&pp, false)
                            })
                            .flatten();
                        Ranks::Ranked {
                            basis: b,
                            finding,
                            p99,
                        }
                    }
                    None => Ranks::Alone {
                        basis: b,
                        only: only(r.bare_points().next()),
                    },
                }
            }
        };
        WorkloadFinding {
            ranks,
            probed: probed(cases),
            families: ranked
                .as_ref()
                .map_or_else(|_| Vec::new(), |r| families(f, r)),
            contenders: ranked
                .as_ref()
                .map_or_else(|_| Vec::new(), |r| contenders(f, r)),
            peers: ranked.as_ref().map_or_else(|_| Vec::new(), peers),
        }
    }

    /// The model that led the most of the ranked points (the first of equals: standings put
    /// the never-behind first).
    pub fn leader(&self) -> Leader {
        let f = match &self.ranks {
            Ranks::NotRanked(_) | Ranks::Alone { only: None, .. } => return Leader::NotRanked,
            Ranks::Alone { only: Some(o), .. } => return Leader::Alone(o.label.clone()),
            Ranks::Ranked { finding, .. } => finding,
        };
        let top = f
            .standings
            .iter()
            .filter(|s| s.led > 0)
            .fold(None::<&Standing>, |best, s| match best {
                Some(b) if b.led >= s.led => Some(b),
                _ => Some(s),
            });
        match top {
            None => Leader::NoneDecided,
            Some(s) => Leader::Led {
                label: s.label.clone(),
                led: s.led,
                points: f.points,
            },
        }
    }
}

fn only(first: Option<&Point>) -> Option<Only> {
    let p = first?;
    let e = p.entries.first()?;
    Some(Only {
        label: e.label.clone(),
        at: p.at.clone(),
        value: e.value,
        ci: crate::stats::bootstrap::median_ci(&e.reps),
    })
}

/// The most any model achieved at each probed capacity point (the load generator's limit
/// there), lowest and highest over the points; `None` where no point was a probe.
fn probed(cases: &[&CaseResult]) -> Option<(f64, f64)> {
    let key = |c: &CaseResult| format!("{} {:?}", c.workload, c.params);
    let mut tops: Vec<(String, f64)> = Vec::new();
    for c in cases.iter().filter(|c| c.capacity_probe) {
        let Some((_, f)) = measured(c) else { continue };
        let r = f.ops_per_sec.median;
        if !(r.is_finite() && r > 0.0) {
            continue;
        }
        match tops.iter_mut().find(|t| t.0 == key(c)) {
            Some(t) => t.1 = t.1.max(r),
            None => tops.push((key(c), r)),
        }
    }
    let lo = tops.iter().map(|t| t.1).reduce(f64::min)?;
    let hi = tops.iter().map(|t| t.1).reduce(f64::max)?;
    Some((lo, hi))
}

/// The model's family, where it is one of the registry's (a contender's is none).
fn family_of(label: &str) -> Option<Family> {
    crate::registry::model(label).map(|m| m.family)
}

/// The family's best row at a point: its lowest server CPU per op.
fn best_of(p: &Point, f: Family) -> Option<String> {
    p.entries
        .iter()
        .filter(|e| family_of(&e.label) == Some(f))
        .min_by(|x, y| x.value.total_cmp(&y.value))
        .map(|e| e.label.clone())
}

/// Where point `p` is, in words ("50 connections": its cells' value of the workload's sweep
/// parameter with the axis's words; `p.at` where the workload has none), and the rate its
/// cells were offered (their median), per second.
fn place_of(f: &Facts, r: &Ranked<'_>, p: &Point) -> (String, Option<f64>) {
    let cases: Vec<&CaseResult> = r.cells.iter().map(|c| c.0).collect();
    let roles = super::cells::ParamRoles::of_cases(&cases);
    let here: Vec<&&CaseResult> = cases
        .iter()
        .filter(|c| roles.point(c, None) == p.at)
        .collect();
    let mut rates: Vec<f64> = here.iter().filter_map(|c| c.offered_rate()).collect();
    rates.sort_by(f64::total_cmp);
    let offered = (!rates.is_empty()).then(|| rates[rates.len() / 2]);
    let swept = f.chart.sweep.and_then(|s| {
        let c = here.first()?;
        let (k, v) = s
            .params
            .iter()
            .find_map(|k| c.params.0.get(*k).map(|v| (*k, v)))?;
        let kv = format!("{k}={v}");
        let words = if f.rate_sweep && offered.is_some() {
            // The rate swept is the rate offered, said beside the place.
            String::new()
        } else if s.axis.contains(',') {
            kv.clone()
        } else {
            format!("{v} {}", s.axis)
        };
        Some((kv, words))
    });
    (at_words(&p.at, swept), offered)
}

/// A point's text with its swept `k=v` said in the axis's words, first, and its other
/// parameters after it: "50 connections, msg_bytes=64" (the swept one never twice; words ""
/// leave it out).
fn at_words(at: &str, swept: Option<(String, String)>) -> String {
    let Some((kv, words)) = swept else {
        return at.to_string();
    };
    let rest: Vec<&str> = at
        .split(' ')
        .filter(|w| !w.is_empty() && *w != kv)
        .collect();
    if words.is_empty() {
        rest.join(" ")
    } else if rest.is_empty() {
        words
    } else {
        format!("{words}, {}", rest.join(" "))
    }
}

/// Each family's best row at each equal-load point (lowest server CPU per op there),
/// io_uring's against epoll's, where the workload is ranked by CPU per op.
fn families(f: &Facts, r: &Ranked<'_>) -> Vec<FamilyPair> {
    if r.basis.metric != Metric::CpuPerOp {
        return Vec::new();
    }
    r.bare_points()
        .filter_map(|p| {
            let (u, e) = (best_of(p, Family::Uring)?, best_of(p, Family::Epoll)?);
            let confidence = findings::pair_at(p, &e, &u, false)?;
            let (place, offered) = place_of(f, r, p);
            Some(FamilyPair {
                at: p.at.clone(),
                place,
                offered,
                uring: u,
                epoll: e,
                confidence,
            })
        })
        .collect()
}

/// The family a built-in runtime of the registry drives (`None`: not one).
fn driven_by(label: &str) -> Option<Family> {
    match crate::registry::model(label)?.knobs {
        crate::model::Knobs::Peer(k) => k.drives(),
        _ => None,
    }
}

/// Each built-in runtime against the best row of the family it drives at each equal-load
/// point, where the workload is ranked by CPU per op.
fn peers(r: &Ranked<'_>) -> Vec<PeerPair> {
    if r.basis.metric != Metric::CpuPerOp {
        return Vec::new();
    }
    let mut out = Vec::new();
    for p in r.bare_points() {
        for e in &p.entries {
            let Some(family) = driven_by(&e.label) else {
                continue;
            };
            let Some(best) = best_of(p, family) else {
                continue;
            };
            let Some(confidence) = findings::pair_at(p, &e.label, &best, false) else {
                continue;
            };
            out.push(PeerPair {
                at: p.at.clone(),
                peer: e.label.clone(),
                family,
                best,
                confidence,
            });
        }
    }
    out
}

/// Each contender (a model outside the registry: `ext:NAME`) against each family's best row
/// at each equal-load point, where the workload is ranked by CPU per op.
fn contenders(f: &Facts, r: &Ranked<'_>) -> Vec<ContenderPair> {
    if r.basis.metric != Metric::CpuPerOp {
        return Vec::new();
    }
    let mut out = Vec::new();
    for p in r.bare_points() {
        let (place, offered) = place_of(f, r, p);
        let ext: Vec<&str> = p
            .entries
            .iter()
            .filter(|e| family_of(&e.label).is_none())
            .map(|e| e.label.as_str())
            .collect();
        // The user's first `ext:` server (not a file's model this build does not know): each
        // later one is paired with it, the A/B of two builds.
        let first = ext
            .iter()
            .copied()
            .find(|l| l.starts_with(crate::plan::CONTENDER_PREFIX));
        for &c in &ext {
            for f in Family::ALL {
                let Some(best) = best_of(p, f) else { continue };
                if let Some(confidence) = findings::pair_at(p, &best, c, false) {
                    out.push(ContenderPair {
                        at: p.at.clone(),
                        place: place.clone(),
                        offered,
                        contender: c.to_string(),
                        family: Some(f),
                        against: best,
                        confidence,
                    });
                }
            }
            let Some(first) =
                first.filter(|f| *f != c && c.starts_with(crate::plan::CONTENDER_PREFIX))
            else {
                continue;
            };
            if let Some(confidence) = findings::pair_at(p, first, c, false) {
                out.push(ContenderPair {
                    at: p.at.clone(),
                    place: place.clone(),
                    offered,
                    contender: c.to_string(),
                    family: None,
                    against: first.to_string(),
                    confidence,
                });
            }
        }
    }
    out
}

/// Pairs of models at each point of a workload, on the figure its finding ranks by.
#[derive(Clone, Debug, PartialEq)]
pub struct Pairs {
    pub basis: Basis,
    /// Per point: where, its first pairs, and how many pairs it has.
    pub points: Vec<(String, Vec<Pair>, usize)>,
}

/// The first `max` pairs of models at each point of a workload's cells (`None` where the
/// workload is not ranked), its points not ranked (a point of thousands of models lists only
/// its first pairs).
pub(crate) fn pairs_of(f: &Facts, cases: &[&CaseResult], max: usize) -> Option<Pairs> {
    let (b, cells) = super::basis::basis(f, cases).ok()?;
    Some(pairs_at(b, points(f, &cells, b.metric).iter(), max))
}

/// The first `max` pairs of models at each point of a workload ranked (`None` where the
/// workload is not ranked).
pub(crate) fn pairs(ranked: &Result<Ranked<'_>, NotRanked>, max: usize) -> Option<Pairs> {
    let r = ranked.as_ref().ok()?;
    Some(pairs_at(r.basis, r.bare_points(), max))
}

/// The first `max` pairs of models at each of `pts`, on `b`.
fn pairs_at<'p>(b: Basis, pts: impl Iterator<Item = &'p Point>, max: usize) -> Pairs {
    let hib = higher_is_better(b.metric);
    let points = pts
        .map(|p| {
            let (v, total) = findings::pairs(p, hib, max);
            (p.at.clone(), v, total)
        })
        .filter(|(_, v, _)| !v.is_empty())
        .collect();
    Pairs { basis: b, points }
}

#[cfg(test)]
mod tests {
    use super::at_words;
    use crate::model::Family;

    /// tokio and monoio ran in the default run: at each equal-load point each is paired with
    /// the best row of the family it drives, a paired claim over the point's rounds.
    #[test]
    fn each_runtime_is_paired_with_its_familys_best_row() {
        let r = crate::results::store::parse(include_str!("../../tests/fixtures/default-run.json"))
            .unwrap();
        let a = crate::analysis::Analysis::of(&r);
        let w = a.workload("echo.conns").expect("echo.conns ran");
        let peers = &w.finding.peers;
        let families = &w.finding.families;
        assert!(!families.is_empty(), "the fixture has equal-load points");
        for f in families {
            let at: Vec<_> = peers.iter().filter(|p| p.at == f.at).collect();
            let want = [
                ("tokio", Family::Epoll, &f.epoll),
                ("monoio", Family::Uring, &f.uring),
            ];
            assert_eq!(at.len(), want.len(), "{:?} at {}", at, f.at);
            for (peer, family, best) in want {
                let p = at.iter().find(|p| p.peer == peer).expect(peer);
                assert_eq!((p.family, &p.best), (family, best), "{peer} at {}", f.at);
                let c = p.confidence.claim.as_ref().expect("a claim");
                assert!(c.paired && c.p_adj.is_some(), "{c:?}");
            }
        }
        let line = crate::export::words::finding::line(&w.id, &w.facts, &w.finding);
        for said in [
            "against the runtime on it",
            &format!("monoio on io_uring: {} used ", families[0].uring),
            &format!("tokio on epoll: {} used ", families[0].epoll),
        ] {
            assert!(line.text.contains(said), "{said:?} in {}", line.text);
        }
    }

    #[test]
    fn a_swept_parameter_is_said_once_in_words() {
        let swept = || Some(("conns=50".to_string(), "50 connections".to_string()));
        assert_eq!(at_words("conns=50", swept()), "50 connections");
        assert_eq!(
            at_words("conns=50 msg_bytes=64", swept()),
            "50 connections, msg_bytes=64"
        );
        assert_eq!(at_words("conns=500", swept()), "50 connections, conns=500");
        assert_eq!(at_words("depth=1", None), "depth=1");
        let rate = || Some(("rate_per_sec=10000".to_string(), String::new()));
        assert_eq!(at_words("rate_per_sec=10000", rate()), "");
        assert_eq!(at_words("conns=50 rate_per_sec=10000", rate()), "conns=50");
    }
}
