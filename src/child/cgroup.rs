//! A cgroup of a contender's own: every process it starts is inside from before its exec, and
//! so is whatever those fork, whether they reap their children, leave its process group
//! (`setpgid`) or its session (`setsid`). Its CPU is the cgroup's (`cpu.stat`'s `usage_usec`
//! in cgroup v2, `cpuacct.usage` in v1), which keeps the time of processes that have ended;
//! its members are `cgroup.procs`; and at stop every member is killed (`cgroup.kill`, or
//! SIGKILL to each member until none is left), so nothing it started outlives its cell.
//! benchexec confines a tool the same way.
//!
//! Where: under this process's own cgroup of the cgroup v2 hierarchy where one is mounted
//! (also beside v1 controllers: `/sys/fs/cgroup/unified`), else of the v1 hierarchy that has
//! `cpuacct`. Named `ringside-PID-N`; one a killed ringside left is removed (its members
//! killed first) and named by the next run ([`sweep_stale`]). Where neither can be made,
//! [`Cgroup::create`] says why, and the contender is read by its process group's clocks
//! (`crate::measure::cpu::processes_live`), as the run's environment records
//! ([`probe`]).

use std::fs;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Which hierarchy a cgroup is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Version {
    /// cgroup v2 (`cpu.stat`, `cgroup.kill` since Linux 5.14).
    V2,
    /// cgroup v1's `cpuacct` controller (`cpuacct.usage`, `cpuacct.stat`).
    V1Cpuacct,
}

impl Version {
    /// As said in the environment and in messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Version::V2 => "cgroup v2",
            Version::V1Cpuacct => "cgroup v1 cpuacct",
        }
    }
}

/// A cgroup's CPU time: total, user and system, ns, every process that was ever in it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CgroupCpu {
    pub(crate) total_ns: u64,
    pub(crate) user_ns: u64,
    pub(crate) sys_ns: u64,
}

/// How long [`Cgroup::kill`] waits for the members it killed to be gone.
const KILL_WITHIN: Duration = Duration::from_secs(2);

/// A cgroup made for one contender, its members killed and the cgroup removed when dropped.
#[derive(Debug)]
pub(crate) struct Cgroup {
    dir: PathBuf,
    version: Version,
    /// Its `cgroup.procs`, open for writing: a child writes `0` to it between fork and exec
    /// to enter ([`Cgroup::procs_fd`]).
    procs: OwnedFd,
}

impl Cgroup {
    /// A fresh cgroup under this process's own, in the v2 hierarchy where one is mounted and
    /// writable, else in v1's `cpuacct`; or why there is none.
    pub(crate) fn create() -> Result<Cgroup, String> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let (parent, version) = own_parent()?;
        let dir = parent.join(format!(
            "ringside-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        fs::create_dir(&dir)
            .map_err(|e| format!("cannot make a {} {}: {e}", version.name(), dir.display()))?;
        let procs = fs::OpenOptions::new()
            .write(true)
            .open(dir.join("cgroup.procs"))
            .map_err(|e| {
                let _ = fs::remove_dir(&dir);
                format!("{}/cgroup.procs: {e}", dir.display())
            })?;
        let cg = Cgroup {
            dir,
            version,
            procs: procs.into(),
        };
        // Its CPU must be readable before anything is measured by it.
        cg.cpu()?;
        Ok(cg)
    }

    /// Where it is.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    pub(crate) fn version(&self) -> Version {
        self.version
    }

    /// The raw fd of its `cgroup.procs`, for a child to enter by writing `0` (itself) between
    /// fork and exec; close-on-exec, so the server never holds it.
    pub(crate) fn procs_fd(&self) -> std::os::fd::RawFd {
        self.procs.as_raw_fd()
    }

