//! Disturbance: CPU time that tasks outside the run took on the plan's CPUs during a
//! repetition, and the time the hypervisor stole from them. A figure measured while another
//! program ran on the measured CPU is not the model's: the runner re-runs such a repetition
//! once and warns `disturbed` when it stays so.
//!
//! Read from the tasks' own accounting: at both edges, every process in /proc that is neither
//! this one nor one of its descendants (the servers, wrk, perf) nor a process born since this
//! one started that carries its owner mark (what a contender's shell forked, left to init
//! for a moment once the shell is reaped) nor a kernel thread nor a zombie, with its
//! on-CPU time from `schedstat` (ns; every thread's for a multi-threaded process) and the CPU
//! it last ran on; the time of those that ran on a plan CPU is the disturbance. A process
//! born between the edges counts whole; one that was born and died between them is missed
//! (it can only make a disturbance look smaller). Steal time comes from /proc/stat's per-CPU
//! `steal` column (clock ticks). Kernel threads (ksoftirqd serving the run's own traffic,
//! kworkers) are not counted: much of their work is the run's.

use std::collections::HashMap;
use std::fs;

/// A repetition is disturbed when others and steal took more than this share of the plan's
/// CPU time over its wall time...
pub(crate) const SHARE: f64 = 0.05;
/// ... and at least this much in all (ns), so that a scheduler tick of a daemon in a short
/// repetition is not one.
pub(crate) const FLOOR_NS: u64 = 2_000_000;

/// A cell is CPU-bound when its measured tasks ran at least this share of the wall time
/// (`cpu_busy`, per busy thread) in the median of its earlier repetitions...
pub(crate) const CPU_BOUND: f64 = 0.9;
/// ... and one of its repetitions is starved when it ran under this share of that median:
/// something took the CPU that the process snapshot cannot name (a kernel thread, interrupts,
/// a process born and gone within the repetition, steal the hypervisor did not report).
pub(crate) const STARVED: f64 = 0.8;

/// Whether a repetition whose measured tasks ran `busy` of its wall time is starved against
/// the cell's `earlier` repetitions' shares (at least two of them; see [`STARVED`]).
pub(crate) fn starved(busy: f64, earlier: &[f64]) -> bool {
    if earlier.len() < 2 || !busy.is_finite() {
        return false;
    }
    let m = super::calib::median(earlier.to_vec());
    m >= CPU_BOUND && busy < STARVED * m
}

/// PF_KTHREAD in /proc/PID/stat's flags.
const PF_KTHREAD: u64 = 0x0020_0000;

/// One process at one edge.
#[derive(Clone, Debug)]
struct Proc {
    comm: String,
    /// On-CPU time, ns, summed over its threads.
    ns: u64,
    /// The CPU it last ran on.
    cpu: u32,
}

/// The machine at one edge of a repetition.
#[derive(Clone, Debug, Default)]
pub(crate) struct Snapshot {
    at_ns: u64,
    /// Steal ticks summed over the plan's CPUs.
    steal_ticks: u64,
    others: HashMap<i32, Proc>,
}

/// What others took during a span.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Disturbance {
    /// CPU time of other programs that ran on the plan's CPUs, ns.
    pub(crate) others_ns: u64,
    /// Steal time on the plan's CPUs, ns.
    pub(crate) steal_ns: u64,
    /// The span, ns.
    pub(crate) wall_ns: u64,
    /// The plan's CPUs.
    pub(crate) cpus: u32,
    /// The other program that took the most, and how much (ns).
    pub(crate) top: Option<(String, u64)>,
}

impl Disturbance {
    /// Others and steal as a share of the plan's CPU time over the span.
    pub(crate) fn share(&self) -> f64 {
        let cap = self.wall_ns as f64 * self.cpus.max(1) as f64;
        if cap <= 0.0 {
            0.0
        } else {
            (self.others_ns + self.steal_ns) as f64 / cap
        }
    }

    pub(crate) fn disturbed(&self) -> bool {
        self.others_ns + self.steal_ns >= FLOOR_NS && self.share() > SHARE
    }

