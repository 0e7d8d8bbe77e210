//! Readers for the plain facts of the environment probe: procfs, sysfs, `uname`, `getrlimit`,
//! `sched_getaffinity`. Each returns a [`Reading`] whose reason names the file or call that failed.

use super::{Reading, Rlim, RlimitPair, Virtualization};
use std::collections::BTreeMap;
use std::ffi::CStr;
use std::fs;
use std::io;
use std::path::Path;
use std::str::FromStr;

/// Capability bit numbers (`linux/capability.h`).
pub(super) const CAP_IPC_LOCK: u32 = 14;
pub(super) const CAP_SYS_ADMIN: u32 = 21;
pub(super) const CAP_SYS_NICE: u32 = 23;
pub(super) const CAP_SYS_RESOURCE: u32 = 24;
pub(super) const CAP_PERFMON: u32 = 38;

const CAPS_OF_INTEREST: [(u32, &str); 5] = [
    (CAP_IPC_LOCK, "CAP_IPC_LOCK"),
    (CAP_SYS_ADMIN, "CAP_SYS_ADMIN"),
    (CAP_SYS_NICE, "CAP_SYS_NICE"),
    (CAP_SYS_RESOURCE, "CAP_SYS_RESOURCE"),
    (CAP_PERFMON, "CAP_PERFMON"),
];

/// An `io::Error` as a sentence without the "(os error N)" tail.
pub(super) fn os_text(e: &io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// A whole file, or why it could not be read.
pub(super) fn read_string(path: &str) -> Reading<String> {
    match fs::read_to_string(path) {
        Ok(s) => Reading::Value(s),
        Err(e) => Reading::Unavailable(format!("{path}: {}", os_text(&e))),
    }
}

/// A one-line file, trimmed.
pub(super) fn read_trim(path: &str) -> Reading<String> {
    read_string(path).map(|s| s.trim().to_string())
}

/// `/proc/sys/kernel/<name>` parsed as `T`; `absent` explains a missing file.
pub(super) fn sysctl<T: FromStr>(name: &str, absent: &str) -> Reading<T> {
    let path = format!("/proc/sys/kernel/{name}");
    match fs::read_to_string(&path) {
        Ok(s) => match s.trim().parse() {
            Ok(v) => Reading::Value(v),
            Err(_) => Reading::Unavailable(format!("{path}: unexpected content {:?}", s.trim())),
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            Reading::Unavailable(format!("{path} absent ({absent})"))
        }
        Err(e) => Reading::Unavailable(format!("{path}: {}", os_text(&e))),
    }
}

/// The two `uname` fields the report keeps (never the node name).
pub(super) struct Uname {
    pub(crate) release: String,
    pub(crate) version: String,
}

/// raw: rustix takes uname(2) for infallible (a refusal, a seccomp filter's, would leave its
/// result unwritten); this probe reports the refusal.
pub(super) fn uname() -> io::Result<Uname> {
    // SAFETY: utsname is plain old data; all-zero is a valid value.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable utsname for the duration of the call.
    if unsafe { libc::uname(&mut u) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let field = |f: &[libc::c_char]| {
        // SAFETY: the kernel NUL-terminates every utsname field within its array, which lives
        // as long as `u`.
        unsafe { CStr::from_ptr(f.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    };
    Ok(Uname {
        release: field(&u.release),
        version: field(&u.version),
    })
}

/// How many CPUs `sched_getaffinity` lets this process use.
pub(super) fn affinity_count() -> Option<usize> {
    crate::child::affinity(0)
        .ok()
        .map(|cpus| cpus.len())
        .filter(|&n| n > 0)
}

/// The number of CPUs in a kernel CPU list such as "0-3,6,8-9".
pub(super) fn cpu_list_len(list: &str) -> Option<usize> {
    let mut n = 0;
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        n += match part.split_once('-') {
            Some((a, b)) => {
                b.parse::<usize>()
                    .ok()?
                    .checked_sub(a.parse::<usize>().ok()?)?
                    + 1
            }
            None => {
                part.parse::<usize>().ok()?;
                1
            }
        };
    }
    (n > 0).then_some(n)
}

/// The lines of `/proc/self/status` the report and the io_uring verdict need.
pub(super) struct ProcStatus {
    pub(crate) seccomp_mode: Reading<u32>,
    pub(crate) seccomp_filters: Reading<u32>,
    pub(crate) no_new_privs: Reading<bool>,
    pub(crate) cpus_allowed_list: Reading<String>,
    pub(crate) capabilities: Reading<Vec<String>>,
    /// `CapEff` as a bit mask, when readable.
    pub(crate) cap_eff: Option<u64>,
}

pub(super) fn proc_status() -> ProcStatus {
    const PATH: &str = "/proc/self/status";
    let text = match read_string(PATH) {
        Reading::Value(t) => t,
        Reading::Unavailable(r) => {
            return ProcStatus {
                seccomp_mode: Reading::Unavailable(r.clone()),
                seccomp_filters: Reading::Unavailable(r.clone()),
                no_new_privs: Reading::Unavailable(r.clone()),
                cpus_allowed_list: Reading::Unavailable(r.clone()),
                capabilities: Reading::Unavailable(r),
                cap_eff: None,
            };
        }
    };
    parse_status(&text)
}

fn parse_status(text: &str) -> ProcStatus {
    let line = |key: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k == key).then(|| v.trim().to_string())
        })
    };
    let num = |key: &str, absent: &str| -> Reading<u32> {
        match line(key) {
            Some(v) => v
                .parse()
                .map_err(|_| format!("{key}: unexpected value {v:?}"))
                .into(),
            None => Reading::Unavailable(format!("no {key} line in /proc/self/status ({absent})")),
        }
    };
    let cap_eff = line("CapEff").and_then(|v| u64::from_str_radix(&v, 16).ok());
    let capabilities = match cap_eff {
        Some(mask) => Reading::Value(
            CAPS_OF_INTEREST
                .iter()
                .filter(|(bit, _)| mask & (1 << bit) != 0)
                .map(|(_, name)| name.to_string())
                .collect(),
        ),
        None => Reading::Unavailable("no readable CapEff line in /proc/self/status".into()),
    };
    ProcStatus {
        seccomp_mode: num("Seccomp", "kernel built without CONFIG_SECCOMP"),
        seccomp_filters: num("Seccomp_filters", "the line exists from kernel 5.9"),
        no_new_privs: num("NoNewPrivs", "the line exists from kernel 4.10").map(|n| n != 0),
        cpus_allowed_list: match line("Cpus_allowed_list") {
            Some(v) => Reading::Value(v),
            None => Reading::Unavailable("no Cpus_allowed_list line in /proc/self/status".into()),
        },
        capabilities,
        cap_eff,
    }
}

