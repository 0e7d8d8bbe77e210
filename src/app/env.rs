//! `ringside env`: what this machine, kernel and user allow, and why.
//!
//! Glue only: [`crate::env::probe`] decides everything; this prints it as pretty JSON or as an
//! aligned `name: value` listing grouped by subject. Unavailable features are information, not
//! errors: the exit code stays 0.

use crate::env::{EnvReport, Reading, RlimitPair};
use std::fmt::Display;

/// Prints the environment report: pretty JSON with `json`, else a grouped listing.
pub fn run(json: bool) -> anyhow::Result<()> {
    let report = crate::env::probe();
    let out = if json {
        serde_json::to_string_pretty(&report)? + "\n"
    } else {
        render(&report) + &noise_now()
    };
    super::stdout::print(&out)?;
    Ok(())
}

/// A third of a second's look at the CPUs a run may use: what other programs and steal take
/// of them now, and other ringside processes (another run would share them).
fn noise_now() -> String {
    use crate::measure::disturb;
    let cpus = crate::measure::pin::allowed_cpus();
    let d = disturb::look(&cpus, std::time::Duration::from_millis(300));
    let mut r = crate::results::schema::NoiseRecord::of(&d);
    r.other_ringside = disturb::other_ringside();
    let verdict = super::run::noise_line(&r).unwrap_or_else(|| {
        "quiet enough: a repetition is re-run when others take more than 5% of the plan's CPUs"
            .into()
    });
    format!(
        "\nnoise now (0.3 s look)\n  other programs and steal: {:.1}% of {} CPU(s){}\n  {verdict}\n",
        r.share * 100.0,
        cpus.len(),
        r.top
            .as_ref()
            .map(|t| format!(" (most: {t})"))
            .unwrap_or_default()
    )
}

type Group = (&'static str, Vec<(String, String)>);

/// The listing: one heading per group, one `name: value` line per fact, names aligned.
pub(crate) fn render(r: &EnvReport) -> String {
    let groups = groups(r);
    let width = groups
        .iter()
        .flat_map(|(_, rows)| rows.iter().map(|(n, _)| n.len()))
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for (i, (title, rows)) in groups.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out += title;
        out += "\n";
        for (name, value) in rows {
            out += &format!(
                "  {:<width$}  {value}\n",
                format!("{name}:"),
                width = width + 1
            );
        }
    }
    out
}

