//! Why io_uring (or one of its features) was refused: an errno explained with the evidence the
//! probe gathered. Pure functions of their inputs, so every verdict is unit-tested.
//!
//! `io_uring_setup` fails for five different reasons that all look alike from the outside
//! (EPERM, ENOSYS): the `kernel.io_uring_disabled` sysctl (6.6+), a seccomp filter (Docker's
//! default profile, systemd's `SystemCallFilter=`, gVisor-like sandboxes), a kernel too old or
//! built without `CONFIG_IO_URING`, `RLIMIT_MEMLOCK` (rings were charged to locked memory before
//! 5.12), or something else. Telling them apart matters: the fix for each is different.
//! A seccomp filter can return any errno, including ENOSYS, so it is considered before
//! concluding the kernel lacks io_uring.

use super::Rlim;
use std::io;

/// What the probe knows that can explain an io_uring refusal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Evidence {
    /// `kernel.io_uring_disabled`, if the sysctl exists.
    pub(crate) io_uring_disabled: Option<u32>,
    /// `kernel.io_uring_group`, if the sysctl exists (-1: no group).
    pub(crate) io_uring_group: Option<i64>,
    /// Whether this process is in `io_uring_group`.
    pub(crate) in_io_uring_group: bool,
    /// Whether CAP_SYS_ADMIN is in the effective set (root usually has it).
    pub(crate) cap_sys_admin: bool,
    /// `Seccomp:` of `/proc/self/status` (2: filter mode).
    pub(crate) seccomp_mode: Option<u32>,
    /// `Seccomp_filters:` of `/proc/self/status`.
    pub(crate) seccomp_filters: Option<u32>,
    /// The soft `RLIMIT_MEMLOCK`, bytes.
    pub(crate) memlock_soft: Option<Rlim>,
    /// `uname -r`.
    pub(crate) kernel_release: String,
}

impl Evidence {
    fn seccomp_filtered(&self) -> bool {
        self.seccomp_mode == Some(2)
    }

    fn seccomp_tag(&self) -> String {
        let filters = self
            .seccomp_filters
            .map_or_else(|| "unknown".to_string(), |n| n.to_string());
        format!("Seccomp: 2, filters: {filters}")
    }
}

/// (major, minor) of a release such as "6.8.0-45-generic".
pub(crate) fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut it = release.split(|c: char| !c.is_ascii_digit());
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

/// The symbolic name of an errno ("EPERM"), or "errno N" for one not listed.
pub(crate) fn errno_name(errno: i32) -> String {
    let name = match errno {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::EINTR => "EINTR",
        libc::EIO => "EIO",
        libc::EBADF => "EBADF",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EFAULT => "EFAULT",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::ENODEV => "ENODEV",
        libc::EINVAL => "EINVAL",
        libc::ENFILE => "ENFILE",
        libc::EMFILE => "EMFILE",
        libc::ENOSPC => "ENOSPC",
        libc::ENOSYS => "ENOSYS",
        libc::ENOBUFS => "ENOBUFS",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ECONNREFUSED => "ECONNREFUSED",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::ETIME => "ETIME",
        libc::ECANCELED => "ECANCELED",
        libc::ENXIO => "ENXIO",
        libc::EBADFD => "EBADFD",
        _ => return format!("errno {errno}"),
    };
    name.to_string()
}

/// "EPERM (Operation not permitted)".
pub(crate) fn errno_text(errno: i32) -> String {
    let text = io::Error::from_raw_os_error(errno).to_string();
    let text = text.split(" (os error ").next().unwrap_or_default();
    format!("{} ({text})", errno_name(errno))
}