/// Whether this process has group `gid` as its effective or a supplementary group.
pub(super) fn in_group(gid: u32) -> bool {
    use rustix::process::{getegid, getgroups, Gid};
    let gid = Gid::from_raw(gid);
    // getgroups: the count, then the list (two getgroups(2), as before).
    getegid() == gid || getgroups().is_ok_and(|groups| groups.contains(&gid))
}

/// The resource limits the report keeps.
#[derive(Clone, Copy)]
pub(super) enum Limit {
    /// `RLIMIT_MEMLOCK`, bytes.
    Memlock,
    /// `RLIMIT_NOFILE`, open files.
    Nofile,
}

/// One `getrlimit` resource.
///
/// raw: rustix takes getrlimit for infallible (a seccomp filter's refusal would leave its result
/// unwritten); this probe reports the refusal.
pub(super) fn rlimit(which: Limit) -> Reading<RlimitPair> {
    let resource = match which {
        Limit::Memlock => libc::RLIMIT_MEMLOCK,
        Limit::Nofile => libc::RLIMIT_NOFILE,
    };
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `r` is a valid, writable rlimit.
    if unsafe { libc::getrlimit(resource, &mut r) } != 0 {
        return Reading::Unavailable(format!(
            "getrlimit: {}",
            os_text(&io::Error::last_os_error())
        ));
    }
    let conv = |v: libc::rlim_t| {
        if v == libc::RLIM_INFINITY {
            Rlim::Unlimited
        } else {
            Rlim::Finite(v)
        }
    };
    Reading::Value(RlimitPair {
        soft: conv(r.rlim_cur),
        hard: conv(r.rlim_max),
    })
}

