//! The fio cross-check rows of `storage.randread`: one row per fio job for every distinct
//! randread point among the run's cases, made here like every other row (the tool runs and its
//! parser are `crosscheck::fio`'s).

use crate::crosscheck::fio::{self, FioFigures, FioJob, JobPoint};
use crate::measure::pin::CpuPlan;
use crate::measure::{Counters, Hist, Measured};
use crate::model::Knobs;
use crate::plan::Case;
use crate::profile::Profile;
use crate::results::schema::{CaseFigures, CaseResult, CpuPerOp, LatencyNs, Status};
use crate::results::{Params, Spread};
use crate::shutdown::stop_requested;
use crate::workload::storage::StorageCtx;
use serde_json::Value;

/// One row per fio job for every distinct randread point among `cases`, in the CPU plan's
/// placement. Stops (returning the rows so far) when Ctrl-C was pressed: a job cut short is
/// not a row.
pub fn randread_rows(
    cases: &[Case],
    st: &StorageCtx,
    profile: Profile,
    plan: &CpuPlan,
) -> Vec<CaseResult> {
    let randread = || {
        cases
            .iter()
            .filter(|c| c.workload.id() == "storage.randread")
    };
    let mut points: Vec<Params> = Vec::new();
    for c in randread() {
        if let Some(p) = &c.point {
            if !points.contains(&p.params) {
                points.push(p.params.clone());
            }
        }
    }
    let ver = fio::version();
    let jobs = fio::jobs_for(randread().filter_map(|c| match &c.model.knobs {
        Knobs::Uring(k) => Some(k),
        _ => None,
    }));
    let mut rows = Vec::new();
    for p in points {
        for job in &jobs {
            if stop_requested() {
                return rows;
            }
            let r = row(&p, job, st, &ver, fio::runtime_s(profile), plan);
            if stop_requested() {
                return rows;
            }
            rows.push(r);
        }
    }
    rows
}

fn row(
    p: &Params,
    job: &FioJob,
    st: &StorageCtx,
    ver: &Result<String, String>,
    runtime_s: u64,
    plan: &CpuPlan,
) -> CaseResult {
    let mut r = CaseResult {
        workload: "storage.randread".into(),
        model: format!("fio:{}", job.name),
        variant: None,
        params: p.clone(),
        equal_load: None,
        facts: st.facts().clone(),
        status: Status::Measured,
        reason: None,
        op: "one 4 KiB random read, as fio counts it (latency: fio's lat, submission to \
             completion)"
            .into(),
        knobs: serde_json::json!({ "fio_engine": job.engine, "fio_options": job.opts }),
        sqpoll_cpu: None,
        warmups: 0,
        repetitions: 1,
        rate_per_sec: None,
        scaling_efficiency: None,
        capacity_probe: false,
        explain: None,
        runs_started_unix_ns: Vec::new(),
        runs_order: Vec::new(),
        reruns: Vec::new(),
        disturbance: None,
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
    if job.opts.contains(&"hipri") {
        if !direct {
            return fail(
                r,
                Status::NotApplicable,
                "hipri (polled completions) needs O_DIRECT".into(),
            );
        }
        if let Err(why) = &st.fs.dev_polls {
            return fail(r, Status::Unavailable, why.clone());
        }
    }
    if job.opts.contains(&"sqthread_poll") && plan.shared() {
        return fail(
            r,
            Status::Unavailable,
            "sqthread_poll needs a helper CPU apart from the measured one (pass --cpus A,B)".into(),
        );
    }
    if job.engine == "psync" && depth > 1 {
        r.knobs["note"] = "numjobs threads each making blocking preads: no hand-off".into();
    }
    let path = match st.data_file_for_crosscheck(size) {
        Ok(p) => p,
        Err(e) => return fail(r, Status::Failed, format!("data file: {e}")),
    };
    let jp = JobPoint {
        size,
        bs,
        depth,
        direct,
        invalidate: st.drop_caches,
        runtime_s,
    };
    let a = fio::args(job, &path, &jp, plan);
    r.knobs["fio_args"] = a.clone().into();
    r.knobs["runtime_s"] = runtime_s.into();
    match fio::run(&a, runtime_s) {
        Ok(f) => {
            r.figures = Some(figures(&f));
            r
        }
        Err(why) => fail(r, Status::Failed, why),
    }
}

/// One fio job's figures as a case's: one repetition, no syscall count.
pub(crate) fn figures(f: &FioFigures) -> CaseFigures {
    let mut counters = Counters::default();
    counters.add("fio_total_ios", f.total_ios);
    counters.add("fio_bw_kib_s", f.bw_kib_s);
    counters.add("fio_ctx_switches", f.ctx_switches);
    counters.add("fio_clat_mean_ns", f.clat_mean_ns);
    let one = |x: f64| Spread {
        median: x,
        min: x,
        max: x,
        mad: 0.0,
    };
    CaseFigures {
        latency_ns: LatencyNs {
            min: f.lat_min,
            p50: f.lat_p50,
            p90: f.lat_p90,
            p99: f.lat_p99,
            p999: f.lat_p999,
            max: f.lat_max,
            mean: f.lat_mean,
            stddev: f.lat_stddev,
        },
        run_p50_ns: one(f.lat_p50),
        ops_per_sec: one(f.iops),
        runs_p50_ns: vec![f.lat_p50],
        runs_ops_per_sec: vec![f.iops],
        runs_cpu_ns_per_op: Vec::new(),
        runs_p99_ns: Vec::new(),
        runs_timeline: Vec::new(),
        p99_tail_min: 0,
        claim_alpha: crate::stats::claims::ALPHA,
        looks: None,
        ci95: None,
        cpu_ns_per_op: CpuPerOp {
            total: f.cpu_total_per_op,
            user: Measured::Value(f.cpu_user_per_op),
            sys: Measured::Value(f.cpu_sys_per_op),
        },
        ctx_switches_per_op: f.ctx_per_op,
        syscalls_per_op: Measured::unavailable("fio does not count syscalls").into(),
        uring_per_op: None,
        idle_memory: None,
        uring_per_op_unavailable: None,
        ops_total: f.total_ios,
        bytes_per_sec: 0.0,
        cpu_busy: 0.0,
        counters: counters.into(),
        histogram: Hist::new().to_base64(),
    }
}
