//! The environment probe behind `ringside env`, model availability and the results' `env` block:
//! what this machine, kernel and user allow, and why.
//!
//! A benchmark of I/O models is only as honest as its account of the machine it ran on, so every
//! figure here is read, never assumed, and every value is either a real reading or
//! `unavailable: <reason>`:
//!
//! - machine: online CPUs and the affinity mask, CPU model, SMT, cpufreq governor, hypervisor and
//!   container hints (`/proc/cpuinfo`, `/sys/devices/system/cpu`, DMI, `/.dockerenv`);
//! - kernel: release and build (`uname`), command line, every file of
//!   `/sys/devices/system/cpu/vulnerabilities` (mitigations change syscall costs, so they change
//!   the epoll vs io_uring gap);
//! - limits and privilege: `RLIMIT_MEMLOCK` (rings are charged to it before 5.12, registered
//!   buffers always), `RLIMIT_NOFILE`, euid, the capabilities that matter, the seccomp mode;
//! - io_uring: a ring is set up for real, then each feature ringside's models use (SQPOLL,
//!   DEFER_TASKRUN, registered files and buffers, buffer rings, multishot recv and accept,
//!   SEND_ZC) is built or exercised once on a tiny ring; a refusal is explained from the evidence
//!   (`kernel.io_uring_disabled`, seccomp, memlock, kernel age), see [`explain`];
//! - perf: `perf_event_paranoid` and whether a syscall counter opens.
//!
//! Nothing here prints and nothing names the host or its users. The whole probe takes a few
//! milliseconds; each functional io_uring test is bounded by a kernel timer so it cannot hang.

pub(crate) mod explain;
pub(crate) mod netpath;
mod sys;
pub mod uring;

use crate::avail::Availability;
use serde::de::{Deserializer, Error as _};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// A reading that may fail: the value, or the reason it could not be read.
///
/// Serialized as the bare value, or as `{"unavailable": "<reason>"}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reading<T> {
    Value(T),
    Unavailable(String),
}

impl<T> Reading<T> {
    /// The value, if it was read.
    pub(crate) fn value(&self) -> Option<&T> {
        match self {
            Reading::Value(v) => Some(v),
            Reading::Unavailable(_) => None,
        }
    }

    /// The reason, if it could not be read.
    #[cfg(test)]
    fn reason(&self) -> Option<&str> {
        match self {
            Reading::Value(_) => None,
            Reading::Unavailable(r) => Some(r),
        }
    }

    /// Applies `f` to the value, keeping the reason.
    pub(crate) fn map<U>(self, f: impl FnOnce(T) -> U) -> Reading<U> {
        match self {
            Reading::Value(v) => Reading::Value(f(v)),
            Reading::Unavailable(r) => Reading::Unavailable(r),
        }
    }
}

impl<T, E: fmt::Display> From<Result<T, E>> for Reading<T> {
    fn from(r: Result<T, E>) -> Self {
        match r {
            Ok(v) => Reading::Value(v),
            Err(e) => Reading::Unavailable(e.to_string()),
        }
    }
}

impl<T: fmt::Display> fmt::Display for Reading<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reading::Value(v) => v.fmt(f),
            Reading::Unavailable(r) => write!(f, "unavailable: {r}"),
        }
    }
}

impl<T: Serialize> Serialize for Reading<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Reading::Value(v) => v.serialize(s),
            Reading::Unavailable(r) => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("unavailable", r)?;
                m.end()
            }
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Reading<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Why {
            unavailable: String,
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Wire<T> {
            Unavailable(Why),
            Value(T),
        }
        match Wire::<T>::deserialize(d) {
            Ok(Wire::Unavailable(w)) => Ok(Reading::Unavailable(w.unavailable)),
            Ok(Wire::Value(v)) => Ok(Reading::Value(v)),
            Err(_) => Err(D::Error::custom(
                "expected a reading or {\"unavailable\": \"<reason>\"}",
            )),
        }
    }
}

