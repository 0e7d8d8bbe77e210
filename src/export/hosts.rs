//! The hosts of a multi-host run (`run --server-host`, `--load-host`), for the environment panels: each
//! host's ringside, kernel, CPU and CPU plan, and its network path to the other side
//! (interface, loopback/veth/NIC, MTU, link speed, queues, IRQ CPUs where read).

use crate::results::schema::{HostRecord, RunResults};

/// One `(label, text)` row per host; none for a run on one host.
pub(crate) fn rows(run: &RunResults) -> Vec<(String, String)> {
    run.hosts.iter().map(|h| (label(h), text(run, h))).collect()
}

fn label(h: &HostRecord) -> String {
    if h.host == "here" {
        format!("host: {} (this one)", h.role)
    } else {
        format!("host: {} {}", h.role, h.host)
    }
}

fn text(run: &RunResults, h: &HostRecord) -> String {
    let mut parts = Vec::new();
    if let Some(e) = &h.error {
        parts.push(format!("could not be used: {e}"));
    }
    if let Some(v) = &h.ringside {
        parts.push(v.clone());
    }
    // This host's environment is the run's own.
    let env = h.env.as_ref().or((h.host == "here").then_some(&run.env));
    if let Some(e) = env {
        parts.push(format!(
            "kernel {}, {} ({} CPUs), virtualized {}",
            e.kernel_release(),
            e.cpu_model,
            e.cpus,
            e.virtualized
        ));
        // Likewise its plan.
        let plan = h.plan.as_ref().or((h.host == "here").then_some(&run.plan));
        if let (Some(p), "load") = (plan, h.role.as_str()) {
            // A load host runs no server: its load generator takes every CPU of its plan.
            let mut all = p.load_cpus();
            all.extend(p.server_cpus());
            parts.push(format!(
                "CPU plan: load {}",
                crate::measure::topology::list_string(&all)
            ));
        } else if let Some(p) = plan {
            parts.push(format!(
                "CPU plan: server {}, load {}",
                crate::measure::topology::list_string(&p.server_cpus()),
                crate::measure::topology::list_string(&p.load_cpus())
            ));
        }
    }
    if let Some(p) = &h.path {
        parts.push(format!("path: {}", p.summary()));
    }
    parts.join("; ")
}
