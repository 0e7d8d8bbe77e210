//! What a repetition records beside its ops, time and CPU, typed: the load generator's figures
//! and headroom flags (network cells), the offered and achieved rates (open-loop cells), wrk's
//! run (HTTP cells it ran beside), the CPU-accounting excess, and the rest by name (the
//! server's own counters, `server_*`; a workload's own). The runner, stats and exporters read
//! the fields; the name -> value map exists only at the edge, results.json's `counters`
//! object, whose names are the fields' names (files written before load as they were).

use super::{CounterSet, Counters};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

crate::counter_set! {
    /// The load generator's figures over the measured window (each summed over repetitions
    /// when a case's are merged) and the per-repetition headroom flags (1 in a repetition
    /// where it held; summed, they count repetitions).
    pub struct LoadCounters {
        /// The load generator's CPU, ns.
        load_cpu_ns,
        /// The measured window, ns (with `load_cpu_ns`: the load generator's CPU %).
        load_window_ns,
        load_connect_errors,
        load_resets,
        load_io_errors,
        load_mismatches,
        load_timeouts,
        /// HTTP: responses with a status other than 2xx.
        load_non_2xx,
        /// HTTP: responses that could not be parsed or framed.
        load_malformed,
        /// Connections reopened after a `Connection: close` response (not errors).
        load_reconnects,
        /// Errors of every kind in the warm-up (the others cover the window only, as the ops
        /// do).
        load_warmup_errors,
        load_live_conns,
        /// Connections asked for but not live at the end: 0 when none was lost.
        load_lost_conns,
        /// The warm-up each repetition took, ns: the profile's, or longer while connections
        /// still awaited their first answer (`load::Report::warmup_ns`).
        load_warmup_ns,
        /// Connections never answered when the warm-up gave up at the message timeout
        /// (warning `warmup_unsettled`).
        load_unsettled_conns,
        /// Repetitions whose load generator drove its connections with io_uring (the others
        /// used epoll: `load::Engine`).
        load_engine_uring,
        /// The load CPUs' idle time over the window, ns, summed over them (/proc/stat), and
        /// how many CPUs that covers (0: not read: load on other hosts, or CPUs shared with
        /// the server). A load side with under 1 - `load::CLIENT_BOUND_FRACTION` of them idle
        /// had no headroom (`client_bound`), whatever its threads' own CPU says.
        load_idle_ns,
        load_idle_cpus,
        /// The load generator was saturated (`load::CLIENT_BOUND_FRACTION`) while the server
        /// was not: the figure is the client's limit, not the server's.
        client_bound,
        /// Both were saturated: the server ran at its capacity, but the load generator had no
        /// headroom left either.
        both_saturated,
        /// Server and load generator shared CPUs.
        shared_cpus,
    }
}

crate::counter_set! {
    /// An open-loop repetition's rates, per second over all connections (in a cell: the mean
    /// over its repetitions, `stats::summarize`), and in how many repetitions it fell behind
    /// (`results::rates::KEEP_UP`).
    pub struct OpenLoopCounters {
        offered_per_sec,
        achieved_per_sec,
        fell_behind,
    }
}

crate::counter_set! {
    /// wrk's run beside a repetition (`crosscheck::wrk`): sums over the repetitions it ran in,
    /// but `wrk_latency_max_ns`, the largest of them.
    pub struct WrkCounters {
        /// Requests wrk completed.
        wrk_requests,
        /// wrk's measured time, ns.
        wrk_window_ns,
        wrk_read_bytes,
        /// Socket errors of every kind.
        wrk_errors,
        wrk_non_2xx,
        /// Mean and p99 latency, ns (summed: divide by `wrk_runs`).
        wrk_latency_mean_ns,
        wrk_latency_p99_ns,
        /// The largest latency of any run, ns (a maximum, not a sum).
        wrk_latency_max_ns,
        /// wrk's own CPU (user + sys, from wait4), ns.
        wrk_cpu_ns,
        /// wrk's whole run, start to exit, ns.
        wrk_run_ns,
        /// 1 in a run where wrk used at least 90% of its one CPU.
        wrk_saturated,
        /// 1 per run.
        wrk_runs,
    }
}

crate::counter_set! {
    /// The NAPI rows' servers (`io::napi`): sockets whose SO_INCOMING_NAPI_ID was read at
    /// their first bytes, those whose id was 0 (busy polling had no queue to poll for them),
    /// failed reads. The servers count them as `napi_*`; a cell records them `server_`-prefixed
    /// like every server counter (`workload::net::launch`).
    pub struct ServerNapiCounters {
        server_napi_socks,
        server_napi_id_zero,
        server_napi_check_errors,
    }
}

