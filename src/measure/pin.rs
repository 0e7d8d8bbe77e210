//! CPU pinning and the CPU plan recorded with every result.

use serde::{Deserialize, Serialize};
use std::io;

/// Which CPUs the measured thread (or server) and its helpers (load generator, SQPOLL poller)
/// run on. Recorded in the results (`plan`; another host's in its `hosts` record); made over
/// the machine's topology by [`super::topology::plan`].
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct CpuPlan {
    /// The measured thread, or the server under test (`server[0]`).
    pub measured: u32,
    /// The other side: the highest load CPU (also the SQPOLL poller's when no SMT sibling is idle). `None` on a shared plan.
    pub(crate) helper: Option<u32>,
    /// The server's CPUs (results written before these fields: empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server: Vec<u32>,
    /// The load generator's CPUs, one thread each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) load: Vec<u32>,
    /// Where SQPOLL pollers go.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) sqpoll: Option<u32>,
    /// CPUs left idle on purpose: SMT siblings of the server's core.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) idle: Vec<u32>,
    /// Server and load share CPUs because the user said `--allow-shared`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) shared_requested: bool,
}

impl CpuPlan {
    /// One measured CPU and an optional helper (micro workloads, tests).
    pub fn pair(measured: u32, helper: Option<u32>) -> CpuPlan {
        let shared = helper.is_none_or(|h| h == measured);
        CpuPlan {
            measured,
            helper: helper.filter(|_| !shared),
            server: vec![measured],
            load: vec![if shared {
                measured
            } else {
                helper.unwrap_or(measured)
            }],
            sqpoll: helper.or(Some(measured)),
            idle: Vec::new(),
            shared_requested: false,
        }
    }

    /// From a `--cpus` list: first = measured, second = helper.
    pub(crate) fn from_list(cpus: &[u32]) -> CpuPlan {
        CpuPlan::pair(cpus.first().copied().unwrap_or(0), cpus.get(1).copied())
    }

    /// Default: the last two online CPUs, measured on the higher one (CPU 0 takes most
    /// interrupts).
    pub fn default_for(online: &[u32]) -> CpuPlan {
        match online {
            [] => CpuPlan::pair(0, None),
            [only] => CpuPlan::pair(*only, None),
            [.., a, b] => CpuPlan::pair(*b, Some(*a)),
        }
    }

    /// Where a SQPOLL poller goes: the plan's SQPOLL CPU when it is not the measured one.
    pub(crate) fn sqpoll_cpu(&self) -> Option<u32> {
        self.sqpoll
            .or(self.helper)
            .filter(|&c| c != self.measured && !self.shared())
    }

    /// The load generator's CPUs (results written before `load` was recorded: the helper,
    /// else the measured CPU).
    pub(crate) fn load_cpus(&self) -> Vec<u32> {
        if !self.load.is_empty() {
            return self.load.clone();
        }
        vec![self.helper.unwrap_or(self.measured)]
    }

    /// True when the helper has no CPU of its own.
    pub fn shared(&self) -> bool {
        self.helper.is_none_or(|h| h == self.measured)
    }

    /// The server's CPUs (results written before `server` was recorded: the measured one).
    pub(crate) fn server_cpus(&self) -> Vec<u32> {
        if self.server.is_empty() {
            vec![self.measured]
        } else {
            self.server.clone()
        }
    }

