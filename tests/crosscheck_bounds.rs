//! What ringside reads from the cross-check tools' output is bounded: a `wrk` that prints far
//! more than a report neither blocks ringside (a child blocked on a full pipe while ringside
//! waits for its exit) nor makes it allocate what it prints, and a `fio` that does the same
//! fails its rows, naming the limit. Stand-ins named `wrk` and `fio` go first in PATH.
//!
//! One test (PATH is process-wide): this binary holds no other.

use ringside::measure::pin::{self, CpuPlan};
use ringside::plan::{self, Profile};
use ringside::results::schema::Status;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

fn script(dir: &Path, name: &str, body: &str) {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

const FIO_JSON: &str = r#"{"jobs":[{"job_runtime":1000,"usr_cpu":10.0,"sys_cpu":40.0,"ctx":5,
"read":{"iops":1000.0,"total_ios":1000,"bw":4000,
"clat_ns":{"min":1,"max":9,"mean":5.0,"stddev":1.0},
"lat_ns":{"min":2,"max":10,"mean":6.0,"stddev":1.0,
"percentile":{"50.000000":6,"90.000000":8,"99.000000":9,"99.900000":10}}}}]}"#;

#[test]
fn output_of_wrk_and_fio_is_read_bounded() {
    let fake = tempfile::tempdir().unwrap();
    let pidfile = fake.path().join("wrk.pid");
    // 64 MiB to stdout, far beyond a pipe's buffer and any report.
    script(
        fake.path(),
        "wrk",
        &format!(
            "#!/bin/sh\necho $$ > {}\nexec head -c 67108864 /dev/zero\n",
            pidfile.display()
        ),
    );
    // `fio --version` answers; a job prints 8 MiB of blanks before a valid report.
    script(
        fake.path(),
        "fio",
        &format!(
            "#!/bin/sh\nif [ \"$1\" = --version ]; then echo fio-3.99; exit 0; fi\n\
             head -c 8388608 /dev/zero | tr '\\000' ' '\ncat <<'EOF'\n{FIO_JSON}\nEOF\n"
        ),
    );
    let path = std::env::var("PATH").unwrap_or_default();
    std::env::set_var("PATH", format!("{}:{path}", fake.path().display()));

    // wrk: in a thread, so that a hang is a failure (after the stand-in is killed), not a
    // test that never ends.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let addr = "127.0.0.1:9".parse().unwrap();
        let cpu = pin::allowed_cpus()[0];
        let _ = tx.send(ringside::crosscheck::wrk::run(
            addr,
            "/",
            1,
            Duration::from_secs(1),
            cpu,
        ));
    });
    let t0 = Instant::now();
    let r = match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(r) => r,
        Err(_) => {
            if let Some(pid) = std::fs::read_to_string(&pidfile)
                .ok()
                .and_then(|s| s.trim().parse::<i32>().ok())
            {
                // SAFETY: killing the stand-in this test started (through ringside).
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            panic!("wrk::run blocked on a wrk that prints 64 MiB");
        }
    };
    let e = r.expect_err("64 MiB of zeroes is no wrk report");
    assert!(e.contains("MiB"), "names the limit: {e}");
    assert!(t0.elapsed() < Duration::from_secs(30));

    // fio: the cross-check rows of storage.randread at the smoke profile.
    let work = tempfile::tempdir().unwrap();
    let st = ringside::workload::storage::StorageCtx::prepare(work.path(), 64 << 20, false)
        .expect("a work dir");
    let w = plan::select_workloads(&["storage.randread".into()]).unwrap();
    let m = plan::select_models(Some(&["blocking".into()])).unwrap();
    let plan = CpuPlan::default_for(&pin::allowed_cpus());
    let cases = plan::expand(&w, &m, true, Profile::Smoke, &plan);
    let rows = ringside::runner::fio_randread_rows(&cases, &st, Profile::Smoke, &plan);
    let tried: Vec<_> = rows
        .iter()
        .filter(|r| r.status != Status::Unavailable)
        .collect();
    assert!(!tried.is_empty(), "{rows:?}");
    for r in tried {
        assert_eq!(r.status, Status::Failed, "{:?}", r.reason);
        let why = r.reason.as_deref().unwrap_or("");
        assert!(why.contains("MiB"), "names the limit: {why}");
    }
}
