//! The cores sweeps (`echo.cores`, `http.cores`) through the binary against the real servers:
//! one point per server thread count of the plan (on this 2-CPU machine 1, then 2 sharing the
//! load generator's CPU), every message verified, both server threads accepting, the scaling
//! efficiency recorded against the one-thread point; and `tokio-mt`'s place in the registry:
//! in the cores sweeps always, in the other network workloads only when the server has several
//! CPUs.

use crate::common;

use ringside::measure::pin::{allowed_cpus, CpuPlan};
use ringside::plan::{expand, select_models, select_workloads};
use ringside::profile::Profile;

#[test]
fn cores_sweeps_run_one_point_per_thread_count_and_record_scaling() {
    let cpus = allowed_cpus();
    let dir = tempfile::tempdir().unwrap();
    let v = common::run::run_json(
        &[
            "echo.cores",
            "http.cores",
            "--profile",
            "smoke",
            "--models",
            "epoll-lt,tokio-mt",
        ],
        dir.path(),
    );
    let cases = v["cases"].as_array().unwrap();
    let want: Vec<u64> = if cpus.len() >= 2 { vec![1, 2] } else { vec![1] };
    for w in ["echo.cores", "http.cores"] {
        for m in ["epoll-lt", "tokio-mt"] {
            let cells: Vec<&serde_json::Value> = cases
                .iter()
                .filter(|c| c["workload"] == w && c["model"] == m)
                .collect();
            let threads: Vec<u64> = cells
                .iter()
                .map(|c| c["params"]["threads"].as_u64().unwrap())
                .collect();
            assert_eq!(threads, want, "{w} {m}");
            for c in &cells {
                assert_eq!(c["status"], "measured", "{c}");
                let t = c["params"]["threads"].as_u64().unwrap();
                let k = &c["counters"];
                assert_eq!(k["load_mismatches"], 0, "{c}");
                assert_eq!(k["load_malformed"], 0, "{c}");
                assert_eq!(k["load_lost_conns"], 0, "{c}");
                let conns = if w == "echo.cores" {
                    "conns"
                } else {
                    "clients"
                };
                assert_eq!(c["params"][conns].as_u64(), Some(100 * t), "{c}");
                let warned_shared = c["warnings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|x| x == "shared_cpus");
                if t == 1 {
                    assert!(c.get("scaling_efficiency").is_none(), "{c}");
                    continue;
                }
                assert_eq!(k["server_server_threads"], t, "{c}");
                // Two server threads on a 2-CPU machine share the load generator's CPU.
                assert_eq!(warned_shared, cpus.len() < 2 * t as usize, "{c}");
                let e = c["scaling_efficiency"]
                    .as_f64()
                    .expect("efficiency at 2 threads");
                assert!(e > 0.0 && e < 2.0, "{e}: {c}");
                if m == "epoll-lt" {
                    let a: Vec<u64> = (0..t)
                        .map(|i| k[format!("server_accepts_thread_{i}")].as_u64().unwrap())
                        .collect();
                    assert!(
                        a.iter().all(|&n| n > 0),
                        "a thread without connections: {c}"
                    );
                }
            }
        }
    }
}

#[test]
fn tokio_mt_runs_in_the_other_network_workloads_only_on_several_server_cpus() {
    // Every echo and HTTP workload: a suite's name alone runs its default ones.
    let ids: Vec<String> = ringside::registry::WORKLOADS
        .iter()
        .map(|w| w.id().to_string())
        .filter(|id| id.starts_with("echo.") || id.starts_with("http."))
        .collect();
    let ws = select_workloads(&ids).unwrap();
    let m = select_models(Some(&["tokio-mt".into()])).unwrap();
    let one = CpuPlan::pair(1, Some(0));
    let cases = expand(&ws, &m, true, Profile::Smoke, &one);
    for c in &cases {
        let id = c.workload.id();
        if id.ends_with(".cores") {
            assert!(c.point.is_some(), "{id}");
        } else if id.ends_with(".ladder") {
            // The ladders take their io_uring rungs only.
            let why = c.not_applicable.as_deref().unwrap_or("");
            assert!(why.contains("not a rung"), "{id}: {why}");
        } else {
            let why = c.not_applicable.as_deref().unwrap_or("");
            assert!(why.contains("echo.cores and http.cores"), "{id}: {why}");
        }
    }
    let mut two = CpuPlan::pair(2, Some(0));
    two.server = vec![2, 1];
    let cases = expand(&ws, &m, true, Profile::Smoke, &two);
    assert!(cases
        .iter()
        .filter(|c| !c.workload.id().ends_with(".ladder"))
        .all(|c| c.point.is_some()));
    // The sweep follows the plan: a server of four CPUs is swept over 1, 2 and 4 threads.
    let mut four = CpuPlan::pair(4, Some(0));
    four.server = vec![4, 5, 6, 7];
    let threads: Vec<u64> = expand(&ws, &m, true, Profile::Smoke, &four)
        .iter()
        .filter(|c| c.workload.id() == "echo.cores")
        .map(|c| c.point.as_ref().unwrap().params.u64("threads").unwrap())
        .collect();
    assert_eq!(threads, vec![1, 2, 4]);
}

#[test]
fn the_default_run_leaves_the_cores_sweeps_out() {
    let ids: Vec<&str> = select_workloads(&[])
        .unwrap()
        .iter()
        .map(|w| w.id())
        .collect();
    assert!(!ids.iter().any(|id| id.ends_with(".cores")), "{ids:?}");
    for id in ["echo.cores", "http.cores"] {
        let w = ringside::registry::workload(id).unwrap();
        assert!(
            !w.by_default() && w.about().contains("runs when named"),
            "{id}"
        );
    }
}