/// The CPU model from `/proc/cpuinfo` (`model name` on x86; other spellings elsewhere).
pub(super) fn cpu_model(cpuinfo: &Reading<String>) -> Reading<String> {
    let text = match cpuinfo {
        Reading::Value(t) => t,
        Reading::Unavailable(r) => return Reading::Unavailable(r.clone()),
    };
    ["model name", "Model", "Hardware", "cpu model", "cpu"]
        .iter()
        .find_map(|key| {
            text.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == *key && !v.trim().is_empty()).then(|| v.trim().to_string())
            })
        })
        .map_or_else(
            || Reading::Unavailable("/proc/cpuinfo names no CPU model on this architecture".into()),
            Reading::Value,
        )
}

/// Whether SMT siblings are running: `smt/active`, else inferred from `smt/control`.
pub(super) fn smt_active() -> Reading<bool> {
    if let Reading::Value(v) = read_trim("/sys/devices/system/cpu/smt/active") {
        return match v.as_str() {
            "1" => Reading::Value(true),
            "0" => Reading::Value(false),
            _ => Reading::Unavailable(format!("smt/active: unexpected value {v:?}")),
        };
    }
    match read_trim("/sys/devices/system/cpu/smt/control") {
        Reading::Value(c) if c == "on" => Reading::Value(true),
        Reading::Value(c) if ["off", "forceoff", "notsupported"].contains(&c.as_str()) => {
            Reading::Value(false)
        }
        Reading::Value(c) => Reading::Unavailable(format!("smt/control says {c:?}")),
        Reading::Unavailable(r) => Reading::Unavailable(format!(
            "no SMT control in this kernel (smt/active and smt/control unreadable: {r})"
        )),
    }
}

/// The cpufreq governors in use: one value when all CPUs agree, else each distinct value.
pub(super) fn governor() -> Reading<String> {
    let mut found = std::collections::BTreeSet::new();
    if let Ok(dir) = fs::read_dir("/sys/devices/system/cpu") {
        for e in dir.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            let is_cpu = name
                .strip_prefix("cpu")
                .is_some_and(|n| n.parse::<u32>().is_ok());
            if !is_cpu {
                continue;
            }
            if let Ok(g) = fs::read_to_string(e.path().join("cpufreq/scaling_governor")) {
                found.insert(g.trim().to_string());
            }
        }
    }
    if !found.is_empty() {
        return Reading::Value(found.into_iter().collect::<Vec<_>>().join(", "));
    }
    let why = if Path::new("/sys/devices/system/cpu/cpu0/cpufreq").exists() {
        "cpufreq present but scaling_governor unreadable"
    } else {
        "no cpufreq driver: /sys/devices/system/cpu/cpu0/cpufreq absent \
         (usual on VMs, where the host sets the frequency)"
    };
    Reading::Unavailable(why.into())
}

/// The contents of every file in `/sys/devices/system/cpu/vulnerabilities`.
pub(super) fn mitigations() -> Reading<BTreeMap<String, String>> {
    const DIR: &str = "/sys/devices/system/cpu/vulnerabilities";
    let dir = match fs::read_dir(DIR) {
        Ok(d) => d,
        Err(e) => {
            return Reading::Unavailable(format!(
                "{DIR}: {} (the directory exists from kernel 4.15)",
                os_text(&e)
            ))
        }
    };
    let mut map = BTreeMap::new();
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let text = match fs::read_to_string(e.path()) {
            Ok(t) => t.trim().to_string(),
            Err(err) => format!("unreadable: {}", os_text(&err)),
        };
        map.insert(name, text);
    }
    Reading::Value(map)
}

const VM_VENDORS: [&str; 13] = [
    "qemu",
    "kvm",
    "vmware",
    "virtualbox",
    "innotek",
    "xen",
    "amazon ec2",
    "google compute engine",
    "microsoft corporation",
    "bochs",
    "parallels",
    "firecracker",
    "cloud hypervisor",
];

const CONTAINER_RUNTIMES: [&str; 7] = [
    "docker",
    "kubepods",
    "containerd",
    "libpod",
    "podman",
    "lxc",
    "garden",
];

