//! fio jobs equivalent to `storage.randread`, one per fio engine configuration that matches a
//! ringside model, run on the same data file after ringside's cases. What makes a job the
//! matching one (each a difference that was measured to move the figures here):
//!
//! - the same file, size, block size, O_DIRECT flag and queue depth; `psync` at QD > 1 is that
//!   many jobs (threads) of one read each, like the thread pool's workers (fio has no
//!   hand-off engine: the pool's submit/wake cost is ringside's own and shows as the gap);
//! - the same CPUs: ringside pins its measured thread to the plan's measured CPU, so the
//!   psync QD1 and io_uring jobs get `--cpus_allowed=<measured>`; the thread pool's workers
//!   may use the measured and the helper CPU, so psync at QD > 1 gets both. Unpinned, fio's
//!   thread may sit on the CPU that does not take the disk's interrupt and pay a cross-CPU
//!   wake-up per read (at QD1 O_DIRECT that halves its IOPS on a VM);
//! - the same offsets: uniform random blocks with replacement from a fresh seed
//!   (`--norandommap --randrepeat=0`; fio's default random map hands out each block once);
//! - the same io_uring loop: reap every ready completion, queue the refills and submit them
//!   in one call (`--iodepth_batch_submit=QD --iodepth_batch_complete_min=1
//!   --iodepth_batch_complete_max=QD`; fio's default submits each refill with its own
//!   io_uring_enter), non-vectored reads (`--nonvectored=1`), and the ring knobs of the model
//!   (`registerfiles`, `fixedbufs`, `sqthread_poll` on the helper CPU, `hipri`);
//! - the same latency: ringside times a read from before its submission to the reap that saw
//!   it done, which is fio's `lat` (not `clat`, which starts after submission), so the jobs
//!   record `--lat_percentiles=1 --clat_percentiles=0`.
//!
//! What is not the same: fio runs time-based (`runtime_s`, since it reports IOPS from a
//! millisecond runtime) where ringside makes a fixed number of reads; fio spends user time of
//! its own per I/O (io_u bookkeeping, stats), which shows as lower IOPS where a read costs
//! about a microsecond (page-cache hits) and is recorded as CPU/op (fio's usr+sys share);
//! fio's io_uring engine submits and waits in two io_uring_enter calls where ringside makes
//! one. Parsed from `--output-format=json`: IOPS, bandwidth, lat percentiles, CPU share; fio
//! does not count syscalls, so that cell says so.
//!
//! This module runs fio and reads its report into plain figures ([`FioFigures`]); the rows of
//! the results are made by the runner (`runner::fio`), like every other row.

use crate::measure::pin::CpuPlan;
use crate::model::{Bufs, Drive, FileIo, Files, Shape, UringKnobs};
use crate::profile::Profile;
use serde_json::Value;
use std::process::Command;

/// fio's engines cross-checked for every randread point, whichever models ran.
pub(crate) const ENGINES: [&str; 2] = ["psync", "io_uring"];

/// One fio job configuration: its row name (`fio:<name>`), engine and engine options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FioJob {
    /// "io_uring+registerfiles+fixedbufs".
    pub(crate) name: String,
    pub(crate) engine: &'static str,
    /// io_uring engine options, as fio spells them.
    pub(crate) opts: Vec<&'static str>,
}

impl FioJob {
    fn plain(engine: &'static str) -> FioJob {
        FioJob {
            name: engine.to_string(),
            engine,
            opts: Vec::new(),
        }
    }

    /// The io_uring job with a model's ring knobs; `None` when fio has no equivalent
    /// (DEFER_TASKRUN) or the knobs are for sockets.
    fn uring(k: &UringKnobs) -> Option<FioJob> {
        // The knobs for sockets: the storage shape refuses them, and fio has none.
        k.runs(Shape::Storage(FileIo::Direct)).ok()?;
        // Every group named, so a new one decides here whether fio has its option.
        let UringKnobs {
            drive,
            files,
            bufs,
            rx: _,
            tx: _,
            wait: _,
            looping: _,
        } = *k;
        let mut opts = Vec::new();
        if files == Files::Registered {
            opts.push("registerfiles");
        }
        if bufs == Bufs::Registered {
            opts.push("fixedbufs");
        }
        match drive {
            Drive::Enter => {}
            Drive::Defer => return None,
            Drive::Sqpoll { .. } => opts.push("sqthread_poll"),
            Drive::Iopoll => opts.push("hipri"),
        }
        let mut name = "io_uring".to_string();
        for o in &opts {
            name.push('+');
            name.push_str(o);
        }
        Some(FioJob {
            name,
            engine: "io_uring",
            opts,
        })
    }
}