crate::counter_set! {
    /// What happened to a UDP load's datagrams (`load::udp`): sent in the window, declared
    /// lost in the window (in the warm-up apart), echoed after being declared lost, echoed
    /// twice, echoed after a later one of their flow (ops all the same), and not sent
    /// because the client's own kernel refused them (open loop). Recorded in a cell under
    /// these names; the load generator's report carries them as its `dgram` object.
    #[derive(serde::Serialize, serde::Deserialize)]
    pub struct DatagramCounts {
        dgram_sent,
        dgram_lost,
        dgram_warmup_lost,
        dgram_late,
        dgram_duplicates,
        dgram_reordered,
        dgram_send_failed,
    }
}

crate::counter_set! {
    /// What a churn load counted (`conn.churn`): connections closed abortively in the window
    /// (the ops, but for those the window's edges cut), and connects, warm-up included.
    pub struct ChurnCounters {
        churn_abortive_closes,
        churn_connects,
    }
}

/// A repetition's (or, merged, a case's) counters. See the module doc.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CellCounters {
    pub load: Option<LoadCounters>,
    pub open_loop: Option<OpenLoopCounters>,
    pub(crate) wrk: Option<WrkCounters>,
    pub(crate) napi: Option<ServerNapiCounters>,
    /// A UDP load's datagrams (`udp.echo`, `udp.echo_gso`); absent for every other load.
    pub(crate) dgram: Option<DatagramCounts>,
    /// A churn load's connects and abortive closes; absent for every other load.
    pub(crate) churn: Option<ChurnCounters>,
    /// What the io_uring tracepoints counted in an io_uring model's counting repetition
    /// (`measure::uring_trace`; absent for other models, and where they could not be opened).
    /// Never summed with the timed repetitions: the counting repetition's alone.
    pub(crate) uring: Option<super::uring_trace::UringCounters>,
    /// CPU read above what the tasks' CPUs could give in the window (an accounting error,
    /// capped away from the figures; the cell is flagged `cpu_over_allowed`), ns.
    pub(crate) cpu_over_allowed_ns: u64,
    /// Everything else, by name.
    pub(crate) other: Counters,
}

/// The JSON name of [`CellCounters::cpu_over_allowed_ns`].
pub(crate) const CPU_OVER_ALLOWED_NS: &str = "cpu_over_allowed_ns";

fn merge_opt<T: CounterSet + Copy>(a: &mut Option<T>, b: &Option<T>) {
    match (a.as_mut(), b) {
        (Some(a), Some(b)) => a.merge(b),
        (None, Some(b)) => *a = Some(*b),
        (_, None) => {}
    }
}

impl CellCounters {
    /// Adds `n` to the counter `name` of `other` (the untyped rest).
    pub(crate) fn add(&mut self, name: &str, n: u64) {
        self.other.add(name, n);
    }

    /// Merges another repetition's counters: sums, but a maximum stays a maximum.
    pub(crate) fn merge(&mut self, o: &CellCounters) {
        merge_opt(&mut self.load, &o.load);
        merge_opt(&mut self.open_loop, &o.open_loop);
        let max = match (&self.wrk, &o.wrk) {
            (Some(a), Some(b)) => a.wrk_latency_max_ns.max(b.wrk_latency_max_ns),
            (Some(a), None) => a.wrk_latency_max_ns,
            (None, Some(b)) => b.wrk_latency_max_ns,
            (None, None) => 0,
        };
        merge_opt(&mut self.wrk, &o.wrk);
        if let Some(w) = &mut self.wrk {
            w.wrk_latency_max_ns = max;
        }
        merge_opt(&mut self.napi, &o.napi);
        merge_opt(&mut self.dgram, &o.dgram);
        merge_opt(&mut self.churn, &o.churn);
        merge_opt(&mut self.uring, &o.uring);
        self.cpu_over_allowed_ns += o.cpu_over_allowed_ns;
        self.other.merge(&o.other);
    }

