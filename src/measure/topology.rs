//! The machine's CPU topology (online CPUs, SMT siblings, NUMA nodes, this process's allowed
//! mask) and the CPU plan made from it: a pure function of a [`Topology`] and the user's
//! request, so that it is tested on synthetic machines of any size.
//!
//! Default plan: the server gets one physical core — one CPU of it (per-core figures are the
//! comparable unit) — away from CPU 0 where there is a choice (it takes most interrupts); the
//! core's SMT siblings stay idle (never given to the load: they share the core's execution
//! units); the load generator gets every other allowed CPU of the server's NUMA node, one
//! thread each. With nothing left for the load (one CPU, or one core's siblings only), the
//! plan is shared (`shared_cpus`). SQPOLL pollers go to an idle SMT sibling of the server's
//! core when there is one, else to the highest load CPU (the helper) (shared with the load generator, as on
//! a 2-CPU machine there is no third).

use super::pin::CpuPlan;
use serde::{Deserialize, Serialize};
use std::fmt;

/// What the planner knows of the machine.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Topology {
    /// Online CPUs.
    pub(crate) online: Vec<u32>,
    /// CPUs this process may run on (`sched_getaffinity`).
    pub(crate) allowed: Vec<u32>,
    /// Physical cores: each a list of SMT sibling CPUs (one CPU per core without SMT).
    pub(crate) cores: Vec<Vec<u32>>,
    /// NUMA nodes: the CPUs of each (one node when the machine shows none).
    pub(crate) nodes: Vec<Vec<u32>>,
}

/// The CPU sets a user asked for (`--server-cpus`, `--load-cpus`, `--allow-shared`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Request {
    pub(crate) server: Option<Vec<u32>>,
    pub(crate) load: Option<Vec<u32>>,
    pub(crate) allow_shared: bool,
}

/// Why a requested plan is refused (bad input: exit 2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PlanError {
    /// A CPU outside the allowed mask.
    NotAllowed {
        flag: &'static str,
        cpu: u32,
        allowed: String,
    },
    /// Server and load share CPUs without `--allow-shared`.
    Overlap { cpus: String },
    /// An empty list.
    Empty { flag: &'static str },
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlanError::NotAllowed { flag, cpu, allowed } => write!(
                f,
                "{flag}: CPU {cpu} is not one this process may use; allowed: {allowed}"
            ),
            PlanError::Overlap { cpus } => write!(
                f,
                "--server-cpus and --load-cpus share CPU(s) {cpus}; give disjoint sets, or \
                 --allow-shared to measure them sharing (cells are marked shared_cpus)"
            ),
            PlanError::Empty { flag } => write!(f, "{flag}: the list is empty"),
        }
    }
}

impl std::error::Error for PlanError {}

/// "0-3,8" for a list of CPUs.
pub(crate) fn list_string(cpus: &[u32]) -> String {
    let mut v = cpus.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        out.push(if j > i {
            format!("{}-{}", v[i], v[j])
        } else {
            v[i].to_string()
        });
        i = j + 1;
    }
    out.join(",")
}

/// Parses a kernel CPU list ("0-3,8,10-11").
pub(crate) fn parse_list(s: &str) -> Option<Vec<u32>> {
    let mut v = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.trim().is_empty()) {
        let (lo, hi): (u32, u32) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse().ok()?, b.trim().parse().ok()?),
            None => {
                let c = part.trim().parse().ok()?;
                (c, c)
            }
        };
        if hi < lo || hi - lo > 1 << 16 {
            return None;
        }
        v.extend(lo..=hi);
    }
    Some(v)
}

impl Topology {
    /// This machine, from /sys and sched_getaffinity. A file that cannot be read counts as
    /// "no SMT" or "one node".
    pub(crate) fn read() -> Topology {
        let sys = |p: &str| std::fs::read_to_string(p).ok();
        let allowed = super::pin::allowed_cpus();
        let online = sys("/sys/devices/system/cpu/online")
            .and_then(|s| parse_list(&s))
            .unwrap_or_else(|| allowed.clone());
        let mut cores: Vec<Vec<u32>> = Vec::new();
        for &c in &online {
            if cores.iter().any(|k| k.contains(&c)) {
                continue;
            }
            let sib = sys(&format!(
                "/sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list"
            ))
            .and_then(|s| parse_list(&s))
            .filter(|v| v.contains(&c))
            .unwrap_or_else(|| vec![c]);
            cores.push(sib.into_iter().filter(|s| online.contains(s)).collect());
        }
        let mut nodes: Vec<Vec<u32>> = Vec::new();
        if let Ok(dir) = std::fs::read_dir("/sys/devices/system/node") {
            let mut ids: Vec<u32> = dir
                .flatten()
                .filter_map(|e| {
                    e.file_name()
                        .to_str()?
                        .strip_prefix("node")?
                        .parse::<u32>()
                        .ok()
                })
                .collect();
            ids.sort_unstable();
            for n in ids {
                if let Some(v) = sys(&format!("/sys/devices/system/node/node{n}/cpulist"))
                    .and_then(|s| parse_list(&s))
                    .filter(|v| !v.is_empty())
                {
                    nodes.push(v);
                }
            }
        }
        if nodes.is_empty() {
            nodes.push(online.clone());
        }
        Topology {
            online,
            allowed,
            cores,
            nodes,
        }
    }

