//! fio jobs equivalent to `storage.randread`: the same data file, block size, queue depth and
//! O_DIRECT flag (time-based: `runtime_s`), with fio's `psync` engine (QD > 1: that many jobs of one
//! read each, like ringside's thread pool) and its `io_uring` engine (`iodepth` = QD).
//! Parsed from `--output-format=json`: IOPS, bandwidth, completion-latency percentiles
//! (clat_ns), and the job's CPU share; fio does not count syscalls, so that cell says so.

use crate::measure::{Counters, Hist, Measured};
use crate::plan::{Case, Profile};
use crate::results::schema::{CaseFigures, CaseResult, CpuPerOp, LatencyNs, Status};
use crate::stats::summary::Spread;
use crate::workload::storage::StorageCtx;
use crate::workload::Params;
use serde_json::Value;
use std::process::Command;

/// fio's engines cross-checked.
pub const ENGINES: [&str; 2] = ["psync", "io_uring"];

/// Whether fio can be run, and its version ("fio-3.33").
pub fn version() -> Result<String, String> {
    match Command::new("fio").arg("--version").output() {
        Ok(o) if o.status.success() => Ok(String::from_utf8_lossy(&o.stdout).trim().to_string()),
        Ok(o) => Err(format!("fio --version failed: {}", o.status)),
        Err(_) => Err("fio not installed".into()),
    }
}

/// One row per fio engine for every distinct randread point among `cases`.
pub fn randread_rows(cases: &[Case], st: &StorageCtx, profile: Profile) -> Vec<CaseResult> {
    let mut points: Vec<Params> = Vec::new();
    for c in cases {
        if c.workload.id() != "storage.randread" {
            continue;
        }
        if let Some(p) = &c.point {
            if !points.contains(&p.params) {
                points.push(p.params.clone());
            }
        }
    }
    let ver = version();
    let mut rows = Vec::new();
    for p in points {
        for engine in ENGINES {
            rows.push(row(&p, engine, st, &ver, runtime_s(profile)));
        }
    }
    rows
}

/// Seconds each fio job runs (time-based: fio reports IOPS from its ms-resolution runtime, so a
/// job of a few thousand cached reads would finish in about a millisecond and say nothing).
pub fn runtime_s(p: Profile) -> u64 {
    match p {
        Profile::Smoke => 1,
        Profile::Quick => 3,
        Profile::Full => 10,
    }
}