    /// Its members now (processes, zombies not listed), ascending.
    pub(crate) fn members(&self) -> Vec<u32> {
        let mut v: Vec<u32> = fs::read_to_string(self.dir.join("cgroup.procs"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The CPU time of every process that was ever in it, or why it cannot be read.
    pub(crate) fn cpu(&self) -> Result<CgroupCpu, String> {
        let read = |f: &str| {
            let p = self.dir.join(f);
            fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))
        };
        match self.version {
            Version::V2 => v2_cpu(&read("cpu.stat")?)
                .ok_or_else(|| format!("{}/cpu.stat: no usage_usec", self.dir.display())),
            Version::V1Cpuacct => {
                let total: u64 = read("cpuacct.usage")?
                    .trim()
                    .parse()
                    .map_err(|e| format!("{}/cpuacct.usage: {e}", self.dir.display()))?;
                // USER_HZ, the unit of cpuacct.stat. raw: as `measure::cpu::user_hz`, which
                // this layer below `measure` cannot call.
                // SAFETY: sysconf has no preconditions.
                let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
                let tick = 1_000_000_000 / hz;
                let (user, sys) = v1_split(&read("cpuacct.stat")?).unwrap_or((0, 0));
                Ok(CgroupCpu {
                    total_ns: total,
                    user_ns: user * tick,
                    sys_ns: sys * tick,
                })
            }
        }
    }

    /// Kills every member (`cgroup.kill` where the kernel has it, else SIGKILL to each until
    /// none is left, bounded) and says "PID (COMM)" of each process that was still there.
    pub(crate) fn kill(&self) -> Vec<String> {
        let left = self.members();
        if left.is_empty() {
            return Vec::new();
        }
        let named: Vec<String> = left.iter().map(|&p| super::named(p)).collect();
        // One write kills them all, those forked meanwhile included; else each is signalled
        // until none is left (one forking as it is killed is caught on the next pass).
        let at_once =
            self.version == Version::V2 && fs::write(self.dir.join("cgroup.kill"), "1").is_ok();
        let until = Instant::now() + KILL_WITHIN;
        loop {
            let now = self.members();
            if now.is_empty() || Instant::now() >= until {
                break;
            }
            if !at_once {
                for p in now {
                    if let Some(pid) = super::pid_of(p) {
                        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        named
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        self.kill();
        // A member just killed may take a moment to leave; one left behind is swept by the
        // next run (`sweep_stale`).
        let until = Instant::now() + KILL_WITHIN;
        while fs::remove_dir(&self.dir).is_err() && self.dir.exists() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// The value of the line `name VALUE` of a cgroup stat file (`cpu.stat`, `cpuacct.stat`).
fn stat_field(stat: &str, name: &str) -> Option<u64> {
    stat.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == name).then(|| v.trim().parse::<u64>().ok())?
    })
}

/// `usage_usec`, `user_usec` and `system_usec` of a cgroup v2 `cpu.stat`, as ns.
fn v2_cpu(stat: &str) -> Option<CgroupCpu> {
    let us = |name: &str| stat_field(stat, name).map(|v| v.saturating_mul(1000));
    Some(CgroupCpu {
        total_ns: us("usage_usec")?,
        user_ns: us("user_usec").unwrap_or(0),
        sys_ns: us("system_usec").unwrap_or(0),
    })
}

/// `user` and `system` of a cgroup v1 `cpuacct.stat`, clock ticks.
fn v1_split(stat: &str) -> Option<(u64, u64)> {
    Some((stat_field(stat, "user")?, stat_field(stat, "system")?))
}

/// Where this process's contenders' cgroups are made (this process's own cgroup of the v2
/// hierarchy, else of v1's `cpuacct`), or why nowhere.
fn own_parent() -> Result<(PathBuf, Version), String> {
    let own =
        fs::read_to_string("/proc/self/cgroup").map_err(|e| format!("/proc/self/cgroup: {e}"))?;
    let mounts = fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("/proc/self/mountinfo: {e}"))?;
    parent_in(&own, &mounts).ok_or_else(|| {
        "no cgroup v2 hierarchy and no cgroup v1 cpuacct controller is mounted here".to_string()
    })
}

/// [`own_parent`] from the texts of `/proc/self/cgroup` and `/proc/self/mountinfo`.
fn parent_in(own: &str, mountinfo: &str) -> Option<(PathBuf, Version)> {
    // (mount point, root of the mount, fstype, super options) of each cgroup mount.
    let mounts: Vec<(&str, &str, &str, &str)> = mountinfo
        .lines()
        .filter_map(|l| {
            let (pre, post) = l.split_once(" - ")?;
            let f: Vec<&str> = pre.split(' ').collect();
            let g: Vec<&str> = post.split(' ').collect();
            Some((*f.get(4)?, *f.get(3)?, *g.first()?, *g.get(2)?))
        })
        .filter(|m| m.2 == "cgroup2" || m.2 == "cgroup")
        .collect();
    // The path of this process's cgroup relative to a mount's root: a mount of a sub-tree
    // (a container's) shows only what is under its root.
    let under = |path: &str, root: &str| -> Option<String> {
        let rel = path.strip_prefix(root.trim_end_matches('/'))?;
        Some(rel.trim_start_matches('/').to_string())
    };
    let v2 = own.lines().find_map(|l| l.strip_prefix("0::"));
    if let (Some(path), Some(m)) = (v2, mounts.iter().find(|m| m.2 == "cgroup2")) {
        if let Some(rel) = under(path, m.1) {
            return Some((Path::new(m.0).join(rel), Version::V2));
        }
    }
    let v1 = own.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (_, ctrl, path) = (f.next()?, f.next()?, f.next()?);
        ctrl.split(',').any(|c| c == "cpuacct").then_some(path)
    })?;
    let m = mounts
        .iter()
        .find(|m| m.2 == "cgroup" && m.3.split(',').any(|o| o == "cpuacct"))?;
    Some((Path::new(m.0).join(under(v1, m.1)?), Version::V1Cpuacct))
}

/// Whether contenders are confined to cgroups of their own here: the hierarchy and the
/// directory a cgroup was made in (then removed), or why not (their CPU is then read by
/// their process group's clocks). Tried once per process.
pub(crate) fn probe() -> Result<String, String> {
    static PROBED: std::sync::OnceLock<Result<String, String>> = std::sync::OnceLock::new();
    PROBED
        .get_or_init(|| {
            let cg = Cgroup::create()?;
            Ok(format!(
                "{} under {}",
                cg.version().name(),
                cg.dir().parent().unwrap_or(cg.dir()).display()
            ))
        })
        .clone()
}

/// Removes the cgroups a ringside killed before it could clean up left under this process's
/// own (their members killed first: a contender's worker that outlived it), each named in a
/// sentence for the run's start.
pub(crate) fn sweep_stale() -> Vec<String> {
    let Ok((parent, version)) = own_parent() else {
        return Vec::new();
    };
    let mut said = Vec::new();
    for (dir, pid) in stale_in(&parent) {
        let procs = fs::OpenOptions::new()
            .write(true)
            .open(dir.join("cgroup.procs"));
        let Ok(procs) = procs else {
            continue;
        };
        let cg = Cgroup {
            dir: dir.clone(),
            version,
            procs: procs.into(),
        };
        let killed = cg.kill();
        drop(cg);
        let what = if killed.is_empty() {
            String::new()
        } else {
            format!(" and stopped what was left in it ({})", killed.join(", "))
        };
        said.push(if dir.exists() {
            format!(
                "cannot remove {} {} left by ringside pid {pid}, which is no longer running",
                version.name(),
                dir.display()
            )
        } else {
            format!(
                "removed {} {} left by ringside pid {pid}, which is no longer running{what}",
                version.name(),
                dir.display()
            )
        });
    }
    said
}

/// The `ringside-PID-N` directories under `parent` whose PID is no longer running, with it.
pub(crate) fn stale_in(parent: &Path) -> Vec<(PathBuf, u32)> {
    let Ok(dir) = fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut v: Vec<(PathBuf, u32)> = dir
        .flatten()
        .filter_map(|e| {
            let pid = e
                .file_name()
                .to_str()?
                .strip_prefix("ringside-")?
                .split('-')
                .next()?
                .parse::<u32>()
                .ok()?;
            let gone = pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists();
            gone.then(|| (e.path(), pid))
        })
        .collect();
    v.sort();
    v
}

/// Enters the cgroup whose `cgroup.procs` is open as `fd`: writes `0` (the calling process).
/// Raw syscall only: it runs between fork and exec.
pub(super) fn enter(fd: std::os::fd::RawFd) -> io::Result<()> {
    // SAFETY: write(2) of a 1-byte static buffer to an fd this process holds.
    let n = unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) };
    if n == 1 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hierarchy_is_found_from_proc_texts() {
        let mi = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
                  33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n\
                  40 31 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
        let own = "2:cpuacct:/a\n0::/b/c\n";
        assert_eq!(
            parent_in(own, mi),
            Some((PathBuf::from("/sys/fs/cgroup/unified/b/c"), Version::V2))
        );
        // No v2 mount: v1's cpuacct.
        let v1_only: String = mi.lines().take(2).map(|l| format!("{l}\n")).collect();
        assert_eq!(
            parent_in(own, &v1_only),
            Some((
                PathBuf::from("/sys/fs/cgroup/cpuacct/a"),
                Version::V1Cpuacct
            ))
        );
        // A container's mount of a sub-tree: the path under its root.
        let sub = "40 31 0:37 /b /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        assert_eq!(
            parent_in("0::/b/c\n", sub),
            Some((PathBuf::from("/sys/fs/cgroup/c"), Version::V2))
        );
        assert_eq!(
            parent_in("0::/x\n", "1 2 3:4 / /proc rw - proc proc rw\n"),
            None
        );
    }

    #[test]
    fn cpu_files_are_read_in_ns() {
        let v2 = "usage_usec 336377\nuser_usec 300000\nsystem_usec 36377\nnice_usec 0\n";
        assert_eq!(
            v2_cpu(v2),
            Some(CgroupCpu {
                total_ns: 336_377_000,
                user_ns: 300_000_000,
                sys_ns: 36_377_000
            })
        );
        assert_eq!(v2_cpu("user_usec 1\n"), None);
        assert_eq!(v1_split("user 12\nsystem 3\n"), Some((12, 3)));
    }

    /// A directory a ringside no longer running left is stale; this process's and others'
    /// are not.
    #[test]
    fn stale_cgroups_are_those_of_a_ringside_gone() {
        let d = tempfile::tempdir().unwrap();
        for n in [
            "ringside-99999999-0".to_string(),
            format!("ringside-{}-0", std::process::id()),
            "other-1-0".into(),
        ] {
            fs::create_dir(d.path().join(n)).unwrap();
        }
        assert_eq!(
            stale_in(d.path()),
            vec![(d.path().join("ringside-99999999-0"), 99999999)]
        );
    }

    /// Where this machine has a cgroup hierarchy ringside can write (CI's does: root, with
    /// cgroup v2 or v1 cpuacct): a process started inside is a member, its children too
    /// after they leave its session, the CPU they burned stays counted after they exit, and
    /// the kill leaves nothing.
    #[test]
    fn a_cgroup_holds_what_its_child_starts_and_kills_it_all() {
        let cg = match Cgroup::create() {
            Ok(cg) => cg,
            Err(why) => {
                assert!(
                    std::env::var_os("RINGSIDE_REQUIRE_TOOLS").is_none(),
                    "no cgroup here: {why}"
                );
                eprintln!("skipped: no cgroup here: {why}");
                return;
            }
        };
        let fd = cg.procs_fd();
        let mut cmd = std::process::Command::new("sh");
        // Burns some CPU, then leaves a `sleep` in a session of its own and exits.
        cmd.arg("-c")
            .arg("i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; setsid sleep 30 & exit 0");
        use std::os::unix::process::CommandExt;
        // SAFETY: `enter` makes one raw write(2).
        unsafe {
            cmd.pre_exec(move || enter(fd));
        }
        let st = cmd.status().unwrap();
        assert!(st.success());
        let until = Instant::now() + Duration::from_secs(5);
        while cg.members().is_empty() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        let left = cg.members();
        assert_eq!(left.len(), 1, "the setsid sleep: {left:?}");
        assert!(cg.cpu().unwrap().total_ns > 1_000_000, "{:?}", cg.cpu());
        let killed = cg.kill();
        assert_eq!(killed.len(), 1, "{killed:?}");
        // "PID (COMM)": `sh` or `sleep`, as far as it got before it was killed.
        assert!(
            killed[0].starts_with(&format!("{} (", left[0])),
            "{killed:?}"
        );
        assert!(cg.members().is_empty());
        let dir = cg.dir().to_path_buf();
        drop(cg);
        assert!(!dir.exists());
    }
}