fn groups(r: &EnvReport) -> Vec<Group> {
    let v = &r.virtualization;
    let machine = vec![
        row("cpus", r.cpus),
        row("cpu_online_list", &r.cpu_online_list),
        row("cpu_affinity_list", &r.cpu_affinity_list),
        row("cpu_model", &r.cpu_model),
        row("smt_active", &r.smt_active),
        row("smt_control", &r.smt_control),
        row("governor", &r.governor),
        row("virtualized", &r.virtualized),
        row("hypervisor_cpu_flag", &v.hypervisor_cpu_flag),
        row("hypervisor_type", &v.hypervisor_type),
        row("dmi_sys_vendor", &v.dmi_sys_vendor),
        row("dmi_product_name", &v.dmi_product_name),
        row("container_hints", list(&v.container_hints)),
    ];

    let mut kernel = vec![
        row("kernel_release", &r.kernel_release),
        row("kernel_build", &r.kernel_build),
        row("kernel_cmdline", &r.kernel_cmdline),
    ];
    match &r.mitigations {
        Reading::Value(m) => kernel.extend(
            m.iter()
                .map(|(name, text)| (format!("mitigations.{name}"), text.clone())),
        ),
        Reading::Unavailable(why) => kernel.push(row("mitigations", format!("unavailable: {why}"))),
    }

    let limits = vec![
        row("euid", r.euid),
        row("capabilities", reading_with(&r.capabilities, |c| list(c))),
        row(
            "rlimit_memlock_bytes",
            reading_with(&r.rlimit_memlock_bytes, pair),
        ),
        row(
            "rlimit_nofile_count",
            reading_with(&r.rlimit_nofile_count, pair),
        ),
        row(
            "seccomp_mode",
            reading_with(&r.seccomp_mode, |m| match m {
                0 => "0 (none)".to_string(),
                1 => "1 (strict)".to_string(),
                2 => "2 (filter)".to_string(),
                n => n.to_string(),
            }),
        ),
        row("seccomp_filters", &r.seccomp_filters),
        row("no_new_privs", &r.no_new_privs),
    ];

    let mut uring = vec![
        row(
            "io_uring_disabled",
            reading_with(&r.io_uring_disabled, |d| match d {
                0 => "0 (allowed)".to_string(),
                1 => "1 (only io_uring_group and CAP_SYS_ADMIN)".to_string(),
                2 => "2 (disabled)".to_string(),
                n => n.to_string(),
            }),
        ),
        row(
            "io_uring_group",
            reading_with(&r.io_uring_group, |g| match g {
                -1 => "-1 (none)".to_string(),
                g => g.to_string(),
            }),
        ),
        row("io_uring", &r.io_uring),
        row("sqpoll", &r.sqpoll),
        row("defer_taskrun", &r.defer_taskrun),
        row("registered_files", &r.registered_files),
        row("registered_buffers", &r.registered_buffers),
        row("buf_ring", &r.buf_ring),
        row("multishot_recv", &r.multishot_recv),
        row("multishot_accept", &r.multishot_accept),
        row("send_zc", &r.send_zc),
        row(
            "io_uring_features",
            reading_with(&r.io_uring_features, |f| list(f)),
        ),
    ];
    match &r.io_uring_opcodes {
        Reading::Value(ops) => {
            let names = |want: bool| {
                ops.iter()
                    .filter(|(_, &s)| s == want)
                    .map(|(n, _)| n.clone())
                    .collect::<Vec<_>>()
            };
            uring.push(row("io_uring_opcodes.supported", list(&names(true))));
            uring.push(row("io_uring_opcodes.missing", list(&names(false))));
        }
        Reading::Unavailable(why) => {
            uring.push(row("io_uring_opcodes", format!("unavailable: {why}")))
        }
    }

    // io_uring after 6.1: one line per feature, its kernel, whether it works here, the crate.
    let modern = r
        .io_uring_modern
        .iter()
        .map(|f| {
            (
                format!("{} (kernel {})", f.name, f.kernel),
                format!(
                    "{}  [{}: {}]",
                    f.here,
                    crate::env::uring::modern::CRATE,
                    f.crate_api
                ),
            )
        })
        .collect();

    let perf = vec![
        row("perf_event_paranoid", &r.perf_event_paranoid),
        row("perf_syscalls", &r.perf_syscalls),
        row(
            "contender_cpu",
            r.contender_cpu.as_deref().unwrap_or("not recorded"),
        ),
    ];

    vec![
        ("machine", machine),
        ("kernel & mitigations", kernel),
        ("limits", limits),
        ("io_uring", uring),
        ("io_uring after 6.1", modern),
        ("perf", perf),
    ]
}

fn row(name: &str, value: impl Display) -> (String, String) {
    (name.to_string(), value.to_string())
}

fn reading_with<T>(r: &Reading<T>, f: impl FnOnce(&T) -> String) -> String {
    match r {
        Reading::Value(v) => f(v),
        Reading::Unavailable(why) => format!("unavailable: {why}"),
    }
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}

fn pair(p: &RlimitPair) -> String {
    format!("soft {}, hard {}", p.soft, p.hard)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listing_shows_every_group_and_reason() {
        let r = crate::env::probe();
        let text = render(&r);
        for heading in [
            "machine\n",
            "kernel & mitigations\n",
            "limits\n",
            "io_uring\n",
            "io_uring after 6.1\n",
            "perf\n",
        ] {
            assert!(text.contains(heading), "{heading:?} missing from\n{text}");
        }
        for name in [
            "cpus:",
            "io_uring:",
            "sqpoll:",
            "send_zc:",
            "perf_syscalls:",
            "contender_cpu:",
            "rlimit_memlock_bytes:",
            "recvsend_bundle (kernel 6.10):",
            "hybrid_iopoll (kernel 6.13):",
            "recv_zc (kernel 6.15):",
        ] {
            assert!(text.contains(name), "{name} missing");
        }
        if let Some(why) = r.io_uring.reason() {
            assert!(text.contains(why));
        }
    }
}
