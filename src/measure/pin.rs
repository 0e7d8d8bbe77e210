//! CPU pinning and the CPU plan recorded with every result.

use serde::{Deserialize, Serialize};
use std::io;

/// Which CPUs the measured thread (or server) and its helpers (load generator, SQPOLL poller)
/// run on. Recorded in the results (`plan`, and `env.cpu_plan`); made over the machine's
/// topology by [`super::topology::plan`].
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct CpuPlan {
    /// The measured thread, or the server under test (`server[0]`).
    pub measured: u32,
    /// The other side: the highest load CPU (also the SQPOLL poller's when no SMT sibling is idle). `None` on a shared plan.
    pub helper: Option<u32>,
    /// The server's CPUs (results written before these fields: empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server: Vec<u32>,
    /// The load generator's CPUs, one thread each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub load: Vec<u32>,
    /// Where SQPOLL pollers go.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sqpoll: Option<u32>,
    /// CPUs left idle on purpose: SMT siblings of the server's core.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub idle: Vec<u32>,
    /// Server and load share CPUs because the user said `--allow-shared`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shared_requested: bool,
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
    pub fn from_list(cpus: &[u32]) -> CpuPlan {
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
    pub fn sqpoll_cpu(&self) -> Option<u32> {
        self.sqpoll
            .or(self.helper)
            .filter(|&c| c != self.measured && !self.shared())
    }

    /// The load generator's CPUs (results written before `load` was recorded: the helper,
    /// else the measured CPU).
    pub fn load_cpus(&self) -> Vec<u32> {
        if !self.load.is_empty() {
            return self.load.clone();
        }
        vec![self.helper.unwrap_or(self.measured)]
    }

    /// True when the helper has no CPU of its own.
    pub fn shared(&self) -> bool {
        self.helper.is_none_or(|h| h == self.measured)
    }
}

/// CPUs this process may run on.
pub fn allowed_cpus() -> Vec<u32> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer and size.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r != 0 {
        return vec![0];
    }
    // SAFETY: CPU_ISSET reads the set we own.
    (0..libc::CPU_SETSIZE as u32)
        .filter(|&c| unsafe { libc::CPU_ISSET(c as usize, &set) })
        .collect()
}

/// Pins the calling thread to one CPU.
pub fn pin_this_thread(cpu: u32) -> io::Result<()> {
    pin_tid(0, cpu)
}

/// Pins a task (0 = the calling thread) to one CPU.
pub fn pin_tid(tid: i32, cpu: u32) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: cpu is checked against CPU_SETSIZE first.
    if cpu as usize >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("CPU {cpu} out of range"),
        ));
    }
    unsafe { libc::CPU_SET(cpu as usize, &mut set) };
    // SAFETY: valid set and size.
    let r = unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans() {
        let p = CpuPlan::default_for(&[0, 1]);
        assert_eq!((p.measured, p.helper, p.load_cpus()), (1, Some(0), vec![0]));
        assert!(CpuPlan::default_for(&[3]).shared());
        assert!(!CpuPlan::from_list(&[1, 0]).shared());
        assert!(CpuPlan::from_list(&[1, 1]).shared());
        assert!(!allowed_cpus().is_empty());
    }
}
