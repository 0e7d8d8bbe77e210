//! Watching a `ringside run` child from outside: how many cases its results file holds, and its
//! stderr collected on a thread (so a full pipe never blocks it).

use std::io::Read;
use std::path::Path;
use std::process::ChildStderr;
use std::thread::JoinHandle;

/// Cases saved so far in the results file at `path` (0 while it is missing or half-written).
pub fn cases_saved(path: &Path) -> usize {
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .inspect(|v| super::schema::validate(&path.display().to_string(), v))
        .and_then(|v| v["cases"].as_array().map(|a| a.len()))
        .unwrap_or(0)
}

/// `ringside run ARGS --quiet --format json --out OUT` (5 minutes at most), which must succeed:
/// the results it prints.
#[allow(dead_code)]
pub fn run_json(args: &[&str], out: &Path) -> serde_json::Value {
    let stdout = assert_cmd::Command::cargo_bin("ringside")
        .unwrap()
        .timeout(std::time::Duration::from_secs(300))
        .arg("run")
        .args(args)
        .args(["--quiet", "--format", "json", "--out"])
        .arg(out)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v = serde_json::from_slice(&stdout).unwrap();
    super::schema::validate("the results `run --format json` printed", &v);
    super::schema::results_json(out);
    v
}

/// Checks measured cell `c` of the run whose results are in `dir`: a timeline per timed
/// repetition, 100 ms intervals over its window, whose ops add up to the cell's `ops_total`;
/// `report --timeline` prints them, adding up the same. Returns the cell's key.
#[allow(dead_code)]
pub fn timeline_adds_up(dir: &Path, c: &serde_json::Value) -> String {
    let id = format!("{} {} {}", c["workload"], c["model"], c["params"]);
    let runs = c["runs_timeline"]
        .as_array()
        .unwrap_or_else(|| panic!("{id}: no runs_timeline"));
    assert_eq!(
        runs.len() as u64,
        c["repetitions"].as_u64().unwrap(),
        "{id}: one per repetition"
    );
    let mut ops = 0;
    for t in runs {
        assert_eq!(t["step_ns"], 100_000_000u64, "{id}: {t}");
        let n = t["ops"].as_array().unwrap().len() as u64;
        let window = t["window_ns"].as_u64().unwrap();
        assert_eq!(n, window.div_ceil(100_000_000), "{id}: {t}");
        assert_eq!(t["latency_max_ns"].as_array().unwrap().len() as u64, n);
        assert_eq!(t["latency_sum_ns"].as_array().unwrap().len() as u64, n);
        ops += t["ops"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .sum::<u64>();
    }
    assert_eq!(
        ops,
        c["ops_total"].as_u64().unwrap(),
        "{id}: every op is in an interval"
    );
    let mut params: Vec<String> = c["params"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    // An equal-load point's cell: its capacity point's params, and the marker.
    if c["equal_load"].is_object() {
        params.push(ringside::results::EQUAL_LOAD_WORD.to_string());
    }
    let label = match c["variant"].as_str() {
        Some(v) => format!("{}/{v}", c["model"].as_str().unwrap()),
        None => c["model"].as_str().unwrap().to_string(),
    };
    let key = format!(
        "{} {label} {}",
        c["workload"].as_str().unwrap(),
        params.join(" ")
    );
    let out = super::bin::ringside()
        .arg("report")
        .arg(dir.join("results.json"))
        .args(["--timeline", &key])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let csv = String::from_utf8(out).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("repetition,start_s,length_s,ops,ops_per_sec,mean_latency_us,max_latency_us")
    );
    let csv_ops: u64 = lines
        .map(|l| l.split(',').nth(3).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(csv_ops, ops, "{id}: {csv}");
    key
}

/// Reads `err` to its end on a thread; join it for the text.
pub fn collect(mut err: ChildStderr) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    })
}