    /// "other programs took 34% of the plan's CPUs (sh: 120.0 ms), steal 0.0 ms".
    pub(crate) fn text(&self) -> String {
        let top = self
            .top
            .as_ref()
            .map(|(c, ns)| format!(" (most: {c}, {:.1} ms)", *ns as f64 / 1e6))
            .unwrap_or_default();
        format!(
            "other programs and steal took {:.0}% of the plan's {} CPU(s) over {:.0} ms: \
             {:.1} ms by other programs{top}, {:.1} ms stolen",
            self.share() * 100.0,
            self.cpus,
            self.wall_ns as f64 / 1e6,
            self.others_ns as f64 / 1e6,
            self.steal_ns as f64 / 1e6,
        )
    }

    /// Adds another span (a case's repetitions summed).
    pub(crate) fn add(&mut self, o: &Disturbance) {
        self.others_ns += o.others_ns;
        self.steal_ns += o.steal_ns;
        self.wall_ns += o.wall_ns;
        self.cpus = self.cpus.max(o.cpus);
        let better = match (&self.top, &o.top) {
            (_, None) => false,
            (None, Some(_)) => true,
            (Some(a), Some(b)) => b.1 > a.1,
        };
        if better {
            self.top = o.top.clone();
        }
    }
}

/// The fields of /proc/PID/stat the snapshot reads.
#[derive(Debug, PartialEq)]
struct StatFields {
    comm: String,
    state: char,
    ppid: i32,
    flags: u64,
    threads: u64,
    /// Start time, clock ticks since boot.
    start: u64,
    /// The CPU it last ran on.
    cpu: u32,
}

/// The fields of a /proc/PID/stat line (counted after the command's closing parenthesis:
/// the name may hold spaces and parentheses). `None` when the line does not parse.
fn stat_fields(text: &str) -> Option<StatFields> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = text.get(close + 2..)?.split_ascii_whitespace().collect();
    // rest[0] is field 3 (state): field k is rest[k - 3].
    Some(StatFields {
        comm,
        state: rest.first()?.chars().next()?,
        ppid: rest.get(1)?.parse().ok()?,
        flags: rest.get(6)?.parse().ok()?,
        threads: rest.get(17)?.parse().ok()?,
        start: rest.get(19)?.parse().ok()?,
        cpu: rest.get(36)?.parse().ok()?,
    })
}

/// The first field of a schedstat file: time on CPU, ns.
fn schedstat_ns(path: &str) -> Option<u64> {
    fs::read_to_string(path)
        .ok()?
        .split_ascii_whitespace()
        .next()?
        .parse()
        .ok()
}

/// On-CPU time of a process, every thread's.
fn process_ns(pid: i32, threads: u64) -> Option<u64> {
    if threads <= 1 {
        return schedstat_ns(&format!("/proc/{pid}/schedstat"));
    }
    let mut sum = 0;
    for t in fs::read_dir(format!("/proc/{pid}/task")).ok()?.flatten() {
        if let Some(ns) = schedstat_ns(&format!(
            "/proc/{pid}/task/{}/schedstat",
            t.file_name().to_string_lossy()
        )) {
            sum += ns;
        }
    }
    Some(sum)
}

/// Steal ticks of `cpus` from /proc/stat.
fn steal_ticks(stat: &str, cpus: &[u32]) -> u64 {
    stat.lines()
        .filter_map(|l| {
            let mut it = l.split_ascii_whitespace();
            let name = it.next()?;
            let cpu: u32 = name.strip_prefix("cpu")?.parse().ok()?;
            if !cpus.contains(&cpu) {
                return None;
            }
            // user nice system idle iowait irq softirq steal
            it.nth(7)?.parse::<u64>().ok()
        })
        .sum()
}

