//! What connections cost in memory (`conn.idle`), from the kernel's own accounting: the
//! server's resident set (`/proc/PID/status` VmRSS, summed over its processes), a memory
//! cgroup of the server's own (cgroup v1: `memory.kmem.usage_in_bytes`, the kernel memory
//! charged to it, slab included, and `memory.kmem.tcp.usage_in_bytes`, its sockets' buffers),
//! and two machine-wide counters that cover both ends of a loopback connection and every other
//! process: the socket slab caches of `/proc/slabinfo` (`TCP` and `sock_inode_cache`) and
//! `/proc/net/sockstat`'s TCP buffer pages. Each reading is a value or the reason it could not
//! be taken ([`Measured`]); nothing is guessed.
//!
//! The cgroup ([`MemCgroup`]) is made under ringside's own memory cgroup, named for this
//! process, and removed when dropped (after the server exited; a cgroup whose last task is
//! gone can be removed, its leftover charges go to its parent). Writing its
//! `memory.kmem.tcp.limit_in_bytes` (unlimited) turns on cgroup v1's socket accounting, without
//! which accepted sockets are charged to no cgroup; since Linux 6.12 an accepted socket's slab
//! object is charged to the accepting task's cgroup then (`kmem_cache_charge` in
//! `inet_csk_accept`).

use super::Measured;
use std::sync::atomic::{AtomicU32, Ordering};

/// Where the memory cgroup v1 hierarchy is mounted.
const CGROUP_V1_MEMORY: &str = "/sys/fs/cgroup/memory";

/// The slab caches of a TCP socket (IPv4): the socket itself and its inode.
pub(crate) const SOCK_SLABS: &[&str] = &["TCP", "sock_inode_cache"];

/// The readings at one moment. Machine-wide readings cover every process.
#[derive(Clone, Debug)]
pub(crate) struct Snapshot {
    /// The server's processes' VmRSS, bytes.
    pub(crate) rss: Measured<u64>,
    /// The server's cgroup's kernel memory, bytes.
    pub(crate) kmem: Measured<u64>,
    /// The server's cgroup's socket buffers, bytes.
    pub(crate) sock_buf: Measured<u64>,
    /// Machine-wide: the socket slab caches ([`SOCK_SLABS`]), bytes.
    pub(crate) slab: Measured<u64>,
    /// Machine-wide: TCP's socket buffer pages (`/proc/net/sockstat`), bytes.
    pub(crate) sockstat: Measured<u64>,
}

impl Snapshot {
    /// Reads everything now: `pids`' RSS, `cg`'s counters (or why there is no cgroup).
    pub(crate) fn take(pids: &[u32], cg: &Result<MemCgroup, String>) -> Snapshot {
        let (kmem, sock_buf) = match cg {
            Ok(c) => (c.read("memory.kmem.usage_in_bytes"), c.tcp_usage()),
            Err(why) => (
                Measured::unavailable(why.clone()),
                Measured::unavailable(why.clone()),
            ),
        };
        Snapshot {
            rss: measured(rss_bytes(pids)),
            kmem,
            sock_buf,
            slab: measured(slab_bytes(SOCK_SLABS)),
            sockstat: measured(sockstat_tcp_bytes()),
        }
    }
}

fn measured<T>(r: Result<T, String>) -> Measured<T> {
    match r {
        Ok(v) => Measured::Value(v),
        Err(why) => Measured::unavailable(why),
    }
}

/// What holding `conns` connections cost: each reading's change from before they were opened
/// to when they were all held (bytes, negative where it fell), or why it is unavailable.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ConnMemory {
    /// Connections held (each answered one verified echo).
    pub(crate) conns: u64,
    /// Of them, still open when the measured window closed.
    pub(crate) live_at_close: u64,
    pub(crate) rss: Measured<i64>,
    pub(crate) kmem: Measured<i64>,
    pub(crate) sock_buf: Measured<i64>,
    pub(crate) slab: Measured<i64>,
    pub(crate) sockstat: Measured<i64>,
}

impl ConnMemory {
    /// The change from `before` to `after` over `conns` connections.
    pub(crate) fn between(before: &Snapshot, after: &Snapshot, conns: u64) -> ConnMemory {
        let d = |a: &Measured<u64>, b: &Measured<u64>| match (a, b) {
            (Measured::Value(a), Measured::Value(b)) => Measured::Value(*b as i64 - *a as i64),
            (Measured::Unavailable { unavailable }, _)
            | (_, Measured::Unavailable { unavailable }) => Measured::unavailable(unavailable),
        };
        ConnMemory {
            conns,
            live_at_close: 0,
            rss: d(&before.rss, &after.rss),
            kmem: d(&before.kmem, &after.kmem),
            sock_buf: d(&before.sock_buf, &after.sock_buf),
            slab: d(&before.slab, &after.slab),
            sockstat: d(&before.sockstat, &after.sockstat),
        }
    }
}