/// Why `io_uring_setup` (a plain ring, no flags) failed with `errno`.
///
/// In order: the sysctl when it explains an EPERM; memlock for ENOMEM under a finite limit;
/// a seccomp filter for anything else a filter could have returned; ENOSYS as a kernel without
/// io_uring; then the errno and the kernel release.
pub(crate) fn setup_refusal(errno: i32, ev: &Evidence) -> String {
    let call = format!("io_uring_setup returned {}", errno_text(errno));
    let kernel = &ev.kernel_release;
    if errno == libc::EPERM {
        match ev.io_uring_disabled {
            Some(2) => return "disabled by sysctl kernel.io_uring_disabled=2".into(),
            // The kernel's own check: allowed if in the group or capable(CAP_SYS_ADMIN) in the
            // initial user namespace. With CAP_SYS_ADMIN and no seccomp filter, the capability
            // can only be a user namespace's, which does not count.
            Some(1) if !ev.in_io_uring_group && (!ev.cap_sys_admin || !ev.seccomp_filtered()) => {
                let group = match ev.io_uring_group {
                    Some(g) if g >= 0 => format!("only group {g} and CAP_SYS_ADMIN"),
                    _ => "only CAP_SYS_ADMIN".into(),
                };
                let userns = if ev.cap_sys_admin {
                    "; CAP_SYS_ADMIN inside a user namespace does not count"
                } else {
                    ""
                };
                return format!(
                    "disabled by sysctl kernel.io_uring_disabled=1 ({group} may create rings{userns})"
                );
            }
            _ => {}
        }
    }
    if errno == libc::ENOMEM {
        match ev.memlock_soft {
            Some(Rlim::Finite(n)) => {
                let who = match kernel_version(kernel) {
                    // Observed on 6.18: a ring fails with RLIMIT_MEMLOCK=4 KiB and works with
                    // 64 KiB, because ring memory is accounted again on recent kernels.
                    Some(v) if v >= (5, 12) => format!(
                        "kernels before 5.12 charge rings to locked memory, and recent ones such \
                         as {kernel} do again"
                    ),
                    _ => "kernels before 5.12 charge rings to locked memory".to_string(),
                };
                return format!(
                    "memlock too low: RLIMIT_MEMLOCK={n} bytes ({who}; raise ulimit -l)"
                );
            }
            None => {
                return format!(
                    "{call}: out of memory, or memlock too low (RLIMIT_MEMLOCK unreadable; kernels \
                     before 5.12 charge rings to locked memory; raise ulimit -l) (kernel {kernel})"
                )
            }
            Some(Rlim::Unlimited) => {}
        }
    }
    // A filter may return any errno; only descriptor exhaustion is surely the kernel's own.
    if ev.seccomp_filtered() && !matches!(errno, libc::EMFILE | libc::ENFILE | libc::ENOMEM) {
        return format!("blocked by seccomp ({}): {call}", ev.seccomp_tag());
    }
    match errno {
        libc::ENOSYS => {
            format!("kernel too old or built without CONFIG_IO_URING (kernel {kernel}): {call}")
        }
        libc::EPERM | libc::EACCES => format!(
            "{call} (kernel {kernel}); neither the sysctl nor seccomp explains it, so a security \
             module (SELinux, AppArmor) probably refused it"
        ),
        libc::EMFILE | libc::ENFILE => {
            format!("{call}: out of file descriptors (RLIMIT_NOFILE) (kernel {kernel})")
        }
        _ => format!("{call} (kernel {kernel})"),
    }
}

/// Why a call on a working ring (`what`: "IORING_REGISTER_FILES", "multishot RECV", ...) failed.
/// Adds the seccomp filter when one is installed and the errno is one a filter returns.
/// Adds the memlock limit for ENOMEM: rings (on some kernels), registered buffers, buffer
/// rings and zero-copy sends are all charged to `RLIMIT_MEMLOCK`.
pub(crate) fn call_refusal(what: &str, errno: i32, ev: &Evidence) -> String {
    let mut s = format!("{what} returned {}", errno_text(errno));
    if ev.seccomp_filtered() && matches!(errno, libc::EPERM | libc::EACCES | libc::ENOSYS) {
        s += &format!(" (a seccomp filter is installed: {})", ev.seccomp_tag());
    }
    s += &format!(" (kernel {})", ev.kernel_release);
    if errno == libc::ENOMEM && ev.memlock_soft != Some(Rlim::Unlimited) {
        s += &format!(
            ": memlock too low? {} (rings, registered buffers, buffer rings and zero-copy sends \
             are charged to locked memory; raise ulimit -l)",
            memlock_text(ev)
        );
    }
    s
}

