//! Verdicts of the network suites: at equal load, models ranked by server CPU per op with the
//! significance of the per-repetition CPU, models that fell behind the offered rate named and
//! not ranked; by capacity only between cells whose load generator had headroom, the others
//! named; each verdict saying which ranking it uses. Tables show the offered rate beside
//! equal-load cells.

use ringside::analysis::past_capacity_cells;
use ringside::export::table::metric_tables;
use ringside::export::words::{verdicts as for_cases, CAPACITY_PREFIX, PAST_CAPACITY_PREFIX};
use ringside::results::{CaseResult, RunResults};
use serde_json::{json, Value};

/// A measured network cell. `cpu`: per-repetition CPU per op, ns (its mean is the cell's);
/// `rate`: (offered, achieved, repetitions that fell behind) for an open-loop cell.
fn cell(
    workload: &str,
    model: &str,
    params: Value,
    ops: f64,
    cpu: &[f64],
    rate: Option<(u64, u64, u64)>,
    warnings: &[&str],
) -> CaseResult {
    let reps = cpu.len() as u64;
    let mean = cpu.iter().sum::<f64>() / cpu.len() as f64;
    let mut counters = json!({"load_cpu_ns": 1, "load_window_ns": 2});
    if let Some((offered, achieved, fell)) = rate {
        counters["offered_per_sec"] = json!(offered);
        counters["achieved_per_sec"] = json!(achieved);
        counters["fell_behind"] = json!(fell);
    }
    // An `equal_load` entry in `params` marks a cell of an equal-load point.
    let mut params = params;
    let equal_load = params.as_object_mut().unwrap().remove("equal_load");
    serde_json::from_value(json!({
        "equal_load": equal_load,
        "workload": workload, "model": model, "params": params,
        "status": "measured", "op": "one message", "knobs": {}, "warmups": 0,
        "repetitions": reps,
        "latency_ns": {"min": 1.0, "p50": 10.0, "p90": 10.0, "p99": 20.0, "p999": 20.0,
                       "max": 20.0, "mean": 10.0, "stddev": 1.0},
        "run_p50_ns": {"median": 10.0, "min": 10.0, "max": 10.0, "mad": 0.0},
        "ops_per_sec": {"median": ops, "min": ops * 0.99, "max": ops * 1.01, "mad": 0.0},
        "cpu_ns_per_op": {"total": mean, "user": 1.0, "sys": 1.0},
        "ctx_switches_per_op": 0.0, "syscalls_per_op": 1.0, "ops_total": 1000,
        "counters": counters, "histogram": "",
        "runs_cpu_ns_per_op": cpu,
        "runs_ops_per_sec": (0..reps).map(|i| ops * (1.0 + i as f64 * 0.001)).collect::<Vec<f64>>(),
        "warnings": warnings,
    }))
    .unwrap()
}

/// Six rounds: the fewest with which a paired claim can be decided at alpha 0.05.
const SIX: usize = 6;

fn reps(base: f64) -> Vec<f64> {
    (0..SIX).map(|i| base + i as f64).collect()
}

/// echo.conns at 50 and 1000 connections: capacity cells (b client-bound at 50, every one
/// client-bound or both saturated at 1000) and an equal-load point at 50 where c fell behind.
fn echo_conns() -> Vec<CaseResult> {
    let cap = |n: u64| json!({"conns": n, "msg_bytes": 64});
    let eq = |n: u64| json!({"conns": n, "msg_bytes": 64, "equal_load": {"of_slowest": 0.5}});
    vec![
        cell(
            "echo.conns",
            "a",
            cap(50),
            90_000.0,
            &reps(100.0),
            None,
            &[],
        ),
        cell(
            "echo.conns",
            "b",
            cap(50),
            120_000.0,
            &reps(100.0),
            None,
            &["client_bound"],
        ),
        cell(
            "echo.conns",
            "c",
            cap(50),
            60_000.0,
            &reps(100.0),
            None,
            &[],
        ),
        cell(
            "echo.conns",
            "a",
            eq(50),
            30_000.0,
            &reps(140.0),
            Some((30_000, 30_000, 0)),
            &[],
        ),
        cell(
            "echo.conns",
            "b",
            eq(50),
            30_000.0,
            &reps(100.0),
            Some((30_000, 29_990, 0)),
            &[],
        ),
        cell(
            "echo.conns",
            "c",
            eq(50),
            24_000.0,
            &reps(90.0),
            Some((30_000, 24_000, 2)),
            &[],
        ),
        cell(
            "echo.conns",
            "a",
            cap(1000),
            80_000.0,
            &reps(100.0),
            None,
            &["both_saturated"],
        ),
        cell(
            "echo.conns",
            "b",
            cap(1000),
            70_000.0,
            &reps(100.0),
            None,
            &["client_bound"],
        ),
    ]
}

fn lines(workload: &str, cells: &[CaseResult]) -> Vec<String> {
    let refs: Vec<&CaseResult> = cells.iter().collect();
    for_cases(workload, &refs)
        .into_iter()
        .map(|v| v.line())
        .collect()
}