fn row(
    p: &Params,
    engine: &str,
    st: &StorageCtx,
    ver: &Result<String, String>,
    runtime_s: u64,
) -> CaseResult {
    let mut r = CaseResult {
        workload: "storage.randread".into(),
        model: format!("fio:{engine}"),
        variant: None,
        params: p.clone(),
        status: Status::Measured,
        reason: None,
        op: "one 4 KiB random read, as fio counts it (completion latency: clat)".into(),
        knobs: serde_json::json!({ "fio_engine": engine }),
        sqpoll_cpu: None,
        warmups: 0,
        repetitions: 1,
        figures: None,
        warnings: Vec::new(),
    };
    let fail = |mut r: CaseResult, status: Status, why: String| {
        r.status = status;
        r.reason = Some(why);
        r.repetitions = 0;
        r
    };
    let ver = match ver {
        Ok(v) => v.clone(),
        Err(why) => return fail(r, Status::Unavailable, why.clone()),
    };
    r.knobs["fio_version"] = ver.into();
    let direct = p.0.get("direct").and_then(Value::as_bool) == Some(true);
    if direct && st.fs.o_direct.is_err() {
        return fail(
            r,
            Status::Unavailable,
            "O_DIRECT refused on this filesystem".into(),
        );
    }
    let get = |k: &str| p.0.get(k).and_then(Value::as_u64).unwrap_or(0);
    let (size, bs, depth) = (get("file_bytes"), get("block_bytes"), get("depth").max(1));
    let path = match st.data_file_for_crosscheck(size) {
        Ok(p) => p,
        Err(e) => return fail(r, Status::Failed, format!("data file: {e}")),
    };
    let (jobs, iodepth) = if engine == "psync" {
        (depth, 1)
    } else {
        (1, depth)
    };
    r.knobs["numjobs"] = jobs.into();
    r.knobs["runtime_s"] = runtime_s.into();
    r.knobs["iodepth"] = iodepth.into();
    let out = Command::new("fio")
        .args([
            "--name=ringside-randread",
            &format!("--filename={}", path.display()),
            "--rw=randread",
            &format!("--bs={bs}"),
            &format!("--size={size}"),
            &format!("--ioengine={engine}"),
            &format!("--iodepth={iodepth}"),
            &format!("--numjobs={jobs}"),
            "--time_based",
            &format!("--runtime={runtime_s}"),
            &format!("--direct={}", u8::from(direct)),
            &format!("--invalidate={}", u8::from(st.drop_caches)),
            "--thread",
            "--group_reporting",
            "--output-format=json",
        ])
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) => return fail(r, Status::Failed, format!("running fio: {e}")),
    };
    if !out.status.success() {
        return fail(
            r,
            Status::Failed,
            format!(
                "fio exited with {}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        );
    }
    match parse(&out.stdout) {
        Ok(f) => {
            r.figures = Some(f);
            r
        }
        Err(why) => fail(r, Status::Failed, why),
    }
}

/// Maps fio's JSON (first job, `group_reporting`) to case figures.
pub fn parse(json: &[u8]) -> Result<CaseFigures, String> {
    // fio may print notes before the JSON object.
    let s = String::from_utf8_lossy(json);
    let start = s.find('{').ok_or("no JSON in fio's output")?;
    let v: Value = serde_json::from_str(&s[start..]).map_err(|e| format!("fio JSON: {e}"))?;
    let job = &v["jobs"][0];
    let rd = &job["read"];
    let f = |x: &Value| {
        x.as_f64()
            .ok_or_else(|| format!("fio JSON lacks a figure: {x}"))
    };
    let iops = f(&rd["iops"])?;
    let ios = rd["total_ios"].as_u64().unwrap_or(0);
    let clat = &rd["clat_ns"];
    let pct = |k: &str| clat["percentile"][k].as_f64().unwrap_or(f64::NAN);
    let runtime_ms = f(&job["job_runtime"]).or_else(|_| f(&rd["runtime"]))?;
    let (usr, sys) = (f(&job["usr_cpu"])?, f(&job["sys_cpu"])?);
    // fio reports CPU as % of the job's runtime; per read = share x runtime / reads.
    let per = |pc: f64| {
        if ios == 0 {
            0.0
        } else {
            pc / 100.0 * runtime_ms * 1e6 / ios as f64
        }
    };
    let p50 = pct("50.000000");
    let mut counters = Counters::default();
    counters.add("fio_total_ios", ios);
    counters.add("fio_bw_kib_s", rd["bw"].as_u64().unwrap_or(0));
    counters.add("fio_ctx_switches", job["ctx"].as_u64().unwrap_or(0));
    let one = |x: f64| Spread {
        median: x,
        min: x,
        max: x,
        mad: 0.0,
    };
    Ok(CaseFigures {
        latency_ns: LatencyNs {
            min: f(&clat["min"])?,
            p50,
            p90: pct("90.000000"),
            p99: pct("99.000000"),
            p999: pct("99.900000"),
            max: f(&clat["max"])?,
            mean: f(&clat["mean"])?,
            stddev: f(&clat["stddev"])?,
        },
        run_p50_ns: one(p50),
        ops_per_sec: one(iops),
        runs_p50_ns: vec![p50],
        runs_ops_per_sec: vec![iops],
        cpu_ns_per_op: CpuPerOp {
            total: per(usr + sys),
            user: Measured::Value(per(usr)),
            sys: Measured::Value(per(sys)),
        },
        ctx_switches_per_op: if ios == 0 {
            0.0
        } else {
            job["ctx"].as_f64().unwrap_or(0.0) / ios as f64
        },
        syscalls_per_op: Measured::unavailable("fio does not count syscalls"),
        ops_total: ios,
        bytes_per_sec: 0.0,
        cpu_busy: 0.0,
        counters,
        histogram: Hist::new().to_base64(),
    })
}