/// The VmRSS of `pids`, summed, bytes.
pub(crate) fn rss_bytes(pids: &[u32]) -> Result<u64, String> {
    if pids.is_empty() {
        return Err("the server has no process on this host".into());
    }
    let mut sum = 0u64;
    for p in pids {
        let path = format!("/proc/{p}/status");
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
        sum += vm_rss_bytes(&text).ok_or_else(|| format!("{path}: no VmRSS line"))?;
    }
    Ok(sum)
}

/// The `VmRSS:` line of a `/proc/PID/status` text, bytes.
fn vm_rss_bytes(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let mut it = line["VmRSS:".len()..].split_whitespace();
    let n: u64 = it.next()?.parse().ok()?;
    match it.next()? {
        "kB" => Some(n * 1024),
        _ => None,
    }
}

/// Bytes of the slab caches `names` (active objects x object size) in `/proc/slabinfo`.
pub(crate) fn slab_bytes(names: &[&str]) -> Result<u64, String> {
    let text = std::fs::read_to_string("/proc/slabinfo")
        .map_err(|e| format!("/proc/slabinfo: {e} (it is readable by root only)"))?;
    slabinfo_bytes(&text, names)
}

fn slabinfo_bytes(text: &str, names: &[&str]) -> Result<u64, String> {
    let mut sum = 0u64;
    for name in names {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .ok_or_else(|| format!("/proc/slabinfo has no cache {name} (merged into another)"))?;
        let f: Vec<&str> = line.split_whitespace().collect();
        let num = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok());
        let (Some(active), Some(size)) = (num(1), num(3)) else {
            return Err(format!("/proc/slabinfo: cannot read the line of {name}"));
        };
        sum += active * size;
    }
    Ok(sum)
}

/// TCP's socket buffer memory, machine-wide: `/proc/net/sockstat`'s `TCP: ... mem PAGES`.
pub(crate) fn sockstat_tcp_bytes() -> Result<u64, String> {
    let text = std::fs::read_to_string("/proc/net/sockstat")
        .map_err(|e| format!("/proc/net/sockstat: {e}"))?;
    // raw: glibc knows the page size already (rustix's `page_size` would fetch the aux vector).
    // SAFETY: sysconf has no memory effects.
    let page = u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
        .map_err(|_| "sysconf(_SC_PAGESIZE) failed".to_string())?;
    sockstat_pages(&text)
        .map(|p| p * page)
        .ok_or_else(|| "/proc/net/sockstat has no TCP mem field".into())
}

fn sockstat_pages(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("TCP:"))?;
    let f: Vec<&str> = line.split_whitespace().collect();
    let i = f.iter().position(|w| *w == "mem")?;
    f.get(i + 1)?.parse().ok()
}

/// A memory cgroup (v1) of the server's own, removed when dropped.
pub(crate) struct MemCgroup {
    dir: std::path::PathBuf,
    /// Why its socket accounting could not be turned on (its socket buffers unavailable).
    tcp_off: Option<String>,
}

