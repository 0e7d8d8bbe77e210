//! `ringside env --json` for real: once as is, and once in a child process whose seccomp filter
//! makes `io_uring_setup` fail with EPERM (what Docker's default profile does), where the
//! verdict must name seccomp rather than blame the kernel or the sysctl.

use serde_json::Value;
use std::process::Command as StdCommand;
use std::time::Duration;

/// The fields the rest of ringside reads from the report.
const FIELDS: [&str; 11] = [
    "cpus",
    "io_uring",
    "sqpoll",
    "defer_taskrun",
    "registered_files",
    "registered_buffers",
    "buf_ring",
    "multishot_recv",
    "multishot_accept",
    "send_zc",
    "perf_syscalls",
];

/// Runs `ringside env --json` from `cmd` and parses its stdout.
fn env_json(cmd: StdCommand) -> Value {
    let out = assert_cmd::Command::from_std(cmd)
        .args(["env", "--json"])
        .timeout(Duration::from_secs(30))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).expect("env --json prints JSON")
}

fn availability(v: &Value, field: &str) -> String {
    v[field]
        .as_str()
        .unwrap_or_else(|| panic!("{field} is not a string: {}", v[field]))
        .to_string()
}

#[test]
fn env_json_has_every_field_and_a_verdict() {
    let v = env_json(StdCommand::new(assert_cmd::cargo::cargo_bin("ringside")));
    for f in FIELDS {
        assert!(v.get(f).is_some(), "{f} missing from {v:#}");
    }
    assert!(
        v["cpus"].as_u64().is_some_and(|n| n >= 1),
        "cpus: {}",
        v["cpus"]
    );
    for f in &FIELDS[1..] {
        let a = availability(&v, f);
        assert!(
            a == "ready"
                || a.strip_prefix("unavailable: ")
                    .is_some_and(|r| !r.trim().is_empty()),
            "{f}: {a:?} is neither ready nor unavailable with a reason"
        );
    }
    if let Some(why) = availability(&v, "io_uring").strip_prefix("unavailable: ") {
        assert!(availability(&v, "sqpoll").contains(why));
    }
}

#[cfg(target_arch = "x86_64")]
mod seccomp {
    use super::*;
    use std::os::unix::process::CommandExt;

    const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
    const SYS_IO_URING_SETUP: u32 = 425;
    // Classic BPF opcodes (linux/filter.h): BPF_LD|BPF_W|BPF_ABS, BPF_JMP|BPF_JEQ|BPF_K,
    // BPF_RET|BPF_K.
    const BPF_LD_W_ABS: u16 = 0x20;
    const BPF_JMP_JEQ_K: u16 = 0x15;
    const BPF_RET_K: u16 = 0x06;
    // Offsets in struct seccomp_data.
    const NR: u32 = 0;
    const ARCH: u32 = 4;

    fn stmt(code: u16, k: u32) -> libc::sock_filter {
        libc::sock_filter {
            code,
            jt: 0,
            jf: 0,
            k,
        }
    }

    fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
        libc::sock_filter { code, jt, jf, k }
    }

    /// Installs, in the child about to exec, a filter failing `io_uring_setup` with `errno`.
    fn deny_io_uring_setup(errno: i32) -> std::io::Result<()> {
        let mut prog = [
            stmt(BPF_LD_W_ABS, ARCH),
            jump(BPF_JMP_JEQ_K, AUDIT_ARCH_X86_64, 0, 3),
            stmt(BPF_LD_W_ABS, NR),
            jump(BPF_JMP_JEQ_K, SYS_IO_URING_SETUP, 0, 1),
            stmt(BPF_RET_K, libc::SECCOMP_RET_ERRNO | errno as u32),
            stmt(BPF_RET_K, libc::SECCOMP_RET_ALLOW),
        ];
        let fprog = libc::sock_fprog {
            len: prog.len() as u16,
            filter: prog.as_mut_ptr(),
        };
        // SAFETY: prctl with integer arguments only; async-signal-safe.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fprog` points at `prog`, both alive for the call, which copies the program.
        let r = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0,
                &fprog as *const libc::sock_fprog,
            )
        };
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// `ringside env --json` with `io_uring_setup` failing with `errno` under a filter.
    fn env_json_denied(errno: i32) -> Value {
        let mut cmd = StdCommand::new(assert_cmd::cargo::cargo_bin("ringside"));
        // SAFETY: the hook only calls prctl and seccomp, both async-signal-safe, and touches
        // no memory shared with the parent beyond its own stack.
        unsafe { cmd.pre_exec(move || deny_io_uring_setup(errno)) };
        env_json(cmd)
    }

    #[test]
    fn seccomp_denial_is_named() {
        let v = env_json_denied(libc::EPERM);
        let io_uring = availability(&v, "io_uring");
        assert!(io_uring.starts_with("unavailable:"), "io_uring: {io_uring}");
        assert!(io_uring.contains("seccomp"), "io_uring: {io_uring}");
        assert!(io_uring.contains("EPERM"), "io_uring: {io_uring}");
        for f in &FIELDS[2..FIELDS.len() - 1] {
            let a = availability(&v, f);
            assert!(
                a.starts_with("unavailable: io_uring unavailable: blocked by seccomp"),
                "{f}: {a}"
            );
        }
        assert_eq!(v["seccomp_mode"], 2);
    }

    /// A filter answering ENOSYS must not be taken for a kernel without io_uring.
    #[test]
    fn seccomp_enosys_is_not_an_old_kernel() {
        let v = env_json_denied(libc::ENOSYS);
        let io_uring = availability(&v, "io_uring");
        assert!(
            io_uring.contains("seccomp") && io_uring.contains("ENOSYS"),
            "io_uring: {io_uring}"
        );
        assert!(!io_uring.contains("too old"), "io_uring: {io_uring}");
        assert!(availability(&v, "sqpoll").starts_with("unavailable:"));
    }
}