/// Why a ring with IORING_SETUP_SQPOLL was refused while a plain ring was not.
pub(crate) fn sqpoll_refusal(errno: i32, ev: &Evidence) -> String {
    let call = call_refusal("io_uring_setup with IORING_SETUP_SQPOLL", errno, ev);
    match errno {
        libc::EPERM => format!(
            "SQPOLL refused: {call}: unprivileged SQPOLL needs CAP_SYS_NICE before kernel 5.13"
        ),
        libc::EINVAL => format!("SQPOLL not supported by this kernel: {call}"),
        _ => format!("SQPOLL refused: {call}"),
    }
}

/// Why a ring with IORING_SETUP_DEFER_TASKRUN | SINGLE_ISSUER was refused.
pub(crate) fn defer_taskrun_refusal(errno: i32, ev: &Evidence) -> String {
    let call = call_refusal("io_uring_setup with DEFER_TASKRUN|SINGLE_ISSUER", errno, ev);
    match errno {
        libc::EINVAL => format!("kernel too old (needs 6.1): {call}"),
        _ => format!("DEFER_TASKRUN refused: {call}"),
    }
}

/// Why registering buffers (charged to `RLIMIT_MEMLOCK` on every kernel) failed.
pub(crate) fn register_buffers_refusal(errno: i32, ev: &Evidence) -> String {
    call_refusal("IORING_REGISTER_BUFFERS", errno, ev)
}