    /// The server thread counts a cores sweep (`echo.cores`, `http.cores`) measures under this
    /// plan: 1, 2, 4, ... up to the server's CPU set when it has several CPUs
    /// (`--server-cpus`); under a one-CPU server (the default plan) up to half of the
    /// server's and the load's CPUs together, the extra server threads taking load CPUs
    /// ([`CpuPlan::with_server_threads`]), so the load keeps at least as many CPUs as the
    /// server. The largest count is always included (6 CPUs: 1, 2, 3). Where that leaves one
    /// thread but the machine has two CPUs or more, 2 is added, the server sharing the load's
    /// CPUs (`shared_cpus`): on a 2-CPU machine, 1 and 2.
    pub(crate) fn server_thread_sweep(&self) -> Vec<u32> {
        let server = self.server_cpus();
        let others = self
            .load_cpus()
            .iter()
            .filter(|c| !server.contains(c))
            .count();
        let max = if server.len() > 1 {
            server.len()
        } else {
            (server.len() + others) / 2
        }
        .max(1) as u32;
        let mut v: Vec<u32> = std::iter::successors(Some(1u32), |t| t.checked_mul(2))
            .take_while(|&t| t <= max)
            .collect();
        if v.last() != Some(&max) {
            v.push(max);
        }
        if v == [1] && server.len() + others >= 2 {
            v.push(2);
        }
        v
    }

    /// This plan with `threads` server CPUs, one per server thread: the first `threads` of the
    /// server's CPUs; beyond them, the lowest load CPUs, as long as the load keeps one (the
    /// highest, the helper, stays the load's); beyond that, the server takes every CPU and the
    /// load keeps its own, the two sharing them (`shared_requested`: cells are `shared_cpus`).
    pub(crate) fn with_server_threads(&self, threads: u32) -> CpuPlan {
        let t = threads.max(1) as usize;
        let own = self.server_cpus();
        let load = self.load_cpus();
        let mut spare: Vec<u32> = load.iter().copied().filter(|c| !own.contains(c)).collect();
        spare.sort_unstable();
        let (server, load, shared) = if t <= own.len() {
            (own[..t].to_vec(), load, false)
        } else if t - own.len() < spare.len() {
            let take = t - own.len();
            let server: Vec<u32> = own.iter().chain(&spare[..take]).copied().collect();
            let rest: Vec<u32> = load.into_iter().filter(|c| !server.contains(c)).collect();
            (server, rest, false)
        } else {
            let server: Vec<u32> = own.iter().chain(&spare).copied().take(t).collect();
            (server, load, true)
        };
        let helper = load.iter().copied().filter(|c| !server.contains(c)).max();
        CpuPlan {
            measured: server[0],
            helper: if shared { None } else { helper },
            sqpoll: self
                .sqpoll
                .filter(|c| !server.contains(c))
                .or(helper)
                .or(self.sqpoll),
            server,
            load,
            idle: self.idle.clone(),
            shared_requested: self.shared_requested || shared,
        }
    }
}

/// CPUs this process may run on.
pub fn allowed_cpus() -> Vec<u32> {
    crate::child::affinity(0).unwrap_or_else(|_| vec![0])
}

/// Pins the calling thread to one CPU.
pub fn pin_this_thread(cpu: u32) -> io::Result<()> {
    pin_tid(0, cpu)
}

/// Pins a task (0 = the calling thread) to one CPU.
pub(crate) fn pin_tid(tid: i32, cpu: u32) -> io::Result<()> {
    set_affinity(tid, &[cpu])
}

/// Lets the calling thread run on every CPU of `cpus` (a pool's worker, which would inherit
/// the pinned measured thread's single CPU otherwise).
pub(crate) fn allow_this_thread(cpus: &[u32]) -> io::Result<()> {
    set_affinity(0, cpus)
}

