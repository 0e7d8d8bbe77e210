//! CPU pinning and the CPU plan recorded with every result.

use serde::{Deserialize, Serialize};
use std::io;

/// Which CPUs the measured thread (or server) and its helpers (load generator, SQPOLL poller)
/// run on. Recorded in the results.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct CpuPlan {
    /// The measured thread, or the server under test.
    pub measured: u32,
    /// The other side: the load generator, or the SQPOLL poller. `None` on a 1-CPU plan.
    pub helper: Option<u32>,
}

impl CpuPlan {
    /// From a `--cpus` list: first = measured, second = helper. Default: the last two online
    /// CPUs, measured on the higher one (CPU 0 takes most interrupts).
    pub fn from_list(cpus: &[u32]) -> CpuPlan {
        CpuPlan {
            measured: cpus.first().copied().unwrap_or(0),
            helper: cpus.get(1).copied(),
        }
    }

    pub fn default_for(online: &[u32]) -> CpuPlan {
        match online {
            [] => CpuPlan {
                measured: 0,
                helper: None,
            },
            [only] => CpuPlan {
                measured: *only,
                helper: None,
            },
            [.., a, b] => CpuPlan {
                measured: *b,
                helper: Some(*a),
            },
        }
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
        assert_eq!(
            CpuPlan::default_for(&[0, 1]),
            CpuPlan {
                measured: 1,
                helper: Some(0)
            }
        );
        assert!(CpuPlan::default_for(&[3]).shared());
        assert!(!CpuPlan::from_list(&[1, 0]).shared());
        assert!(CpuPlan::from_list(&[1, 1]).shared());
        assert!(!allowed_cpus().is_empty());
    }
}