impl<T: schemars::JsonSchema> schemars::JsonSchema for Reading<T> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("Reading_{}", T::schema_name()).into()
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A reading: the value, or why it could not be read.",
            "anyOf": [g.subschema_for::<T>(), crate::measure::unavailable_schema()]
        })
    }
}

/// One resource limit value: a finite amount (bytes or a count, per the field's name) or none.
///
/// Serialized as a number or the string `"unlimited"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rlim {
    Finite(u64),
    Unlimited,
}

impl fmt::Display for Rlim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rlim::Finite(n) => n.fmt(f),
            Rlim::Unlimited => f.write_str("unlimited"),
        }
    }
}

impl Serialize for Rlim {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Rlim::Finite(n) => s.serialize_u64(*n),
            Rlim::Unlimited => s.serialize_str("unlimited"),
        }
    }
}

impl<'de> Deserialize<'de> for Rlim {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Wire {
            N(u64),
            S(String),
        }
        match Wire::deserialize(d)? {
            Wire::N(n) => Ok(Rlim::Finite(n)),
            Wire::S(s) if s == "unlimited" => Ok(Rlim::Unlimited),
            Wire::S(s) => Err(D::Error::custom(format!(
                "expected a number or \"unlimited\", got {s:?}"
            ))),
        }
    }
}

impl schemars::JsonSchema for Rlim {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Rlim".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A resource limit: a number, or \"unlimited\".",
            "anyOf": [{"type": "integer", "minimum": 0}, {"const": "unlimited"}]
        })
    }
}

/// The soft (enforced) and hard (ceiling) values of one `RLIMIT_*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RlimitPair {
    pub(crate) soft: Rlim,
    pub(crate) hard: Rlim,
}

/// Evidence of running under a hypervisor or in a container. Each item is what a file said;
/// the verdict is [`EnvReport::virtualized`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Virtualization {
    /// The `hypervisor` flag in `/proc/cpuinfo` (x86 only: set by every common hypervisor).
    pub(crate) hypervisor_cpu_flag: Reading<bool>,
    /// `/sys/hypervisor/type` (Xen and a few others).
    pub(crate) hypervisor_type: Reading<String>,
    /// `/sys/class/dmi/id/sys_vendor` (e.g. "QEMU", "Amazon EC2"); absent on microVMs.
    pub(crate) dmi_sys_vendor: Reading<String>,
    /// `/sys/class/dmi/id/product_name`.
    pub(crate) dmi_product_name: Reading<String>,
    /// What suggests a container: `/.dockerenv`, `/run/.containerenv`, runtime names in
    /// `/proc/1/cgroup`. Empty when nothing does (which proves nothing).
    pub(crate) container_hints: Vec<String>,
}