    /// The name -> value map of results.json: every field of each typed set present (zeros
    /// included), `cpu_over_allowed_ns` when not zero, and the rest.
    pub(crate) fn to_map(&self) -> Counters {
        let mut m = self.other.clone();
        let mut put = |k: &'static str, v: u64| {
            m.0.insert(k.to_string(), v);
        };
        if let Some(l) = &self.load {
            l.for_each(&mut put);
        }
        if let Some(r) = &self.open_loop {
            r.for_each(&mut put);
        }
        if let Some(w) = &self.wrk {
            w.for_each(&mut put);
        }
        if let Some(n) = &self.napi {
            n.for_each(&mut put);
        }
        if let Some(d) = &self.dgram {
            d.for_each(&mut put);
        }
        if let Some(c) = &self.churn {
            c.for_each(&mut put);
        }
        if let Some(u) = &self.uring {
            u.for_each(&mut put);
        }
        if self.cpu_over_allowed_ns > 0 {
            put(CPU_OVER_ALLOWED_NS, self.cpu_over_allowed_ns);
        }
        m
    }

    /// From the map: a typed set is present when any of its names is.
    pub(crate) fn from_map(mut m: Counters) -> CellCounters {
        fn take<T: CounterSet>(m: &mut Counters) -> Option<T> {
            if !T::NAMES.iter().any(|k| m.0.contains_key(*k)) {
                return None;
            }
            let mut t = T::default();
            for k in T::NAMES {
                if let (Some(v), Some(f)) = (m.0.remove(*k), t.by_name(k)) {
                    *f = v;
                }
            }
            Some(t)
        }
        CellCounters {
            load: take(&mut m),
            open_loop: take(&mut m),
            wrk: take(&mut m),
            napi: take(&mut m),
            dgram: take(&mut m),
            churn: take(&mut m),
            uring: take(&mut m),
            cpu_over_allowed_ns: m.0.remove(CPU_OVER_ALLOWED_NS).unwrap_or(0),
            other: m,
        }
    }

    /// The counter `name`, typed or not, as results.json would hold it (0 when absent): for
    /// tests and the edges, never for a figure.
    pub fn get(&self, name: &str) -> u64 {
        self.to_map().get(name)
    }

    /// The load generator's flags: (client_bound, both_saturated, shared_cpus) repetitions.
    pub(crate) fn flags(&self) -> (u64, u64, u64) {
        self.load.map_or((0, 0, 0), |l| {
            (l.client_bound, l.both_saturated, l.shared_cpus)
        })
    }
}

impl From<Counters> for CellCounters {
    fn from(c: Counters) -> CellCounters {
        CellCounters::from_map(c)
    }
}

impl Serialize for CellCounters {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_map().serialize(s)
    }
}

impl schemars::JsonSchema for CellCounters {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "CellCounters".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "What the repetitions counted beside the figures, name -> count: the \
                load generator's typed set (`load_*`, `client_bound`, `both_saturated`, \
                `shared_cpus`), open-loop rates, wrk's (`wrk_*`), the NAPI check, \
                `cpu_over_allowed_ns`, and the rest by name (the server's `server_*`, a \
                workload's own). Summed over repetitions, except that a maximum stays a maximum.",
            "type": "object",
            "additionalProperties": {"type": "integer", "minimum": 0}
        })
    }
}

impl<'de> Deserialize<'de> for CellCounters {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<CellCounters, D::Error> {
        Counters::deserialize(d).map(CellCounters::from_map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_map_round_trips_and_keeps_its_names() {
        let mut m = Counters::default();
        for (k, v) in [
            ("load_cpu_ns", 7),
            ("load_mismatches", 0),
            ("shared_cpus", 1),
            ("offered_per_sec", 2000),
            ("server_accepts", 3),
            ("cpu_over_allowed_ns", 9),
        ] {
            m.add(k, v);
        }
        let c = CellCounters::from_map(m.clone());
        let l = c.load.unwrap();
        assert_eq!((l.load_cpu_ns, l.shared_cpus, l.load_live_conns), (7, 1, 0));
        assert_eq!(c.open_loop.unwrap().offered_per_sec, 2000);
        assert!(c.wrk.is_none());
        assert_eq!(c.cpu_over_allowed_ns, 9);
        assert_eq!(c.other.0.len(), 1, "{:?}", c.other);
        // Typed sets are written whole: the absent load fields come back as zeros.
        let back = c.to_map();
        for (k, v) in &m.0 {
            assert_eq!(back.get(k), *v, "{k}");
        }
        assert!(back.0.contains_key("load_live_conns"));
        assert!(!back.0.keys().any(|k| k.starts_with("wrk_")));
        let json = serde_json::to_string(&c).unwrap();
        let again: CellCounters = serde_json::from_str(&json).unwrap();
        assert_eq!(again, c);
        // A cell without any counters stays an empty object.
        assert_eq!(
            serde_json::to_string(&CellCounters::default()).unwrap(),
            "{}"
        );
    }

    #[test]
    fn merging_sums_but_a_maximum_stays_a_maximum() {
        let w = |max, req| WrkCounters {
            wrk_latency_max_ns: max,
            wrk_requests: req,
            wrk_runs: 1,
            ..WrkCounters::default()
        };
        let mut a = CellCounters {
            wrk: Some(w(5_000, 10)),
            ..CellCounters::default()
        };
        let b = CellCounters {
            wrk: Some(w(3_000, 20)),
            load: Some(LoadCounters {
                client_bound: 1,
                ..LoadCounters::default()
            }),
            ..CellCounters::default()
        };
        a.merge(&b);
        a.merge(&CellCounters::default());
        let got = a.wrk.unwrap();
        assert_eq!(
            (got.wrk_latency_max_ns, got.wrk_requests, got.wrk_runs),
            (5_000, 30, 2)
        );
        assert_eq!(a.flags(), (1, 0, 0));
    }
}