fn set_affinity(tid: i32, cpus: &[u32]) -> io::Result<()> {
    let set = crate::child::cpu_set(cpus)?;
    let pid = match tid {
        0 => Ok(None),
        tid => crate::child::pid_of(tid)
            .map(Some)
            .ok_or(rustix::io::Errno::SRCH),
    };
    pid.and_then(|pid| rustix::thread::sched_setaffinity(pid, &set))
        .map_err(|e| {
            let e = io::Error::from(e);
            io::Error::new(e.kind(), format!("pinning to CPU {cpus:?}: {e}"))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pin that cannot be applied is an error naming the CPUs (its callers fail the cell
    /// or the run with it), never a plan recorded as applied: a CPU this machine lacks, one
    /// past CPU_SETSIZE, an empty list.
    #[test]
    fn a_pin_that_cannot_be_applied_says_which_cpus() {
        let e = std::thread::spawn(|| pin_this_thread(1000).unwrap_err())
            .join()
            .unwrap();
        assert!(e.to_string().contains("CPU [1000]"), "{e}");
        let e = pin_this_thread(rustix::thread::CpuSet::MAX_CPU as u32).unwrap_err();
        assert!(e.to_string().contains("beyond CPU_SETSIZE"), "{e}");
        assert!(allow_this_thread(&[]).is_err());
        let here = std::thread::spawn(|| allow_this_thread(&[0]))
            .join()
            .unwrap();
        assert!(here.is_ok(), "{here:?}");
    }

    #[test]
    fn plans() {
        let p = CpuPlan::default_for(&[0, 1]);
        assert_eq!((p.measured, p.helper, p.load_cpus()), (1, Some(0), vec![0]));
        assert!(CpuPlan::default_for(&[3]).shared());
        assert!(!CpuPlan::from_list(&[1, 0]).shared());
        assert!(CpuPlan::from_list(&[1, 1]).shared());
        assert!(!allowed_cpus().is_empty());
    }

    fn plan(server: &[u32], load: &[u32]) -> CpuPlan {
        CpuPlan {
            measured: server[0],
            helper: load.last().copied(),
            server: server.to_vec(),
            load: load.to_vec(),
            sqpoll: load.last().copied(),
            idle: Vec::new(),
            shared_requested: false,
        }
    }

    #[test]
    fn a_cores_sweep_on_two_cpus_is_one_thread_then_two_sharing() {
        let p = CpuPlan::default_for(&[0, 1]);
        assert_eq!(p.server_thread_sweep(), vec![1, 2]);
        let one = p.with_server_threads(1);
        assert_eq!((one.server.clone(), one.load_cpus()), (vec![1], vec![0]));
        assert!(!one.shared());
        let two = p.with_server_threads(2);
        assert_eq!((two.server.clone(), two.load_cpus()), (vec![1, 0], vec![0]));
        assert!(two.shared() && two.shared_requested);
        // One CPU: nothing to sweep.
        assert_eq!(CpuPlan::pair(0, None).server_thread_sweep(), vec![1]);
    }

    #[test]
    fn a_cores_sweep_borrows_load_cpus_and_leaves_the_load_as_many() {
        // 16 CPUs, the default plan: server 15, load 0..=14.
        let load: Vec<u32> = (0..15).collect();
        let p = plan(&[15], &load);
        assert_eq!(p.server_thread_sweep(), vec![1, 2, 4, 8]);
        let eight = p.with_server_threads(8);
        assert_eq!(eight.server, vec![15, 0, 1, 2, 3, 4, 5, 6]);
        assert_eq!(eight.load_cpus(), (7..15).collect::<Vec<u32>>());
        assert_eq!(eight.helper, Some(14));
        assert!(!eight.shared() && !eight.shared_requested);
        // 6 CPUs: the largest count is included.
        assert_eq!(
            plan(&[5], &[0, 1, 2, 3, 4]).server_thread_sweep(),
            vec![1, 2, 3]
        );
        let three = plan(&[5], &[0, 1, 2, 3, 4]).with_server_threads(3);
        assert_eq!(
            (three.server.clone(), three.load_cpus()),
            (vec![5, 0, 1], vec![2, 3, 4])
        );
        assert_eq!(plan(&[4], &[0, 1, 2, 3]).server_thread_sweep(), vec![1, 2]);
        // A server set of its own (--server-cpus 8-13): up to it, the load untouched.
        let p = plan(&[8, 9, 10, 11, 12, 13], &[0, 1, 2, 3]);
        assert_eq!(p.server_thread_sweep(), vec![1, 2, 4, 6]);
        let four = p.with_server_threads(4);
        assert_eq!(
            (four.server.clone(), four.load_cpus()),
            (vec![8, 9, 10, 11], vec![0, 1, 2, 3])
        );
    }
}
