//! `conn.idle` through the binary against real servers at smoke (200 idle connections beside
//! 50 busy ones): the server accepted and held every idle connection through the window, each
//! memory figure per idle connection is a number or unavailable with its reason, and the point
//! without idle connections is driven at the same offered rate; the report draws the memory
//! per idle connection.

use crate::common;

#[test]
fn idle_connections_are_held_and_their_memory_is_reported_or_said_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let v = common::run::run_json(
        &[
            "conn.idle",
            "--profile",
            "smoke",
            "--models",
            "epoll-lt,uring",
        ],
        dir.path(),
    );
    let cases = v["cases"].as_array().unwrap();
    for m in ["epoll-lt", "uring"] {
        let cells: Vec<&serde_json::Value> = cases.iter().filter(|c| c["model"] == m).collect();
        let idle: Vec<u64> = cells
            .iter()
            .map(|c| c["params"]["idle_conns"].as_u64().unwrap())
            .collect();
        assert_eq!(idle, [0, 200], "{m}");
        let rates: Vec<&serde_json::Value> =
            cells.iter().map(|c| &c["params"]["rate_per_sec"]).collect();
        assert_eq!(
            rates[0], rates[1],
            "{m}: the same offered rate with and without"
        );
        for c in &cells {
            if c["status"] == "unavailable" {
                // io_uring may be refused here: said so, with the reason.
                assert!(c["reason"].as_str().is_some_and(|r| !r.is_empty()), "{c}");
                continue;
            }
            assert_eq!(c["status"], "measured", "{c}");
            let n = c["params"]["idle_conns"].as_u64().unwrap();
            let k = &c["counters"];
            assert_eq!(k["load_mismatches"], 0, "{c}");
            assert_eq!(k["load_lost_conns"], 0, "{c}");
            // The server accepted every busy and idle connection (smoke: one repetition).
            assert_eq!(k["server_accepts"].as_u64(), Some(50 + n), "{c}");
            let mem = &c["idle_memory"];
            if n == 0 {
                assert!(mem.is_null(), "{c}");
                continue;
            }
            assert_eq!(mem["idle_conns"], n, "{c}");
            // Still open and silent when the window closed: the server held them.
            assert_eq!(mem["live_at_close_min"], n, "{c}");
            assert_eq!(k["idle_conns_live"], n, "{c}");
            // /proc/PID/status is always there for a local server.
            assert!(mem["server_rss_bytes"].is_number(), "{c}");
            for f in [
                "server_rss_bytes",
                "server_kernel_bytes",
                "server_sock_buffer_bytes",
                "machine_sock_slab_bytes",
                "machine_tcp_buffer_bytes",
            ] {
                let x = &mem[f];
                let said = x["unavailable"].as_str().is_some_and(|r| !r.is_empty());
                assert!(x.is_number() || said, "{f}: {x}");
            }
            assert!(c["facts"]["memory_from"].is_string(), "{c}");
        }
    }
    // The report draws the memory per idle connection: a line per model that held some.
    let rss = std::fs::read_to_string(dir.path().join("charts/conn.idle-idle-rss.svg"))
        .expect("the chart of resident memory per idle connection");
    for c in cases {
        if c["idle_memory"]["server_rss_bytes"].is_number() {
            let m = c["model"].as_str().unwrap();
            assert!(
                rss.contains(&format!("\n{m}\n")),
                "{m} missing from the chart"
            );
        }
    }
}
