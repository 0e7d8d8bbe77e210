//! `ringside compare`'s words, pinned: the exact stdout (and exit status) of two-file and
//! many-file comparisons built from `tests/fixtures/results.json` and the synthetic echo.rate
//! runs of `compare_gate`, against golden files (`tests/fixtures/golden/compare_*.txt`). Each
//! golden holds one scenario's invocations, each under a `$ ringside compare ...` line with
//! its exit status. The files are written into a temporary directory and named relative to
//! it (the command runs there), so no path of this machine shows.
//!
//! After an intended change of wording, regenerate them with
//! `RINGSIDE_BLESS=1 cargo test --release --test suite compare_golden` and review the diff.

use crate::common;

use super::compare_gate::{
    echo_rate, keep_runs, load, same, save, scale_cell, uring_cpu_10pct, warn_disturbed,
};
use super::export_golden::golden;
use common::bin::ringside;
use serde_json::Value;
use std::path::Path;

/// One scenario's invocations, in order, as the golden holds them.
struct Log {
    dir: tempfile::TempDir,
    text: String,
}

impl Log {
    fn new() -> Log {
        Log {
            dir: tempfile::tempdir().unwrap(),
            text: String::new(),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Saves `v` as `name` in the scenario's directory.
    fn file(&self, name: &str, v: &Value) {
        save(self.path(), name, v);
    }

    /// `ringside compare ARGS` run in the scenario's directory: its exit status and stdout,
    /// appended to the log.
    fn compare(&mut self, args: &[&str]) -> i32 {
        let o = ringside()
            .current_dir(self.path())
            .arg("compare")
            .args(args)
            .output()
            .unwrap();
        let code = o.status.code().unwrap_or(-1);
        self.text += &format!(
            "$ ringside compare {}\n[exit {code}]\n{}\n",
            args.join(" "),
            String::from_utf8_lossy(&o.stdout)
        );
        code
    }

    /// A file the scenario wrote (compare --out's), appended to the log.
    fn show(&mut self, name: &str) {
        let text = std::fs::read_to_string(self.path().join(name)).unwrap();
        self.text += &format!("$ cat {name}\n{text}\n");
    }

    fn check(self, golden_name: &str) {
        golden(golden_name, self.text.as_bytes());
    }
}

/// Scales every per-repetition value of the cells `pick` chooses: latency by `by`, ops/s by
/// its inverse.
fn slow_cells(v: &mut Value, by: f64, pick: impl Fn(&Value) -> bool) {
    for c in v["cases"].as_array_mut().unwrap() {
        if !pick(c) {
            continue;
        }
        for (f, k) in [("runs_p50_ns", by), ("runs_ops_per_sec", 1.0 / by)] {
            for x in c[f].as_array_mut().into_iter().flatten() {
                *x = (x.as_f64().unwrap() * k).into();
            }
        }
    }
}

fn cell(c: &Value, workload: &str, model: &str) -> bool {
    c["workload"] == workload && c["model"] == model
}

#[test]
fn compare_golden_known_regression() {
    let mut log = Log::new();
    log.file("base.json", &load());
    // uring and epoll-lt on pipes at both sizes 30% slower: confirmed regressions.
    let mut slow = load();
    slow_cells(&mut slow, 1.3, |c| {
        cell(c, "micro.pipe", "uring") || cell(c, "micro.pipe", "epoll-lt")
    });
    log.file("slow.json", &slow);
    assert_eq!(log.compare(&["base.json", "slow.json"]), 1);
    // The same under a 40% threshold: not a regression, and not a pass either.
    assert_eq!(
        log.compare(&["base.json", "slow.json", "--threshold", "40"]),
        3
    );
    // One cell alone 30% slower at a point of four models.
    let mut lone = load();
    slow_cells(&mut lone, 1.3, |c| {
        cell(c, "micro.pipe", "uring") && c["params"]["msg_bytes"] == 64
    });
    log.file("lone.json", &lone);
    assert_eq!(log.compare(&["base.json", "lone.json"]), 1);
    log.check("compare_regression.txt");
}

#[test]
fn compare_golden_lone_model() {
    // A model alone at its point (micro.syscall) 30% slower: a lone change among every test
    // that six repetitions a side cannot confirm.
    let mut log = Log::new();
    log.file("base.json", &load());
    let mut alone = load();
    slow_cells(&mut alone, 1.3, |c| cell(c, "micro.syscall", "blocking"));
    log.file("alone.json", &alone);
    assert_eq!(log.compare(&["base.json", "alone.json"]), 3);
    log.check("compare_lone_model.txt");
}

#[test]
fn compare_golden_pure_noise() {
    // A/A: every run jittered by +-0.3% and reordered; the first cell dropped from NEW.
    let mut log = Log::new();
    log.file("base.json", &load());
    let mut noisy = load();
    for c in noisy["cases"].as_array_mut().unwrap() {
        for f in ["runs_p50_ns", "runs_ops_per_sec"] {
            if let Some(a) = c.get_mut(f).and_then(|a| a.as_array_mut()) {
                for (i, x) in a.iter_mut().enumerate() {
                    let by = if i % 2 == 0 { 1.003 } else { 0.997 };
                    *x = (x.as_f64().unwrap() * by).into();
                }
                a.reverse();
            }
        }
    }
    noisy["cases"].as_array_mut().unwrap().remove(0);
    log.file("noisy.json", &noisy);
    assert_eq!(log.compare(&["base.json", "noisy.json"]), 3);
    assert_eq!(
        log.compare(&["base.json", "noisy.json", "--allow-untested"]),
        0
    );
    // And the other way round: a cell only NEW has.
    assert_eq!(log.compare(&["noisy.json", "base.json"]), 3);
    log.check("compare_noise.txt");
}

#[test]
fn compare_golden_too_few_repetitions() {
    let mut log = Log::new();
    for n in [3, 4] {
        let mut base = load();
        keep_runs(&mut base, n);
        let mut new = base.clone();
        scale_cell(&mut new, "micro.pipe", "uring", 64, 2.0);
        log.file(&format!("b{n}.json"), &base);
        log.file(&format!("n{n}.json"), &new);
    }
    assert_eq!(log.compare(&["b3.json", "n3.json"]), 3);
    assert_eq!(log.compare(&["b3.json", "b3.json"]), 3);
    assert_eq!(log.compare(&["b3.json", "n3.json", "--allow-untested"]), 0);
    assert_eq!(log.compare(&["b4.json", "n4.json"]), 3);
    // Three repetitions against four.
    assert_eq!(log.compare(&["b3.json", "n4.json"]), 3);
    log.check("compare_few_reps.txt");
}

#[test]
fn compare_golden_untested_without_values() {
    // Files without per-repetition values: a 3x slowdown cannot be tested.
    let mut log = Log::new();
    let mut base = load();
    for c in base["cases"].as_array_mut().unwrap() {
        if let Some(o) = c.as_object_mut() {
            for f in [
                "runs_p50_ns",
                "runs_ops_per_sec",
                "runs_cpu_ns_per_op",
                "runs_p99_ns",
            ] {
                o.remove(f);
            }
        }
    }
    let mut new = base.clone();
    for c in new["cases"].as_array_mut().unwrap() {
        if cell(c, "micro.pipe", "uring") && c["params"]["msg_bytes"] == 64 {
            for k in ["median", "min", "max"] {
                let x = c["run_p50_ns"][k].as_f64().unwrap();
                c["run_p50_ns"][k] = (x * 3.0).into();
                let y = c["ops_per_sec"][k].as_f64().unwrap();
                c["ops_per_sec"][k] = (y / 3.0).into();
            }
        }
    }
    log.file("b.json", &base);
    log.file("n.json", &new);
    assert_eq!(log.compare(&["b.json", "n.json"]), 3);
    // One side with values, the other without.
    log.file("full.json", &load());
    assert_eq!(log.compare(&["full.json", "n.json"]), 3);
    log.check("compare_no_values.txt");
}

#[test]
fn compare_golden_machine_drift() {
    // Every cell of NEW 30% slower, the calibration probes moved as much; then the same with
    // probes that did not move.
    let mut log = Log::new();
    let probe = |sys: f64, wake: f64| -> Value {
        (0..12)
            .map(|k| {
                serde_json::json!({"workload": "micro.pipe", "params": {}, "round": k,
                    "order": [], "probe": {"syscall_ns": sys + k as f64, "wake_ns": wake + k as f64}})
            })
            .collect::<Vec<_>>()
            .into()
    };
    let mut base = load();
    base["rounds"] = probe(110.0, 30_000.0);
    let mut new = base.clone();
    slow_cells(&mut new, 1.3, |_| true);
    new["rounds"] = probe(143.0, 39_000.0);
    log.file("b.json", &base);
    log.file("n.json", &new);
    assert_eq!(log.compare(&["b.json", "n.json"]), 3);
    new["rounds"] = probe(110.0, 30_000.0);
    log.file("n2.json", &new);
    assert_eq!(log.compare(&["b.json", "n2.json"]), 3);
    log.check("compare_machine.txt");
}

#[test]
fn compare_golden_not_compared_cells() {
    let mut log = Log::new();
    let base = load();
    log.file("base.json", &base);
    // Disturbed in NEW.
    let mut disturbed = base.clone();
    scale_cell(&mut disturbed, "micro.pipe", "uring", 64, 2.0);
    warn_disturbed(&mut disturbed, |c| {
        cell(c, "micro.pipe", "uring") && c["params"]["msg_bytes"] == 64
    });
    log.file("disturbed.json", &disturbed);
    assert_eq!(log.compare(&["base.json", "disturbed.json"]), 3);
    // A measured cell that failed in NEW.
    let mut failed = base.clone();
    for c in failed["cases"].as_array_mut().unwrap() {
        if cell(c, "micro.pipe", "epoll-lt") && c["params"]["msg_bytes"] == 64 {
            let o = c.as_object_mut().unwrap();
            o.retain(|k, _| {
                [
                    "workload", "model", "params", "op", "knobs", "warmups", "warnings",
                ]
                .contains(&k.as_str())
            });
            o.insert("status".into(), "failed".into());
            o.insert("reason".into(), "server died during the run".into());
            o.insert("repetitions".into(), 0.into());
        }
    }
    log.file("failed.json", &failed);
    assert_eq!(log.compare(&["base.json", "failed.json"]), 1);
    // Nothing in common.
    let only = |w: &str| {
        let mut v = base.clone();
        v["cases"]
            .as_array_mut()
            .unwrap()
            .retain(|c| c["workload"] == w);
        v
    };
    log.file("pipe.json", &only("micro.pipe"));
    log.file("syscall.json", &only("micro.syscall"));
    assert_eq!(log.compare(&["pipe.json", "syscall.json"]), 2);
    assert_eq!(
        log.compare(&["pipe.json", "syscall.json", "--allow-untested"]),
        2
    );
    // An unfinished NEW, then an unfinished BASE.
    let mut unfinished = base.clone();
    unfinished["finished"] = false.into();
    log.file("unfinished.json", &unfinished);
    assert_eq!(log.compare(&["base.json", "unfinished.json"]), 3);
    assert_eq!(
        log.compare(&["unfinished.json", "base.json", "--allow-untested"]),
        0
    );
    log.check("compare_not_compared.txt");
}

#[test]
fn compare_golden_echo_gate() {
    let mut log = Log::new();
    // A/A with low noise: PASS with power.
    log.file("a.json", &echo_rate(1, 12, 0.0, same, |_| {}));
    log.file("b.json", &echo_rate(2, 12, 0.0, same, |_| {}));
    assert_eq!(log.compare(&["a.json", "b.json"]), 0);
    // A 10% CPU change on two cells, one disturbed: the noise cannot be estimated.
    let few = |v: &mut Value| {
        v["cases"].as_array_mut().unwrap().retain(|c| {
            c["params"]["rate_per_sec"] == 10_000
                && (c["model"] == "uring" || c["model"] == "epoll-lt")
        });
        warn_disturbed(v, |c| c["model"] == "epoll-lt");
    };
    log.file("few_a.json", &echo_rate(3, 6, 0.03, same, few));
    log.file("few_b.json", &echo_rate(4, 6, 0.03, uring_cpu_10pct, few));
    assert_eq!(log.compare(&["few_a.json", "few_b.json"]), 3);
    assert_eq!(
        log.compare(&["few_a.json", "few_b.json", "--allow-untested"]),
        0
    );
    // 4% noise between runs: too high for 5%.
    log.file("n4_a.json", &echo_rate(5, 12, 0.04, same, |_| {}));
    log.file(
        "n4_b.json",
        &echo_rate(6, 12, 0.04, uring_cpu_10pct, |_| {}),
    );
    assert_eq!(log.compare(&["n4_a.json", "n4_b.json"]), 3);
    // 1% noise, six repetitions: more repetitions would see it.
    log.file("r6_a.json", &echo_rate(15, 6, 0.01, same, |_| {}));
    log.file("r6_b.json", &echo_rate(16, 6, 0.01, same, |_| {}));
    log.compare(&["r6_a.json", "r6_b.json"]);
    // 10% noise between runs: the typical cell moved beyond the threshold.
    log.file("n10_a.json", &echo_rate(17, 12, 0.1, same, |_| {}));
    log.file("n10_b.json", &echo_rate(18, 12, 0.1, same, |_| {}));
    log.compare(&["n10_a.json", "n10_b.json"]);
    log.check("compare_echo_gate.txt");
}

#[test]
fn compare_golden_echo_regression() {
    let mut log = Log::new();
    let slower = |m: &str, _: u64| if m == "uring" { 1.3 } else { 1.0 };
    log.file("a.json", &echo_rate(7, 12, 0.0, same, |_| {}));
    log.file("b.json", &echo_rate(8, 12, 0.0, slower, |_| {}));
    assert_eq!(log.compare(&["a.json", "b.json"]), 1);
    // A disturbed cell beside it, and an equal-load cell offered another rate.
    log.file(
        "c.json",
        &echo_rate(8, 12, 0.0, slower, |v| {
            warn_disturbed(v, |c| {
                c["model"] == "tokio" && c["params"]["rate_per_sec"] == 5_000
            });
            for c in v["cases"].as_array_mut().unwrap() {
                if c["model"] == "epoll-et" && c["params"]["rate_per_sec"] == 20_000 {
                    c["counters"]["offered_per_sec"] = 26_000.into();
                    c["rate_per_sec"] = 26_000.into();
                }
            }
        }),
    );
    assert_eq!(log.compare(&["a.json", "c.json"]), 1);
    assert_eq!(log.compare(&["a.json", "c.json", "--allow-untested"]), 1);
    // The other way round: improvements.
    log.compare(&["b.json", "a.json"]);
    log.check("compare_echo_regression.txt");
}

#[test]
fn compare_golden_many_runs() {
    let mut log = Log::new();
    // The fixture's micro.pipe as three runs: B another build, C another kernel with one cell
    // 2x slower; the matrix in the terminal and as compare.md.
    let [a, b, c] = super::compare_many::three(log.path());
    for (p, name) in [(&a, "a.json"), (&b, "b.json"), (&c, "c.json")] {
        assert_eq!(p.file_name().unwrap(), name);
    }
    assert_eq!(log.compare(&["a.json", "b.json", "c.json"]), 1);
    assert_eq!(
        log.compare(&["a.json", "b.json", "c.json", "--out", "page"]),
        1
    );
    log.show("page/compare.md");
    log.check("compare_many.txt");
}

#[test]
fn compare_golden_many_echo() {
    let mut log = Log::new();
    log.file("a.json", &echo_rate(11, 12, 0.0, same, |_| {}));
    log.file("b.json", &echo_rate(12, 12, 0.0, same, |_| {}));
    log.file(
        "noisy.json",
        &echo_rate(13, 12, 0.0, same, |v| {
            warn_disturbed(v, |c| c["model"] == "uring")
        }),
    );
    let slower = |m: &str, _: u64| if m == "uring" { 1.3 } else { 1.0 };
    log.file("slow.json", &echo_rate(14, 12, 0.0, slower, |_| {}));
    assert_eq!(log.compare(&["a.json", "b.json", "b.json"]), 0);
    assert_eq!(log.compare(&["a.json", "b.json", "noisy.json"]), 3);
    assert_eq!(
        log.compare(&["a.json", "b.json", "noisy.json", "--allow-untested"]),
        0
    );
    assert_eq!(log.compare(&["a.json", "noisy.json", "slow.json"]), 1);
    assert_eq!(
        log.compare(&["a.json", "noisy.json", "slow.json", "--out", "page"]),
        1
    );
    log.show("page/compare.md");
    // A run without a cell the first has, and one with a cell the first lacks.
    log.file(
        "dropped.json",
        &echo_rate(12, 12, 0.0, same, |v| {
            v["cases"]
                .as_array_mut()
                .unwrap()
                .retain(|c| !(c["model"] == "tokio" && c["params"]["rate_per_sec"] == 5_000))
        }),
    );
    log.compare(&["a.json", "dropped.json", "b.json"]);
    log.compare(&["dropped.json", "a.json", "b.json"]);
    log.check("compare_many_echo.txt");
}