/// The machine now, as seen from the plan's `cpus`.
pub(crate) fn snapshot(cpus: &[u32]) -> Snapshot {
    let me = std::process::id() as i32;
    let at_ns = super::clock::now_ns();
    let steal_ticks = fs::read_to_string("/proc/stat")
        .map(|s| steal_ticks(&s, cpus))
        .unwrap_or(0);
    let mut parent: HashMap<i32, i32> = HashMap::new();
    let mut seen: Vec<(i32, StatFields)> = Vec::new();
    if let Ok(dir) = fs::read_dir("/proc") {
        for e in dir.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                continue;
            };
            let Ok(text) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            let Some(f) = stat_fields(&text) else {
                continue;
            };
            parent.insert(pid, f.ppid);
            // A zombie runs nothing: what it ran is past (and ours, when the contender's
            // shell was reaped first, would otherwise be counted whole).
            if f.flags & PF_KTHREAD != 0 || pid == me || f.state == 'Z' {
                continue;
            }
            seen.push((pid, f));
        }
    }
    let ours = |mut pid: i32| {
        for _ in 0..64 {
            if pid == me {
                return true;
            }
            match parent.get(&pid) {
                Some(&p) if p > 0 && p != pid => pid = p,
                _ => return false,
            }
        }
        false
    };
    // Ours too: a process born since we started that carries our owner mark, whatever its
    // parent now (what a contender's shell forked, once the shell is reaped).
    let born = crate::child::our_start_ticks();
    let mut others = HashMap::new();
    for (pid, f) in seen {
        if ours(pid) || (f.start >= born && crate::child::carries_our_mark(pid as u32)) {
            continue;
        }
        if let Some(ns) = process_ns(pid, f.threads) {
            others.insert(
                pid,
                Proc {
                    comm: f.comm,
                    ns,
                    cpu: f.cpu,
                },
            );
        }
    }
    Snapshot {
        at_ns,
        steal_ticks,
        others,
    }
}

/// USER_HZ: /proc/stat's tick.
fn tick_ns() -> u64 {
    super::cpu::user_hz().map_or(10_000_000, |hz| 1_000_000_000 / hz)
}

impl Snapshot {
    /// What others took between this snapshot and `end` (taken later, same `cpus`).
    pub(crate) fn until(&self, end: &Snapshot, cpus: &[u32]) -> Disturbance {
        let mut d = Disturbance {
            steal_ns: end.steal_ticks.saturating_sub(self.steal_ticks) * tick_ns(),
            wall_ns: end.at_ns.saturating_sub(self.at_ns),
            cpus: cpus.len() as u32,
            ..Disturbance::default()
        };
        for (pid, p) in &end.others {
            let before = self.others.get(pid);
            let on_plan = cpus.contains(&p.cpu) || before.is_some_and(|b| cpus.contains(&b.cpu));
            if !on_plan {
                continue;
            }
            let took = p.ns.saturating_sub(before.map_or(0, |b| b.ns));
            if took == 0 {
                continue;
            }
            d.others_ns += took;
            if d.top.as_ref().is_none_or(|(_, t)| took > *t) {
                d.top = Some((p.comm.clone(), took));
            }
        }
        d
    }
}

/// Other ringside processes now (not this one, nor its descendants): another run would
/// share the plan's CPUs.
pub(crate) fn other_ringside() -> u32 {
    let snap = snapshot(&[]);
    snap.others
        .values()
        .filter(|p| p.comm == "ringside")
        .count() as u32
}

/// A short look at the plan's CPUs before a run: what other programs and steal take of them
/// over `span`.
pub(crate) fn look(cpus: &[u32], span: std::time::Duration) -> Disturbance {
    let a = snapshot(cpus);
    std::thread::sleep(span);
    a.until(&snapshot(cpus), cpus)
}