/// The fio jobs for the ring knobs of the selected randread models: psync and plain io_uring
/// always, plus the io_uring job with each model's knobs.
pub(crate) fn jobs_for<'a>(knobs: impl IntoIterator<Item = &'a UringKnobs>) -> Vec<FioJob> {
    let mut jobs: Vec<FioJob> = ENGINES.iter().map(|e| FioJob::plain(e)).collect();
    for k in knobs {
        if let Some(j) = FioJob::uring(k) {
            if !jobs.contains(&j) {
                jobs.push(j);
            }
        }
    }
    jobs
}

/// Bytes of fio's output read: its JSON report of one job is tens of KiB; more is not a report
/// (it is read and dropped, never stored).
pub(crate) const OUTPUT_MAX: usize = 4 << 20;
/// Bytes of fio's stderr kept for an error message.
const STDERR_MAX: usize = 16 << 10;
/// How long a job may run beyond its runtime before it is killed (fio lays out the file
/// first).
const OVERRUN: std::time::Duration = std::time::Duration::from_secs(120);

fn capture(within: std::time::Duration) -> crate::child::Capture {
    crate::child::Capture {
        stdout_max: OUTPUT_MAX,
        stderr_max: STDERR_MAX,
        within,
        cpus: None,
    }
}

/// Whether fio can be run, and its version ("fio-3.33").
pub(crate) fn version() -> Result<String, String> {
    let mut cmd = Command::new("fio");
    cmd.arg("--version");
    let cap = capture(std::time::Duration::from_secs(10));
    match crate::child::run_captured(cmd, &cap, |_| {}) {
        Ok(o) if o.status.success() => Ok(String::from_utf8_lossy(&o.stdout).trim().to_string()),
        Ok(o) => Err(format!("fio --version failed: {}", o.status)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err("fio not installed".into()),
        Err(e) => Err(format!("fio --version: {e}")),
    }
}

/// Seconds each fio job runs (time-based: fio reports IOPS from its ms-resolution runtime, so a
/// job of a few thousand cached reads would finish in about a millisecond and say nothing).
pub(crate) fn runtime_s(p: Profile) -> u64 {
    match p {
        Profile::Smoke => 1,
        Profile::Quick => 3,
        Profile::Full => 10,
    }
}

/// One randread point as a fio job sees it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct JobPoint {
    /// File size and block size, bytes.
    pub(crate) size: u64,
    pub(crate) bs: u64,
    /// Reads in flight (ringside's queue depth).
    pub(crate) depth: u64,
    pub(crate) direct: bool,
    /// Drop the file's cached pages first (ringside's --drop-caches).
    pub(crate) invalidate: bool,
    pub(crate) runtime_s: u64,
}

/// fio's command line for one randread point (see the module docs for why each option).
pub(crate) fn args(
    job: &FioJob,
    path: &std::path::Path,
    jp: &JobPoint,
    plan: &CpuPlan,
) -> Vec<String> {
    let JobPoint {
        size,
        bs,
        depth,
        direct,
        invalidate,
        runtime_s,
    } = *jp;
    let psync = job.engine == "psync";
    let (jobs, iodepth) = if psync { (depth, 1) } else { (1, depth) };
    // psync at QD > 1 stands for the thread pool, whose workers may use both CPUs.
    let cpus = match plan
        .helper
        .filter(|h| psync && depth > 1 && *h != plan.measured)
    {
        Some(h) => format!("{},{h}", plan.measured),
        None => plan.measured.to_string(),
    };
    let mut a: Vec<String> = vec![
        "--name=ringside-randread".into(),
        format!("--filename={}", path.display()),
        "--rw=randread".into(),
        format!("--bs={bs}"),
        format!("--size={size}"),
        format!("--ioengine={}", job.engine),
        format!("--iodepth={iodepth}"),
        format!("--numjobs={jobs}"),
        "--time_based".into(),
        format!("--runtime={runtime_s}"),
        format!("--direct={}", u8::from(direct)),
        format!("--invalidate={}", u8::from(invalidate)),
        "--norandommap".into(),
        "--randrepeat=0".into(),
        format!("--cpus_allowed={cpus}"),
        "--lat_percentiles=1".into(),
        "--clat_percentiles=0".into(),
        "--thread".into(),
        "--group_reporting".into(),
        "--output-format=json".into(),
    ];
    if job.engine == "io_uring" {
        a.push(format!("--iodepth_batch_submit={iodepth}"));
        a.push("--iodepth_batch_complete_min=1".into());
        a.push(format!("--iodepth_batch_complete_max={iodepth}"));
        a.push("--nonvectored=1".into());
        for o in &job.opts {
            a.push(format!("--{o}"));
            if *o == "sqthread_poll" {
                if let Some(h) = plan.helper {
                    a.push(format!("--sqthread_poll_cpu={h}"));
                }
            }
        }
    }
    a
}