/// What this machine, kernel and user allow, and why. Built by [`probe`].
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EnvReport {
    // -- machine --
    /// CPUs this process may run on (`sched_getaffinity`), else the online count.
    pub(crate) cpus: usize,
    /// `/sys/devices/system/cpu/online`, e.g. "0-3".
    pub(crate) cpu_online_list: Reading<String>,
    /// `Cpus_allowed_list` of this process (`/proc/self/status`).
    pub(crate) cpu_affinity_list: Reading<String>,
    /// `model name` from `/proc/cpuinfo`.
    pub(crate) cpu_model: Reading<String>,
    /// Whether SMT siblings are active (`/sys/devices/system/cpu/smt/active`, else `control`).
    pub(crate) smt_active: Reading<bool>,
    /// `/sys/devices/system/cpu/smt/control`: on, off, forceoff, notsupported, notimplemented.
    pub(crate) smt_control: Reading<String>,
    /// cpufreq `scaling_governor` of every CPU that has one (distinct values, comma-separated).
    pub(crate) governor: Reading<String>,
    /// Whether this runs under a hypervisor, decided from [`Virtualization`]'s evidence.
    pub(crate) virtualized: Reading<bool>,
    /// The evidence behind `virtualized`, plus container hints.
    pub(crate) virtualization: Virtualization,

    // -- kernel & mitigations --
    /// `uname -r`.
    pub(crate) kernel_release: Reading<String>,
    /// `uname -v`: build number and date.
    pub(crate) kernel_build: Reading<String>,
    /// `/proc/cmdline` (mitigations=, isolcpus=, nohz_full= live here).
    pub(crate) kernel_cmdline: Reading<String>,
    /// Every file of `/sys/devices/system/cpu/vulnerabilities`: name -> text.
    pub(crate) mitigations: Reading<BTreeMap<String, String>>,

    // -- limits & privilege --
    /// Effective user id.
    pub(crate) euid: u32,
    /// The effective capabilities that change what ringside may do (of CAP_IPC_LOCK,
    /// CAP_SYS_ADMIN, CAP_SYS_NICE, CAP_SYS_RESOURCE, CAP_PERFMON).
    pub(crate) capabilities: Reading<Vec<String>>,
    /// `RLIMIT_MEMLOCK`, bytes.
    pub(crate) rlimit_memlock_bytes: Reading<RlimitPair>,
    /// `RLIMIT_NOFILE`, open files.
    pub(crate) rlimit_nofile_count: Reading<RlimitPair>,
    /// `Seccomp:` of `/proc/self/status`: 0 none, 1 strict, 2 filter.
    pub(crate) seccomp_mode: Reading<u32>,
    /// `Seccomp_filters:` of `/proc/self/status`: filters attached to this task (kernel 5.9+).
    pub(crate) seccomp_filters: Reading<u32>,
    /// `NoNewPrivs:` of `/proc/self/status`.
    pub(crate) no_new_privs: Reading<bool>,

    // -- io_uring --
    /// `kernel.io_uring_disabled` (6.6+): 0 allowed, 1 only `io_uring_group` and CAP_SYS_ADMIN,
    /// 2 nobody.
    pub(crate) io_uring_disabled: Reading<u32>,
    /// `kernel.io_uring_group` (6.6+): the group allowed when `io_uring_disabled` is 1; -1 none.
    pub(crate) io_uring_group: Reading<i64>,
    /// `io_uring_setup` tried for real with 8 entries.
    pub io_uring: Availability,
    /// A ring with IORING_SETUP_SQPOLL actually built.
    pub(crate) sqpoll: Availability,
    /// A ring with IORING_SETUP_DEFER_TASKRUN | SINGLE_ISSUER actually built and used.
    pub(crate) defer_taskrun: Availability,
    /// A file registered and written through as a fixed file.
    pub(crate) registered_files: Availability,
    /// A buffer registered and written from with WRITE_FIXED.
    pub(crate) registered_buffers: Availability,
    /// A provided-buffer ring registered (IORING_REGISTER_PBUF_RING).
    pub(crate) buf_ring: Availability,
    /// One multishot RECV with a buffer ring completed twice on a socket pair.
    pub(crate) multishot_recv: Availability,
    /// One multishot ACCEPT completed twice on a Unix listener.
    pub(crate) multishot_accept: Availability,
    /// SEND_ZC sent on TCP loopback and its notification arrived.
    pub(crate) send_zc: Availability,
    /// The `is_feature_*` flags the kernel reported in `io_uring_params.features`.
    pub(crate) io_uring_features: Reading<Vec<String>>,
    /// The opcodes ringside's models use: name -> supported (IORING_REGISTER_PROBE).
    pub(crate) io_uring_opcodes: Reading<BTreeMap<String, bool>>,
    /// io_uring after 6.1 (bundles, incremental buffers, min wait, NAPI, EPOLL_WAIT, zcrx...):
    /// per feature its kernel version, what the io-uring crate offers, and whether it works
    /// here, tried for real. Absent from files written before it existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) io_uring_modern: Vec<uring::modern::Feature>,

    // -- perf --
    /// `kernel.perf_event_paranoid`: -1 .. 4; 2 and above refuse kernel tracepoints to
    /// unprivileged users.
    pub(crate) perf_event_paranoid: Reading<i32>,
    /// A perf counter on `raw_syscalls:sys_enter` opened for this thread.
    pub perf_syscalls: Availability,
    /// Where an external contender's CPU is read: a cgroup of its own, which holds every
    /// process it ever starts (`crate::child::cgroup`), or, where none can be made, its
    /// process group's clocks, and why. Absent from files written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) contender_cpu: Option<String>,
    /// The machine's CPU topology (cores with their SMT siblings, NUMA nodes, allowed mask).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) topology: Option<crate::measure::topology::Topology>,
}