/// The plan's CPUs: every CPU a run of `plan` pins something to.
pub(crate) fn plan_cpus(plan: &super::pin::CpuPlan) -> Vec<u32> {
    let mut v: Vec<u32> = std::iter::once(plan.measured)
        .chain(plan.helper)
        .chain(plan.server.iter().copied())
        .chain(plan.load.iter().copied())
        .chain(plan.sqpoll)
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_bound_repetition_that_ran_half_the_time_is_starved() {
        // micro.pipe's writer ran 97-100% of each window; a hog on its CPU halves that.
        assert!(starved(0.5, &[1.0, 0.99, 0.97]));
        assert!(!starved(0.95, &[1.0, 0.99, 0.97]));
        // SQPOLL's two busy threads: 2.0 against 1.5 is starved too.
        assert!(starved(1.5, &[2.0, 2.0]));
        // A cell that is not CPU-bound (a server at 30% at its offered rate) is never judged.
        assert!(!starved(0.1, &[0.3, 0.31, 0.29]));
        // Too few earlier repetitions to know.
        assert!(!starved(0.1, &[1.0]));
    }

    #[test]
    fn an_orphan_with_our_mark_is_ours_and_one_without_is_not() {
        // A contender's shell reaped before the server it forked: the server is left to
        // init (or a subreaper) for a moment, with our owner mark. Two such orphans spin, one
        // marked and one not; only the unmarked one is another program.
        let orphan = |marked: bool| -> i32 {
            let mut c = std::process::Command::new("sh");
            c.args(["-c", "while :; do :; done >/dev/null 2>&1 & echo $!"])
                .stdout(std::process::Stdio::piped());
            if marked {
                c.env(crate::child::OWNER_ENV, crate::child::owner_token());
            } else {
                c.env_remove(crate::child::OWNER_ENV);
            }
            let out = c.output().unwrap();
            String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
        };
        let (marked, unmarked) = (orphan(true), orphan(false));
        let snap = snapshot(&crate::measure::pin::allowed_cpus());
        for pid in [marked, unmarked] {
            let pid = crate::child::pid_of(pid).unwrap();
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
        assert!(!snap.others.contains_key(&marked), "our orphan counted");
        assert!(
            snap.others.contains_key(&unmarked),
            "another program missed"
        );
    }

    #[test]
    fn stat_lines_parse_with_spaces_and_parentheses_in_the_name() {
        let line = "4242 (my (odd) prog) R 1 4242 4242 0 -1 4194560 100 0 0 0 37 5 0 0 20 0 \
                    3 0 12345 1000 10 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
        let f = stat_fields(line).unwrap();
        assert_eq!(f.comm, "my (odd) prog");
        assert_eq!(
            (f.state, f.ppid, f.flags, f.threads, f.start, f.cpu),
            ('R', 1, 4194560, 3, 12345, 1)
        );
    }

    #[test]
    fn steal_is_summed_over_the_plan_cpus_only() {
        let stat =
            "cpu  1 2 3 4 5 6 7 99 0 0\ncpu0 1 0 0 0 0 0 0 5 0 0\ncpu1 1 0 0 0 0 0 0 7 0 0\n";
        assert_eq!(steal_ticks(stat, &[1]), 7);
        assert_eq!(steal_ticks(stat, &[0, 1]), 12);
    }

    #[test]
    fn a_busy_process_on_the_plan_cpu_is_a_disturbance_and_our_children_are_not() {
        let cpus = crate::measure::pin::allowed_cpus();
        // A child of ours spins: it is the run's own work, never a disturbance.
        let ours = std::process::Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"])
            .spawn()
            .unwrap();
        let a = snapshot(&cpus);
        std::thread::sleep(std::time::Duration::from_millis(200));
        let b = snapshot(&cpus);
        let mut ours = ours;
        let pid = ours.id() as i32;
        let _ = ours.kill();
        let _ = ours.wait();
        assert!(
            !a.others.contains_key(&pid) && !b.others.contains_key(&pid),
            "our own child counted as another program"
        );
        assert!(!b.others.contains_key(&(std::process::id() as i32)));
        let d = a.until(&b, &cpus);
        assert!(d.wall_ns >= 150_000_000, "{d:?}");
        // A synthetic other process: the arithmetic of the edges.
        let mut a = Snapshot {
            at_ns: 0,
            steal_ticks: 0,
            others: HashMap::new(),
        };
        a.others.insert(
            7,
            Proc {
                comm: "hog".into(),
                ns: 1_000_000,
                cpu: 1,
            },
        );
        let mut b = a.clone();
        b.at_ns = 100_000_000;
        b.others.get_mut(&7).unwrap().ns = 51_000_000;
        b.others.insert(
            8,
            Proc {
                comm: "elsewhere".into(),
                ns: 90_000_000,
                cpu: 5,
            },
        );
        let d = a.until(&b, &[0, 1]);
        assert_eq!(d.others_ns, 50_000_000);
        assert_eq!(d.top, Some(("hog".into(), 50_000_000)));
        assert!((d.share() - 0.25).abs() < 1e-9);
        assert!(d.disturbed());
        assert!(d.text().contains("25%"), "{}", d.text());
        let quiet = Disturbance {
            others_ns: 1_000_000,
            wall_ns: 10_000_000,
            cpus: 2,
            ..Default::default()
        };
        assert!(!quiet.disturbed(), "under the floor");
    }
}