/// The evidence of a hypervisor or a container.
pub(super) fn virtualization(cpuinfo: &Reading<String>) -> Virtualization {
    let hypervisor_cpu_flag = match cpuinfo {
        Reading::Value(t) => {
            let flags: Vec<&str> = t
                .lines()
                .filter_map(|l| l.split_once(':').filter(|(k, _)| k.trim() == "flags"))
                .map(|(_, v)| v)
                .collect();
            if flags.is_empty() {
                Reading::Unavailable(format!(
                    "/proc/cpuinfo has no x86 flags line on {}",
                    std::env::consts::ARCH
                ))
            } else {
                Reading::Value(
                    flags
                        .iter()
                        .any(|f| f.split_whitespace().any(|w| w == "hypervisor")),
                )
            }
        }
        Reading::Unavailable(r) => Reading::Unavailable(r.clone()),
    };
    let mut container_hints = Vec::new();
    for f in ["/.dockerenv", "/run/.containerenv"] {
        if Path::new(f).exists() {
            container_hints.push(format!("{f} exists"));
        }
    }
    if let Ok(cg) = fs::read_to_string("/proc/1/cgroup") {
        let cg = cg.to_lowercase();
        for rt in CONTAINER_RUNTIMES {
            if cg.contains(rt) {
                container_hints.push(format!("/proc/1/cgroup mentions {rt}"));
            }
        }
    }
    Virtualization {
        hypervisor_cpu_flag,
        hypervisor_type: read_trim("/sys/hypervisor/type"),
        dmi_sys_vendor: read_trim("/sys/class/dmi/id/sys_vendor"),
        dmi_product_name: read_trim("/sys/class/dmi/id/product_name"),
        container_hints,
    }
}

/// The verdict from [`virtualization`]'s evidence: yes on any positive sign, no only when the
/// x86 `hypervisor` flag could be read and is clear.
pub(super) fn virtualized(v: &Virtualization) -> Reading<bool> {
    let dmi_says_vm = [&v.dmi_sys_vendor, &v.dmi_product_name].iter().any(|r| {
        r.value().is_some_and(|s| {
            let s = s.to_lowercase();
            VM_VENDORS.iter().any(|vm| s.contains(vm)) || s.contains("virtual machine")
        })
    });
    if v.hypervisor_cpu_flag.value() == Some(&true)
        || v.hypervisor_type.value().is_some_and(|t| !t.is_empty())
        || dmi_says_vm
    {
        return Reading::Value(true);
    }
    match &v.hypervisor_cpu_flag {
        Reading::Value(false) => Reading::Value(false),
        _ => Reading::Unavailable(format!(
            "no hypervisor CPU flag on {} and no DMI or /sys/hypervisor evidence either way",
            std::env::consts::ARCH
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(cpu_list_len("0-3"), Some(4));
        assert_eq!(cpu_list_len("0-1,4,6-7\n"), Some(5));
        assert_eq!(cpu_list_len("0"), Some(1));
        assert_eq!(cpu_list_len(""), None);
        assert_eq!(cpu_list_len("x"), None);
    }

    #[test]
    fn status_lines() {
        let s = parse_status(
            "Name:\tx\nNoNewPrivs:\t1\nSeccomp:\t2\nSeccomp_filters:\t3\n\
             CapEff:\t0000000000200000\nCpus_allowed_list:\t0-1\n",
        );
        assert_eq!(s.seccomp_mode, Reading::Value(2));
        assert_eq!(s.seccomp_filters, Reading::Value(3));
        assert_eq!(s.no_new_privs, Reading::Value(true));
        assert_eq!(s.cpus_allowed_list, Reading::Value("0-1".into()));
        assert_eq!(
            s.capabilities,
            Reading::Value(vec!["CAP_SYS_ADMIN".to_string()])
        );
        let old = parse_status("Seccomp:\t0\n");
        assert!(old.seccomp_filters.reason().unwrap().contains("5.9"));
    }

    #[test]
    fn vm_verdicts() {
        let mut v = Virtualization {
            hypervisor_cpu_flag: Reading::Value(false),
            hypervisor_type: Reading::Unavailable("absent".into()),
            dmi_sys_vendor: Reading::Value("Dell Inc.".into()),
            dmi_product_name: Reading::Value("PowerEdge".into()),
            container_hints: vec![],
        };
        assert_eq!(virtualized(&v), Reading::Value(false));
        v.dmi_sys_vendor = Reading::Value("QEMU".into());
        assert_eq!(virtualized(&v), Reading::Value(true));
        v.dmi_sys_vendor = Reading::Unavailable("absent".into());
        v.hypervisor_cpu_flag = Reading::Unavailable("arm64".into());
        assert!(virtualized(&v).reason().is_some());
    }
}