fn memlock_text(ev: &Evidence) -> String {
    match ev.memlock_soft {
        Some(Rlim::Finite(n)) => format!("RLIMIT_MEMLOCK={n} bytes"),
        Some(Rlim::Unlimited) => "RLIMIT_MEMLOCK=unlimited".into(),
        None => "RLIMIT_MEMLOCK unreadable".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain() -> Evidence {
        Evidence {
            io_uring_disabled: Some(0),
            io_uring_group: Some(-1),
            in_io_uring_group: false,
            cap_sys_admin: false,
            seccomp_mode: Some(0),
            seccomp_filters: Some(0),
            memlock_soft: Some(Rlim::Finite(65536)),
            kernel_release: "6.8.0-test".into(),
        }
    }

    #[test]
    fn sysctl_2_disables_for_everyone() {
        let ev = Evidence {
            io_uring_disabled: Some(2),
            cap_sys_admin: true,
            ..plain()
        };
        assert_eq!(
            setup_refusal(libc::EPERM, &ev),
            "disabled by sysctl kernel.io_uring_disabled=2"
        );
    }

    #[test]
    fn sysctl_1_names_the_group() {
        let ev = Evidence {
            io_uring_disabled: Some(1),
            io_uring_group: Some(1234),
            ..plain()
        };
        assert_eq!(
            setup_refusal(libc::EPERM, &ev),
            "disabled by sysctl kernel.io_uring_disabled=1 (only group 1234 and CAP_SYS_ADMIN may \
             create rings)"
        );
        let none = Evidence {
            io_uring_disabled: Some(1),
            ..plain()
        };
        assert!(setup_refusal(libc::EPERM, &none).contains("only CAP_SYS_ADMIN may create rings"));
        // A member of the group is not refused by the sysctl: something else did it.
        let member = Evidence {
            in_io_uring_group: true,
            ..ev
        };
        assert!(!setup_refusal(libc::EPERM, &member).contains("sysctl kernel"));
    }

    #[test]
    fn seccomp_is_named_for_eperm_and_for_enosys() {
        let ev = Evidence {
            seccomp_mode: Some(2),
            seccomp_filters: Some(1),
            ..plain()
        };
        assert_eq!(
            setup_refusal(libc::EPERM, &ev),
            "blocked by seccomp (Seccomp: 2, filters: 1): io_uring_setup returned EPERM \
             (Operation not permitted)"
        );
        // A filter returning ENOSYS must not be mistaken for an old kernel.
        let r = setup_refusal(libc::ENOSYS, &ev);
        assert!(r.starts_with("blocked by seccomp"), "{r}");
        assert!(!r.contains("too old"), "{r}");
        // Filters count unknown before 5.9.
        let old = Evidence {
            seccomp_filters: None,
            ..ev.clone()
        };
        assert!(setup_refusal(libc::EACCES, &old).contains("filters: unknown"));
        // Root with CAP_SYS_ADMIN under sysctl=1 and a filter: the filter is the better answer.
        let root = Evidence {
            io_uring_disabled: Some(1),
            cap_sys_admin: true,
            ..ev
        };
        assert!(setup_refusal(libc::EPERM, &root).contains("seccomp"));
    }

    #[test]
    fn enosys_without_seccomp_is_an_old_kernel() {
        assert_eq!(
            setup_refusal(libc::ENOSYS, &plain()),
            "kernel too old or built without CONFIG_IO_URING (kernel 6.8.0-test): io_uring_setup \
             returned ENOSYS (Function not implemented)"
        );
    }

    #[test]
    fn enomem_is_memlock() {
        let old = Evidence {
            kernel_release: "5.10.0".into(),
            ..plain()
        };
        assert_eq!(
            setup_refusal(libc::ENOMEM, &old),
            "memlock too low: RLIMIT_MEMLOCK=65536 bytes (kernels before 5.12 charge rings to \
             locked memory; raise ulimit -l)"
        );
        assert_eq!(
            setup_refusal(libc::ENOMEM, &plain()),
            "memlock too low: RLIMIT_MEMLOCK=65536 bytes (kernels before 5.12 charge rings to \
             locked memory, and recent ones such as 6.8.0-test do again; raise ulimit -l)"
        );
        assert_eq!(kernel_version("6.18.44-fc-v669"), Some((6, 18)));
        assert_eq!(kernel_version("5.4"), Some((5, 4)));
        assert_eq!(kernel_version("unknown"), None);
        // Even under a filter, ENOMEM with a finite memlock is the limit.
        let f = Evidence {
            seccomp_mode: Some(2),
            ..plain()
        };
        assert!(setup_refusal(libc::ENOMEM, &f).starts_with("memlock too low"));
        let unlimited = Evidence {
            memlock_soft: Some(Rlim::Unlimited),
            ..plain()
        };
        assert!(!setup_refusal(libc::ENOMEM, &unlimited).starts_with("memlock too low"));
    }

    #[test]
    fn anything_else_gives_errno_and_kernel() {
        assert_eq!(
            setup_refusal(libc::EFAULT, &plain()),
            "io_uring_setup returned EFAULT (Bad address) (kernel 6.8.0-test)"
        );
        let r = setup_refusal(libc::EPERM, &plain());
        assert!(
            r.contains("EPERM") && r.contains("6.8.0-test") && r.contains("SELinux"),
            "{r}"
        );
        assert!(setup_refusal(libc::EMFILE, &plain()).contains("RLIMIT_NOFILE"));
        assert_eq!(errno_name(4095), "errno 4095");
    }

    #[test]
    fn feature_refusals() {
        let ev = plain();
        assert!(sqpoll_refusal(libc::EPERM, &ev).contains("CAP_SYS_NICE before kernel 5.13"));
        assert!(sqpoll_refusal(libc::EINVAL, &ev).contains("not supported"));
        assert!(defer_taskrun_refusal(libc::EINVAL, &ev).starts_with("kernel too old (needs 6.1)"));
        assert!(register_buffers_refusal(libc::ENOMEM, &ev).contains("RLIMIT_MEMLOCK=65536 bytes"));
        assert!(sqpoll_refusal(libc::ENOMEM, &ev).contains("memlock too low? RLIMIT_MEMLOCK=65536"));
        let unlimited = Evidence {
            memlock_soft: Some(Rlim::Unlimited),
            ..plain()
        };
        assert!(!call_refusal("SEND_ZC", libc::ENOMEM, &unlimited).contains("memlock"));
        let f = Evidence {
            seccomp_mode: Some(2),
            seccomp_filters: Some(3),
            ..plain()
        };
        assert!(call_refusal("IORING_REGISTER_PROBE", libc::EPERM, &f).contains("seccomp"));
        assert!(!call_refusal("IORING_REGISTER_PROBE", libc::EINVAL, &f).contains("seccomp"));
    }
}