#[test]
fn equal_load_ranks_server_cpu_per_op_with_significance_and_names_who_fell_behind() {
    let v = lines("echo.conns", &echo_conns());
    let eq: Vec<&String> = v
        .iter()
        .filter(|l| l.starts_with("at equal load"))
        .collect();
    assert_eq!(
        eq,
        [
            "at equal load (30000 msgs/s offered, conns=50): not ranked, fell behind the \
             offered rate (its typical repetition achieved less than 95% of it): c (achieved \
             24060 in its typical run)",
            "at equal load (30000 msgs/s offered, conns=50): ranked by server CPU per message \
             (less is better): b leads (102 ns); behind it by: a 1.4x (signed-rank over 6 \
             paired rounds, p=0.031 after FDR; 1.4x to 1.4x at 95%); differences under 1% are \
             invisible here",
        ],
        "{v:#?}"
    );
    // The headline comes first.
    assert!(v[0].starts_with("at equal load"), "{v:#?}");
}

#[test]
fn capacity_is_ranked_only_where_the_load_generator_had_headroom() {
    let v = lines("echo.conns", &echo_conns());
    let cap: Vec<&String> = v
        .iter()
        .filter(|l| l.starts_with(CAPACITY_PREFIX))
        .collect();
    // At 50 connections only a and c had headroom: a against c, never b (client-bound, and
    // the highest throughput: ranked by capacity it would have "won").
    assert!(
        cap.iter().any(|l| l.contains(
            "ranked by throughput (higher is better) at conns=50: a leads; behind it by: c 1.5x"
        )),
        "{v:#?}"
    );
    for l in &cap {
        assert!(
            !l.split([' ', ':', ',']).any(|w| w == "b"),
            "a client-bound cell ranked by capacity: {l}"
        );
        assert!(
            !l.contains("conns=1000"),
            "no cell at 1000 had headroom: {l}"
        );
    }
    let refused: Vec<&String> = v
        .iter()
        .filter(|l| l.starts_with("capacity not ranked"))
        .collect();
    assert_eq!(refused.len(), 1, "{v:#?}");
    assert!(
        refused[0].contains("3 cells") && refused[0].contains("conns=50: b; conns=1000: a, b"),
        "{}",
        refused[0]
    );
    // Every verdict says which ranking it uses.
    for l in &v {
        assert!(
            l.starts_with("at equal load")
                || l.starts_with(CAPACITY_PREFIX)
                || l.starts_with("capacity not ranked"),
            "{l}"
        );
    }
}

#[test]
fn overlapping_repetitions_are_within_noise_and_http_counts_requests() {
    let eq = json!({"clients": 50, "equal_load": {"of_slowest": 0.5}});
    let cells = [
        cell(
            "http.clients",
            "a",
            eq.clone(),
            20_000.0,
            &[100.0, 130.0, 102.0, 128.0, 104.0, 115.0],
            Some((20_000, 20_000, 0)),
            &[],
        ),
        cell(
            "http.clients",
            "b",
            eq,
            20_000.0,
            &[101.0, 129.0, 103.0, 127.0, 131.0, 114.0],
            Some((20_000, 20_000, 0)),
            &[],
        ),
    ];
    let v = lines("http.clients", &cells);
    assert_eq!(v.len(), 1, "{v:#?}");
    assert!(
        v[0].starts_with(
            "at equal load (20000 req/s offered): ranked by server CPU per request (less is \
             better): a leads (113 ns); undecided against it: b 1.00x (signed-rank over 6 \
             paired rounds, p=0.438 (of equivalence) after FDR; 0.99x to 1.3x at 95%)"
        ) && v[0].ends_with("(nothing decided)"),
        "{}",
        v[0]
    );
}

#[test]
fn echo_rate_ranks_every_rate_at_equal_load_and_tables_show_the_offered_rate() {
    let p = |r: u64| json!({"rate_per_sec": r, "conns": 50, "msg_bytes": 64});
    let cells = vec![
        cell(
            "echo.rate",
            "a",
            p(10_000),
            10_000.0,
            &[10.0, 11.0, 12.0],
            Some((10_000, 10_000, 0)),
            &[],
        ),
        cell(
            "echo.rate",
            "b",
            p(10_000),
            10_000.0,
            &[20.0, 21.0, 22.0],
            Some((10_000, 9_999, 0)),
            &[],
        ),
    ];
    let v = lines("echo.rate", &cells);
    assert!(
        v.contains(
            &"at equal load (10000 msgs/s offered): ranked by server CPU per message (less is \
              better): a leads (11 ns); undecided against it: b 1.9x (undecided: 3 paired \
              rounds, and a claim needs 6 (the smallest p 3 rounds can give is 0.250)) (nothing \
              decided)"
                .to_string()
        ),
        "{v:#?}"
    );
    let run: RunResults = {
        let mut r: Value = serde_json::from_str(
            &std::fs::read_to_string(
                std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("tests/fixtures/results.json"),
            )
            .unwrap(),
        )
        .unwrap();
        r["cases"] = serde_json::to_value(&cells).unwrap();
        serde_json::from_value(r).unwrap()
    };
    let t = &metric_tables(&run, &ringside::analysis::Analysis::of(&run))[0];
    let row = t
        .rows
        .iter()
        .find(|r| r[0] == "offered rate/s (equal load)")
        .expect("an offered-rate row");
    assert_eq!(row[1..], ["10 k", "10 k"]);
}