impl MemCgroup {
    /// A fresh cgroup under this process's own memory cgroup, with socket accounting on; or
    /// why there is none.
    pub(crate) fn create() -> Result<MemCgroup, String> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let parent = own_parent()?;
        if !parent.join("memory.kmem.usage_in_bytes").exists() {
            return Err(format!(
                "{}: no memory.kmem.usage_in_bytes (kernel memory accounting of cgroup v1 is \
                 not built in)",
                parent.display()
            ));
        }
        sweep_stale_in(&parent);
        let dir = parent.join(format!(
            "ringside-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir(&dir)
            .map_err(|e| format!("cannot make a memory cgroup {}: {e}", dir.display()))?;
        let mut cg = MemCgroup { dir, tcp_off: None };
        if let Err(e) = std::fs::write(cg.dir.join("memory.kmem.tcp.limit_in_bytes"), "-1") {
            cg.tcp_off = Some(format!(
                "cannot turn on the cgroup's socket accounting (memory.kmem.tcp.limit_in_bytes: \
                 {e})"
            ));
        }
        Ok(cg)
    }

    /// Moves the process `pid` (every thread of it) into the cgroup: what it allocates from
    /// now on is charged here.
    pub(crate) fn enter(&self, pid: u32) -> Result<(), String> {
        std::fs::write(self.dir.join("cgroup.procs"), pid.to_string())
            .map_err(|e| format!("cannot move the server into {}: {e}", self.dir.display()))
    }

    fn read(&self, file: &str) -> Measured<u64> {
        let path = self.dir.join(file);
        measured(
            std::fs::read_to_string(&path)
                .map_err(|e| format!("{}: {e}", path.display()))
                .and_then(|s| {
                    s.trim()
                        .parse()
                        .map_err(|e| format!("{}: {e}", path.display()))
                }),
        )
    }

    fn tcp_usage(&self) -> Measured<u64> {
        match &self.tcp_off {
            Some(why) => Measured::unavailable(why.clone()),
            None => self.read("memory.kmem.tcp.usage_in_bytes"),
        }
    }
}

impl Drop for MemCgroup {
    fn drop(&mut self) {
        // Its tasks have exited by now; a server with thousands of threads may take a
        // moment to be reaped. One left behind is swept by the next `create`.
        for _ in 0..500 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}

/// Removes the memory cgroups a ringside killed before it could clean up left under this
/// process's own memory cgroup (SIGKILL during conn.idle), each named in a sentence for the
/// run's start; nothing where there is no memory cgroup v1.
pub(crate) fn sweep_stale() -> Vec<String> {
    own_parent().map_or_else(|_| Vec::new(), |p| sweep_stale_in(&p))
}

/// This process's own memory cgroup (v1), where a server's cgroups are made; or why there is
/// none.
fn own_parent() -> Result<std::path::PathBuf, String> {
    let own = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("/proc/self/cgroup: {e}"))?;
    let rel = own_memory_cgroup(&own).ok_or_else(|| {
        "no memory cgroup v1 (the memory controller is not on a v1 hierarchy here)".to_string()
    })?;
    Ok(std::path::Path::new(CGROUP_V1_MEMORY).join(rel.trim_start_matches('/')))
}

/// Removes the empty cgroups under `parent` that a ringside process no longer running left
/// (`ringside-PID-N`; a cgroup with tasks cannot be removed, so nothing live is touched), and
/// says which.
fn sweep_stale_in(parent: &std::path::Path) -> Vec<String> {
    crate::child::cgroup::stale_in(parent)
        .into_iter()
        .map(|(dir, pid)| match std::fs::remove_dir(&dir) {
            Ok(()) => format!(
                "removed memory cgroup {} left by ringside pid {pid}, which is no longer \
                 running (killed during conn.idle)",
                dir.display()
            ),
            Err(err) => format!(
                "cannot remove memory cgroup {} left by ringside pid {pid}: {err}",
                dir.display()
            ),
        })
        .collect()
}

/// The memory controller's path in a `/proc/PID/cgroup` text (cgroup v1: `N:memory:/path`).
fn own_memory_cgroup(text: &str) -> Option<&str> {
    text.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (_, ctrl, path) = (f.next()?, f.next()?, f.next()?);
        ctrl.split(',').any(|c| c == "memory").then_some(path)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_texts_are_read_and_a_missing_field_is_said() {
        assert_eq!(
            vm_rss_bytes("Name:\tx\nVmRSS:\t    2048 kB\nThreads: 1\n"),
            Some(2048 * 1024)
        );
        assert_eq!(vm_rss_bytes("Name:\tx\n"), None);
        let slab = "slabinfo - version: 2.1\n# name <active_objs> ...\n\
                    TCP 10 12 2432 13 8 : tunables 0 0 0\n\
                    sock_inode_cache 20 25 832 19 4 : tunables 0 0 0\n";
        assert_eq!(slabinfo_bytes(slab, SOCK_SLABS), Ok(10 * 2432 + 20 * 832));
        let e = slabinfo_bytes(slab, &["TCPv6"]).unwrap_err();
        assert!(e.contains("TCPv6"), "{e}");
        let ss = "sockets: used 13\nTCP: inuse 1 orphan 0 tw 0 alloc 1 mem 7\nUDP: inuse 0\n";
        assert_eq!(sockstat_pages(ss), Some(7));
        assert_eq!(sockstat_pages("UDP: inuse 0 mem 0\n"), None);
        assert_eq!(
            own_memory_cgroup("5:devices:/\n4:memory:/a/b\n0::/\n"),
            Some("/a/b")
        );
        assert_eq!(own_memory_cgroup("0::/x\n"), None);
    }

    /// Issue 46 item 9: a cgroup a killed ringside left is removed and named; one of a live
    /// process, and other directories, are left alone.
    #[test]
    fn stale_cgroups_are_removed_and_named() {
        let d = tempfile::tempdir().unwrap();
        // A pid past pid_max: no such process.
        let dead = d.path().join("ringside-99999999-0");
        let mine = d.path().join(format!("ringside-{}-0", std::process::id()));
        let other = d.path().join("other-1-0");
        for p in [&dead, &mine, &other] {
            std::fs::create_dir(p).unwrap();
        }
        let said = sweep_stale_in(d.path());
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(
            said[0].contains("ringside-99999999-0") && said[0].contains("pid 99999999"),
            "{said:?}"
        );
        assert!(!dead.exists() && mine.exists() && other.exists());
    }

    #[test]
    fn a_change_is_unavailable_when_either_end_is() {
        let s = |rss: Measured<u64>| Snapshot {
            rss,
            kmem: Measured::Value(100),
            sock_buf: Measured::unavailable("no cgroup"),
            slab: Measured::Value(5),
            sockstat: Measured::Value(0),
        };
        let m = ConnMemory::between(&s(Measured::Value(1000)), &s(Measured::Value(900)), 3);
        assert_eq!(m.rss, Measured::Value(-100));
        assert_eq!(m.kmem, Measured::Value(0));
        assert_eq!(m.sock_buf, Measured::unavailable("no cgroup"));
        let m = ConnMemory::between(&s(Measured::unavailable("gone")), &s(Measured::Value(1)), 3);
        assert_eq!(m.rss, Measured::unavailable("gone"));
    }
}
