//! What else differs between the runs: the environment and plan facts, and the
//! calibration probes' drift.

use super::*;

/// Flattens a JSON value into ("a.b.c", "value") rows.
pub(crate) fn flatten(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, String)>) {
    use serde_json::Value;
    let key = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    };
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        x => x.to_string(),
    };
    match v {
        Value::Object(m) if m.len() == 1 && m.contains_key("unavailable") => out.push((
            prefix.to_string(),
            format!("unavailable: {}", text(&m["unavailable"])),
        )),
        Value::Object(m) => {
            for (k, x) in m {
                flatten(&key(k), x, out);
            }
        }
        Value::Array(a) if a.iter().all(|x| !x.is_object() && !x.is_array()) => out.push((
            prefix.to_string(),
            a.iter().map(text).collect::<Vec<_>>().join(", "),
        )),
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                flatten(&key(&i.to_string()), x, out);
            }
        }
        x => out.push((prefix.to_string(), text(x))),
    }
}

/// The facts of a run that can explain a difference: the environment, ringside's version,
/// the profile, the CPU plan, the clocksource and the command's flags.
pub(super) fn context(run: &RunResults) -> Vec<(String, String)> {
    let v = serde_json::json!({
        "ringside": run.ringside,
        "profile": run.profile,
        "plan": run.plan,
        "clocksource": run.timer.clocksource,
        "flags": run.command.iter().skip(1).cloned().collect::<Vec<_>>().join(" "),
        "env": run.env,
        // A multi-host run's other hosts, by role: their env and network path diff too. Load
        // hosts (`--load-host`, repeatable) by their place in the list.
        "hosts": run.hosts.iter().scan(0, |n, h| {
            let key = if h.role == "load" {
                *n += 1;
                format!("load{n}")
            } else {
                h.role.clone()
            };
            Some((key, h))
        }).collect::<std::collections::BTreeMap<_, _>>(),
    });
    let mut out = Vec::new();
    flatten("", &v, &mut out);
    out
}

/// The probes of both runs compared (`None` when either run has none: files written before
/// rounds were kept).
pub(crate) fn probe_drift(base: &RunResults, new: &RunResults) -> Option<ProbeDrift> {
    let (bs, bw) = crate::stats::stability::probe_rounds(base);
    let (ns, nw) = crate::stats::stability::probe_rounds(new);
    if bs.is_empty() || ns.is_empty() {
        return None;
    }
    let mut d = ProbeDrift::default();
    for (name, b, n) in [("syscall", &bs, &ns), ("wake-up", &bw, &nw)] {
        if b.is_empty() || n.is_empty() {
            continue;
        }
        let (mb, mn) = (median(b), median(n));
        let pct = if mb > 0.0 {
            (mn - mb) / mb * 100.0
        } else {
            0.0
        };
        let p = mann_whitney(b, n);
        if pct.abs() > PROBE_DRIFT * 100.0 && p.is_some_and(|p| p < ALPHA) {
            d.drift_pct = d.drift_pct.max(pct.abs());
            if name == "wake-up" {
                d.wake_pct = Some(pct);
            }
        }
        d.probes.push((name, mb, mn, pct, p));
        for (which, v) in [("BASE", b), ("NEW", n)] {
            d.within
                .extend(crate::stats::stability::state_change(v, name, which));
        }
    }
    Some(d)
}

/// The environment and plan facts that differ between the runs: (key, BASE, NEW).
pub(super) fn env_diff(base: &RunResults, new: &RunResults) -> Vec<(String, String, String)> {
    let mut diff = Vec::new();
    let (cb, cn) = (context(base), context(new));
    for (k, vb) in &cb {
        let vn = cn
            .iter()
            .find(|(kn, _)| kn == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| "(absent)".into());
        if *vb != vn {
            diff.push((k.clone(), vb.clone(), vn));
        }
    }
    for (k, vn) in &cn {
        if !cb.iter().any(|(kb, _)| kb == k) {
            diff.push((k.clone(), "(absent)".into(), vn.clone()));
        }
    }
    diff
}