/// A pubsub point is open loop at one offered delivery rate: it is ranked by the broker's CPU
/// per delivery among the brokers that kept up, never by throughput (every broker that keeps
/// up delivers the same rate; a throughput ranking would "separate" them by noise).
#[test]
fn pubsub_ranks_cpu_per_delivery_at_equal_load_and_names_who_fell_behind() {
    let p = json!({"fanout": 100, "payload_bytes": 1024, "publishers": 2});
    let cells = [
        cell(
            "pubsub.fanout",
            "a",
            p.clone(),
            1_500_000.0,
            &reps(300.0),
            Some((1_500_000, 1_500_000, 0)),
            &[],
        ),
        cell(
            "pubsub.fanout",
            "b",
            p.clone(),
            1_510_000.0,
            &reps(200.0),
            Some((1_500_000, 1_500_000, 0)),
            &[],
        ),
        cell(
            "pubsub.fanout",
            "c",
            p,
            900_000.0,
            &reps(100.0),
            Some((1_500_000, 900_000, 5)),
            &[],
        ),
    ];
    let v = lines("pubsub.fanout", &cells);
    let eq: Vec<&String> = v
        .iter()
        .filter(|l| l.starts_with("at equal load"))
        .collect();
    assert_eq!(eq.len(), 2, "{v:#?}");
    assert!(
        eq[0].contains("1500000 deliveries/s offered")
            && eq[0].contains("c (achieved 902250 in its typical run)"),
        "{}",
        eq[0]
    );
    assert!(
        eq[1].contains("ranked by server CPU per delivery (less is better): b leads")
            && eq[1].contains("behind it by: a 1.5x"),
        "{}",
        eq[1]
    );
    // By throughput only where a broker fell behind: what each achieved, the ones that kept
    // up (1.5 M/s offered) ahead of c.
    let by_rate: Vec<&String> = v
        .iter()
        .filter(|l| l.contains("ranked by throughput"))
        .collect();
    assert_eq!(by_rate.len(), 1, "{v:#?}");
    assert!(
        by_rate[0].starts_with(PAST_CAPACITY_PREFIX) && by_rate[0].contains("behind it by: c 1.7x"),
        "{}",
        by_rate[0]
    );
}

/// Where no two brokers kept up, the finding ranks what each achieved (load generator with
/// headroom only), never "not ranked".
#[test]
fn pubsub_past_capacity_ranks_the_rate_achieved_with_headroom() {
    let p = json!({"fanout": 100, "payload_bytes": 1024, "publishers": 2});
    let behind = |m: &str, achieved: u64, warnings: &[&str]| {
        cell(
            "pubsub.fanout",
            m,
            p.clone(),
            achieved as f64,
            &reps(300.0),
            Some((1_500_000, achieved, 5)),
            warnings,
        )
    };
    let cells = [
        behind("a", 1_200_000, &[]),
        behind("b", 800_000, &[]),
        behind("c", 1_400_000, &["client_bound"]),
    ];
    let refs: Vec<&CaseResult> = cells.iter().collect();
    let past = past_capacity_cells("pubsub.fanout", &refs);
    let names: Vec<&str> = past.iter().map(|c| c.model.as_str()).collect();
    assert_eq!(names, ["a", "b"], "c's load generator had no headroom");
    let v = lines("pubsub.fanout", &cells);
    assert!(
        v.iter()
            .any(|l| l.starts_with(PAST_CAPACITY_PREFIX)
                && l.contains("a leads; behind it by: b 1.5x")),
        "{v:#?}"
    );
    // The rate sweeps have their knees instead.
    assert!(past_capacity_cells("echo.rate", &refs).is_empty());
}

/// Bulk transfer is closed loop: ranked by throughput only between cells whose load generator
/// had headroom, the others named.
#[test]
fn stream_capacity_is_ranked_only_where_the_load_generator_had_headroom() {
    let p = json!({"conns": 10, "direction": "up", "write_bytes": 65536});
    let cells = [
        cell(
            "stream.send",
            "a",
            p.clone(),
            60_000.0,
            &reps(100.0),
            None,
            &[],
        ),
        cell(
            "stream.send",
            "b",
            p.clone(),
            90_000.0,
            &reps(100.0),
            None,
            &["client_bound"],
        ),
        cell("stream.send", "c", p, 40_000.0, &reps(100.0), None, &[]),
    ];
    let v = lines("stream.send", &cells);
    assert!(
        v.iter().any(|l| l.starts_with(CAPACITY_PREFIX)
            && l.contains("a leads; behind it by: c 1.5x")
            && !l.contains(" b ")),
        "{v:#?}"
    );
    assert!(
        v.iter()
            .any(|l| l.starts_with("capacity not ranked for 1 cell") && l.ends_with(": b")),
        "{v:#?}"
    );
}