/// Runs fio with `args` (from [`args`]) and reads its report. A job cut short, a failed fio or
/// an output that is not its report is an error naming why.
pub fn run(args: &[String], runtime_s: u64) -> Result<FioFigures, String> {
    let mut cmd = Command::new("fio");
    cmd.args(args);
    let cap = capture(std::time::Duration::from_secs(runtime_s) + OVERRUN);
    let out = crate::child::run_captured(cmd, &cap, |pid| crate::shutdown::watch_child(pid as i32));
    crate::shutdown::forget_child();
    let out = out.map_err(|e| format!("running fio: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "fio exited with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    if out.stdout_over {
        return Err(format!(
            "fio printed more than {} MiB: not its JSON report",
            OUTPUT_MAX >> 20
        ));
    }
    parse(&out.stdout)
}

/// What one fio job reported, in plain numbers.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FioFigures {
    /// Latency, ns: min, p50, p90, p99, p99.9, max, mean, stddev.
    pub(crate) lat_min: f64,
    pub(crate) lat_p50: f64,
    pub(crate) lat_p90: f64,
    pub(crate) lat_p99: f64,
    pub(crate) lat_p999: f64,
    pub(crate) lat_max: f64,
    pub(crate) lat_mean: f64,
    pub(crate) lat_stddev: f64,
    pub(crate) iops: f64,
    pub(crate) total_ios: u64,
    pub(crate) bw_kib_s: u64,
    pub(crate) ctx_switches: u64,
    /// Context switches per read.
    pub(crate) ctx_per_op: f64,
    pub(crate) clat_mean_ns: u64,
    /// CPU per read, ns: user, system.
    pub(crate) cpu_user_per_op: f64,
    pub(crate) cpu_sys_per_op: f64,
    pub(crate) cpu_total_per_op: f64,
}

/// Reads fio's JSON (first job, `group_reporting`): latency from `lat_ns` (submission to
/// completion, what ringside times), or `clat_ns` when a job was run without
/// `--lat_percentiles`.
pub(crate) fn parse(json: &[u8]) -> Result<FioFigures, String> {
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
    let clat = if rd["lat_ns"]["percentile"].is_object() {
        &rd["lat_ns"]
    } else {
        &rd["clat_ns"]
    };
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
    Ok(FioFigures {
        lat_min: f(&clat["min"])?,
        lat_p50: pct("50.000000"),
        lat_p90: pct("90.000000"),
        lat_p99: pct("99.000000"),
        lat_p999: pct("99.900000"),
        lat_max: f(&clat["max"])?,
        lat_mean: f(&clat["mean"])?,
        lat_stddev: f(&clat["stddev"])?,
        iops,
        total_ios: ios,
        bw_kib_s: rd["bw"].as_u64().unwrap_or(0),
        ctx_switches: job["ctx"].as_u64().unwrap_or(0),
        ctx_per_op: if ios == 0 {
            0.0
        } else {
            job["ctx"].as_f64().unwrap_or(0.0) / ios as f64
        },
        clat_mean_ns: rd["clat_ns"]["mean"].as_f64().unwrap_or(0.0) as u64,
        cpu_user_per_op: per(usr),
        cpu_sys_per_op: per(sys),
        cpu_total_per_op: per(usr + sys),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(id: &str) -> &'static crate::model::ModelSpec {
        crate::registry::MODELS.iter().find(|m| m.id == id).unwrap()
    }

    use crate::model::Knobs;

    fn job_for(id: &str) -> Option<FioJob> {
        match &model(id).knobs {
            Knobs::Uring(k) => FioJob::uring(k),
            _ => None,
        }
    }

    fn plan() -> CpuPlan {
        CpuPlan::pair(1, Some(0))
    }

    fn point(depth: u64) -> JobPoint {
        JobPoint {
            size: 64 << 20,
            bs: 4096,
            depth,
            direct: true,
            invalidate: false,
            runtime_s: 3,
        }
    }

    fn has(a: &[String], s: &str) -> bool {
        a.iter().any(|x| x == s)
    }

    #[test]
    fn psync_stands_for_blocking_at_qd1_and_the_pool_at_qd32() {
        let p = std::path::Path::new("/d/data.bin");
        let a = args(&FioJob::plain("psync"), p, &point(1), &plan());
        assert!(has(&a, "--numjobs=1") && has(&a, "--iodepth=1"), "{a:?}");
        assert!(
            has(&a, "--cpus_allowed=1"),
            "pinned like the measured thread: {a:?}"
        );
        let a = args(&FioJob::plain("psync"), p, &point(32), &plan());
        assert!(has(&a, "--numjobs=32") && has(&a, "--iodepth=1"), "{a:?}");
        assert!(has(&a, "--cpus_allowed=1,0"), "the pool's CPUs: {a:?}");
        assert!(!a.iter().any(|x| x.starts_with("--iodepth_batch")));
        for o in ["--norandommap", "--randrepeat=0", "--direct=1", "--thread"] {
            assert!(has(&a, o), "{o} in {a:?}");
        }
    }

    #[test]
    fn io_uring_batches_like_ringside_and_carries_the_models_knobs() {
        let p = std::path::Path::new("/d/data.bin");
        let a = args(&job_for("uring").unwrap(), p, &point(32), &plan());
        for o in [
            "--ioengine=io_uring",
            "--iodepth=32",
            "--numjobs=1",
            "--cpus_allowed=1",
            "--iodepth_batch_submit=32",
            "--iodepth_batch_complete_min=1",
            "--iodepth_batch_complete_max=32",
            "--nonvectored=1",
        ] {
            assert!(has(&a, o), "{o} in {a:?}");
        }
        assert!(!a.iter().any(|x| x == "--registerfiles" || x == "--hipri"));
        let j = job_for("uring-fixed-bufs").unwrap();
        assert_eq!(j.name, "io_uring+registerfiles+fixedbufs");
        let j = job_for("uring-sqpoll").unwrap();
        let a = args(&j, p, &point(1), &plan());
        assert!(
            has(&a, "--sqthread_poll") && has(&a, "--sqthread_poll_cpu=0"),
            "{a:?}"
        );
        assert_eq!(job_for("uring-iopoll").unwrap().opts, vec!["hipri"]);
        assert_eq!(
            job_for("uring-defer"),
            None,
            "fio has no DEFER_TASKRUN option"
        );
    }

    #[test]
    fn latency_comes_from_lat_when_fio_recorded_its_percentiles() {
        let json = br#"note: a line fio prints first
        {"jobs":[{"job_runtime":1000,"usr_cpu":10.0,"sys_cpu":40.0,"ctx":5,
          "read":{"iops":1000.0,"total_ios":1000,"bw":4000,
            "clat_ns":{"min":1,"max":9,"mean":5.0,"stddev":1.0},
            "lat_ns":{"min":2,"max":10,"mean":6.0,"stddev":1.0,
              "percentile":{"50.000000":6,"90.000000":8,"99.000000":9,"99.900000":10}}}}]}"#;
        let f = parse(json).unwrap();
        assert_eq!(f.lat_p50, 6.0);
        assert_eq!(f.lat_min, 2.0);
        assert_eq!(f.iops, 1000.0);
        // 50% of 1 s over 1000 reads.
        assert!((f.cpu_total_per_op - 500_000.0).abs() < 1.0);
    }
}