    /// Whether any core has more than one online CPU.
    pub(crate) fn smt(&self) -> bool {
        self.cores.iter().any(|c| c.len() > 1)
    }

    fn core_of(&self, cpu: u32) -> Vec<u32> {
        self.cores
            .iter()
            .find(|c| c.contains(&cpu))
            .cloned()
            .unwrap_or_else(|| vec![cpu])
    }

    fn node_of(&self, cpu: u32) -> Vec<u32> {
        self.nodes
            .iter()
            .find(|n| n.contains(&cpu))
            .cloned()
            .unwrap_or_else(|| self.online.clone())
    }
}

/// The plan for `t` and the user's request; see the module doc for the default.
pub(crate) fn plan(t: &Topology, req: &Request) -> Result<CpuPlan, PlanError> {
    let allowed: Vec<u32> = t
        .allowed
        .iter()
        .copied()
        .filter(|c| t.online.is_empty() || t.online.contains(c))
        .collect();
    let check = |flag: &'static str, v: &[u32]| -> Result<(), PlanError> {
        if v.is_empty() {
            return Err(PlanError::Empty { flag });
        }
        match v.iter().find(|c| !allowed.contains(c)) {
            Some(&cpu) => Err(PlanError::NotAllowed {
                flag,
                cpu,
                allowed: list_string(&allowed),
            }),
            None => Ok(()),
        }
    };
    if let Some(s) = &req.server {
        check("--server-cpus", s)?;
    }
    if let Some(l) = &req.load {
        check("--load-cpus", l)?;
    }
    // The server: as asked, else one CPU of the last core that has an allowed CPU, away from
    // CPU 0 when there is a choice.
    let server = match &req.server {
        Some(s) => s.clone(),
        None => {
            let pick = t
                .cores
                .iter()
                .rev()
                .filter_map(|core| core.iter().copied().find(|c| allowed.contains(c)))
                .find(|&c| c != 0 || allowed.len() == 1)
                .or_else(|| allowed.last().copied())
                .unwrap_or(0);
            vec![pick]
        }
    };
    let server_core: Vec<u32> = server.iter().flat_map(|&c| t.core_of(c)).collect();
    let siblings: Vec<u32> = server_core
        .iter()
        .copied()
        .filter(|c| !server.contains(c) && allowed.contains(c))
        .collect();
    let (load, shared) = match &req.load {
        Some(l) => {
            let overlap: Vec<u32> = l.iter().copied().filter(|c| server.contains(c)).collect();
            if !overlap.is_empty() && !req.allow_shared {
                return Err(PlanError::Overlap {
                    cpus: list_string(&overlap),
                });
            }
            (l.clone(), !overlap.is_empty())
        }
        None => {
            let node = t.node_of(server[0]);
            let rest: Vec<u32> = allowed
                .iter()
                .copied()
                .filter(|c| node.contains(c) && !server_core.contains(c))
                .collect();
            if rest.is_empty() {
                (server.clone(), true)
            } else {
                (rest, false)
            }
        }
    };
    // SMT siblings of the server's core that neither side uses stay idle; a SQPOLL poller
    // takes the first of them, else the first load CPU.
    let idle: Vec<u32> = siblings
        .iter()
        .copied()
        .filter(|c| !load.contains(c))
        .collect();
    // The helper (micro and storage workloads' other side, and the SQPOLL fallback) is the
    // highest load CPU: on a machine without SMT or NUMA that keeps the last two CPUs as the
    // measured/helper pair, and keeps it off CPU 0, which takes most interrupts.
    let sqpoll = idle.first().or(load.last()).copied();
    Ok(CpuPlan {
        measured: server[0],
        helper: if shared { None } else { load.last().copied() },
        server,
        load,
        sqpoll,
        idle,
        shared_requested: shared && req.allow_shared,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flat(n: u32) -> Topology {
        let all: Vec<u32> = (0..n).collect();
        Topology {
            online: all.clone(),
            allowed: all.clone(),
            cores: all.iter().map(|&c| vec![c]).collect(),
            nodes: vec![all],
        }
    }

    fn default(t: &Topology) -> CpuPlan {
        plan(t, &Request::default()).unwrap()
    }

    #[test]
    fn one_cpu_is_shared() {
        let p = default(&flat(1));
        assert_eq!((p.server.clone(), p.load.clone()), (vec![0], vec![0]));
        assert!(p.shared() && p.helper.is_none());
    }

    #[test]
    fn two_cpus_keep_todays_plan() {
        let p = default(&flat(2));
        assert_eq!((p.measured, p.helper), (1, Some(0)));
        assert_eq!((p.server.clone(), p.load.clone()), (vec![1], vec![0]));
        assert_eq!(p.sqpoll, Some(0));
        assert!(!p.shared() && p.idle.is_empty());
    }

    #[test]
    fn four_and_sixteen_cpus_give_the_load_every_other_cpu() {
        let p = default(&flat(4));
        assert_eq!((p.server.clone(), p.load.clone()), (vec![3], vec![0, 1, 2]));
        // The micro and storage suites' pair stays the last two CPUs, as before the plan.
        assert_eq!((p.measured, p.helper, p.sqpoll), (3, Some(2), Some(2)));
        let p = default(&flat(16));
        assert_eq!(p.server, vec![15]);
        assert_eq!(p.load, (0..15).collect::<Vec<_>>());
    }

    #[test]
    fn smt_siblings_of_the_server_core_stay_idle_and_take_the_poller() {
        // 4 cores x 2 threads: core k = {k, k+4} (Linux's usual numbering).
        let t = Topology {
            online: (0..8).collect(),
            allowed: (0..8).collect(),
            cores: (0..4).map(|k| vec![k, k + 4]).collect(),
            nodes: vec![(0..8).collect()],
        };
        let p = default(&t);
        assert_eq!(p.server, vec![3]);
        assert_eq!(p.idle, vec![7]);
        assert_eq!(p.load, vec![0, 1, 2, 4, 5, 6]);
        assert_eq!(p.sqpoll, Some(7));
        // One core with two threads: nothing left for the load but the server's sibling,
        // which it never gets: shared.
        let one = Topology {
            online: vec![0, 1],
            allowed: vec![0, 1],
            cores: vec![vec![0, 1]],
            nodes: vec![vec![0, 1]],
        };
        let p = default(&one);
        assert!(p.shared(), "{p:?}");
        assert_eq!(p.idle, vec![0]);
    }

    #[test]
    fn the_load_stays_on_the_servers_numa_node() {
        let t = Topology {
            online: (0..8).collect(),
            allowed: (0..8).collect(),
            cores: (0..8).map(|c| vec![c]).collect(),
            nodes: vec![(0..4).collect(), (4..8).collect()],
        };
        let p = default(&t);
        assert_eq!(p.server, vec![7]);
        assert_eq!(p.load, vec![4, 5, 6]);
    }

    #[test]
    fn a_restricted_mask_is_respected() {
        let mut t = flat(16);
        t.allowed = vec![2, 3, 9];
        let p = default(&t);
        assert_eq!((p.server.clone(), p.load.clone()), (vec![9], vec![2, 3]));
        let e = plan(
            &t,
            &Request {
                server: Some(vec![4]),
                ..Default::default()
            },
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "--server-cpus: CPU 4 is not one this process may use; allowed: 2-3,9"
        );
    }

    #[test]
    fn requests_are_checked_and_overlap_needs_allow_shared() {
        let t = flat(4);
        let req = |s: Vec<u32>, l: Vec<u32>, allow: bool| Request {
            server: Some(s),
            load: Some(l),
            allow_shared: allow,
        };
        let p = plan(&t, &req(vec![1], vec![0, 2], false)).unwrap();
        assert_eq!((p.server, p.load, p.helper), (vec![1], vec![0, 2], Some(2)));
        let e = plan(&t, &req(vec![1], vec![1, 2], false)).unwrap_err();
        assert_eq!(e, PlanError::Overlap { cpus: "1".into() });
        let p = plan(&t, &req(vec![1], vec![1, 2], true)).unwrap();
        assert!(p.shared() && p.shared_requested);
        assert!(matches!(
            plan(&t, &req(vec![], vec![0], false)),
            Err(PlanError::Empty { .. })
        ));
        // Several server CPUs: one server thread each; the measured CPU is the first.
        let p = plan(&t, &req(vec![2, 3], vec![0, 1], false)).unwrap();
        assert_eq!(
            (p.measured, p.server.clone(), p.load.clone()),
            (2, vec![2, 3], vec![0, 1])
        );
        assert!(matches!(
            plan(&t, &req(vec![1], vec![7], false)),
            Err(PlanError::NotAllowed {
                flag: "--load-cpus",
                cpu: 7,
                ..
            })
        ));
    }

    #[test]
    fn kernel_cpu_lists_round_trip() {
        assert_eq!(
            parse_list("0-3,8,10-11\n"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(list_string(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(parse_list("3-1"), None);
        assert_eq!(parse_list("x"), None);
        let t = Topology::read();
        assert!(!t.online.is_empty() && !t.allowed.is_empty() && !t.nodes.is_empty());
        assert!(t.cores.iter().flatten().count() >= t.online.len());
    }
}