impl EnvReport {
    /// The kernel release (`uname -r`), or why it is unknown.
    /// Whether io_uring feature `name` (one of `uring::modern`'s names) works here; a report
    /// without the line (an older results file) says so.
    pub fn modern(&self, name: &str) -> Availability {
        self.io_uring_modern
            .iter()
            .find(|f| f.name == name)
            .map(|f| f.here.clone())
            .unwrap_or_else(|| {
                Availability::unavailable(format!("io_uring feature {name} was not probed"))
            })
    }

    pub(crate) fn kernel_release(&self) -> String {
        self.kernel_release.to_string()
    }
}

/// Probes the environment: reads the files above and tries each io_uring feature for real.
pub fn probe() -> EnvReport {
    let uname = sys::uname();
    let kernel_release: Reading<String> = uname.as_ref().map(|u| u.release.clone()).into();
    let kernel_build: Reading<String> = uname.map(|u| u.version).into();
    let status = sys::proc_status();
    let online = sys::read_trim("/sys/devices/system/cpu/online");
    let cpus = sys::affinity_count()
        .or_else(|| online.value().and_then(|l| sys::cpu_list_len(l)))
        .unwrap_or(1);
    let cpuinfo = sys::read_string("/proc/cpuinfo");
    let virtualization = sys::virtualization(&cpuinfo);
    let virtualized = sys::virtualized(&virtualization);
    let rlimit_memlock_bytes = sys::rlimit(sys::Limit::Memlock);
    let io_uring_disabled = sys::sysctl::<u32>(
        "io_uring_disabled",
        "the sysctl exists from kernel 6.6; earlier kernels cannot disable io_uring this way",
    );
    let io_uring_group = sys::sysctl::<i64>(
        "io_uring_group",
        "the sysctl exists from kernel 6.6 and only matters when io_uring_disabled is 1",
    );

    let evidence = explain::Evidence {
        io_uring_disabled: io_uring_disabled.value().copied(),
        io_uring_group: io_uring_group.value().copied(),
        in_io_uring_group: io_uring_group
            .value()
            .is_some_and(|&g| g >= 0 && sys::in_group(g as u32)),
        cap_sys_admin: status
            .cap_eff
            .is_some_and(|c| c & (1 << sys::CAP_SYS_ADMIN) != 0),
        seccomp_mode: status.seccomp_mode.value().copied(),
        seccomp_filters: status.seccomp_filters.value().copied(),
        memlock_soft: rlimit_memlock_bytes.value().map(|p| p.soft),
        kernel_release: kernel_release
            .value()
            .cloned()
            .unwrap_or_else(|| "unknown".into()),
    };
    let u = uring::probe(&evidence);

    EnvReport {
        cpus,
        cpu_online_list: online,
        cpu_affinity_list: status.cpus_allowed_list,
        cpu_model: sys::cpu_model(&cpuinfo),
        smt_active: sys::smt_active(),
        smt_control: sys::read_trim("/sys/devices/system/cpu/smt/control"),
        governor: sys::governor(),
        virtualized,
        virtualization,
        kernel_release,
        kernel_build,
        kernel_cmdline: sys::read_trim("/proc/cmdline"),
        mitigations: sys::mitigations(),
        euid: rustix::process::geteuid().as_raw(),
        capabilities: status.capabilities,
        rlimit_memlock_bytes,
        rlimit_nofile_count: sys::rlimit(sys::Limit::Nofile),
        seccomp_mode: status.seccomp_mode,
        seccomp_filters: status.seccomp_filters,
        no_new_privs: status.no_new_privs,
        io_uring_disabled,
        io_uring_group,
        io_uring: u.io_uring,
        sqpoll: u.sqpoll,
        defer_taskrun: u.defer_taskrun,
        registered_files: u.registered_files,
        registered_buffers: u.registered_buffers,
        buf_ring: u.buf_ring,
        multishot_recv: u.multishot_recv,
        multishot_accept: u.multishot_accept,
        send_zc: u.send_zc,
        io_uring_features: u.features,
        io_uring_opcodes: u.opcodes,
        io_uring_modern: u.modern,
        perf_event_paranoid: sys::sysctl::<i32>(
            "perf_event_paranoid",
            "perf events are not configured in this kernel",
        ),
        perf_syscalls: crate::measure::syscalls::availability(),
        contender_cpu: Some(match crate::child::cgroup::probe() {
            Ok(where_) => format!("its own cgroup ({where_})"),
            Err(why) => format!("its process group's CPU clocks (no cgroup: {why})"),
        }),
        topology: Some(crate::measure::topology::Topology::read()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reading_serializes_as_value_or_unavailable_object() {
        let v: Reading<u32> = Reading::Value(2);
        let u: Reading<u32> = Reading::Unavailable("absent".into());
        assert_eq!(serde_json::to_string(&v).unwrap(), "2");
        assert_eq!(
            serde_json::to_string(&u).unwrap(),
            r#"{"unavailable":"absent"}"#
        );
        assert_eq!(serde_json::from_str::<Reading<u32>>("2").unwrap(), v);
        assert_eq!(
            serde_json::from_str::<Reading<u32>>(r#"{"unavailable":"absent"}"#).unwrap(),
            u
        );
        // A map whose only key is "unavailable" is a reason, any other map a value.
        let m: Reading<BTreeMap<String, String>> =
            serde_json::from_str(r#"{"meltdown":"Not affected"}"#).unwrap();
        assert_eq!(m.value().unwrap()["meltdown"], "Not affected");
        assert!(serde_json::from_str::<Reading<u32>>(r#""two""#).is_err());
    }

    #[test]
    fn rlim_serializes_as_number_or_unlimited() {
        let p = RlimitPair {
            soft: Rlim::Finite(8 << 20),
            hard: Rlim::Unlimited,
        };
        let j = serde_json::to_string(&p).unwrap();
        assert_eq!(j, r#"{"soft":8388608,"hard":"unlimited"}"#);
        assert_eq!(serde_json::from_str::<RlimitPair>(&j).unwrap(), p);
        assert!(serde_json::from_str::<Rlim>(r#""lots""#).is_err());
    }

    #[test]
    fn probe_round_trips_through_json_and_never_leaves_a_blank() {
        let r = probe();
        assert!(r.cpus >= 1);
        let j = serde_json::to_value(&r).unwrap();
        let back: EnvReport = serde_json::from_value(j.clone()).unwrap();
        assert_eq!(serde_json::to_value(&back).unwrap(), j);
        for (k, v) in j.as_object().unwrap() {
            assert!(!v.is_null(), "{k} is null");
            if let Some(s) = v.as_str() {
                assert!(
                    !s.trim().is_empty() || k == "kernel_cmdline",
                    "{k} is blank"
                );
                assert!(s != "unavailable: ", "{k} has no reason");
            }
        }
        // A feature can only be ready if io_uring is.
        if !r.io_uring.is_ready() {
            let why = r.io_uring.reason().unwrap();
            for f in [
                &r.sqpoll,
                &r.defer_taskrun,
                &r.buf_ring,
                &r.multishot_recv,
                &r.send_zc,
            ] {
                assert_eq!(f.reason().unwrap(), format!("io_uring unavailable: {why}"));
            }
        }
    }
}
