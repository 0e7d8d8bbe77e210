//! The runner: for each parameter point, its cases (one per model) as a group, measured in
//! rounds (warm-up repetitions, then measured repetitions, each a fresh setup), statistics, and
//! an atomic save of the results after every point. Ctrl-C stops after the repetition in
//! progress and keeps every finished point (`"finished": false`; the point it interrupted is
//! dropped, its rounds incomplete); a second Ctrl-C stops at once, keeping what was saved.

mod case;
mod fio;
mod slices;

use case::{explains, start_case, Running};

pub use fio::randread_rows as fio_randread_rows;

use crate::env::EnvReport;
use crate::error::CaseError;
use crate::measure::disturb::{self, Disturbance};
use crate::measure::{calib, pin, Measured, Meter, Sample};
use crate::model::Catalog;
use crate::plan::{Budget, Case};
use crate::profile::Profile;
use crate::remote::Remote;
use crate::results::schema::{
    CaseResult, NoiseRecord, Rerun, RoundRecord, RunResults, Status, Warning,
};
use crate::results::store::Store;
use crate::shutdown::{aborting, stop_requested};
use crate::stats::sequential::Looks;
use crate::stats::wrk::{agreement, Agreement};
use crate::stats::{self, summary::HIGH_SPREAD};
use crate::ui::Observer;
use crate::workload::net::cell::Slicing;
use crate::workload::storage::StorageCtx;
use crate::workload::Ctx;
use anyhow::Context;

/// How the run ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Finished,
    Interrupted,
}

/// Measures every case, point by point, appending results to `run` and saving after each point (the
/// storage suite's work directory when storage workloads are selected; the run's external
/// contenders for the `ext:` models). With `fio_crosscheck` (`--crosscheck`, the run's
/// profile) and a storage suite, the fio rows of `storage.randread` follow the cases.
/// `explain`: `--explain`, as [`Setting::explain`] has it.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_with(
    cases: &[Case],
    budget: Budget,
    env: &EnvReport,
    run: &mut RunResults,
    store: &Store,
    obs: &dyn Observer,
    storage: Option<&StorageCtx>,
    contenders: &Catalog,
    remote: Option<&Remote>,
    fio_crosscheck: Option<Profile>,
    explain: Option<&[String]>,
) -> anyhow::Result<Outcome> {
    // The measured thread is this one: pin it, then open its syscall counter. A plan that
    // cannot be applied is never recorded as if it were.
    pin::pin_this_thread(run.plan.measured).context("the measured thread")?;
    let meter = Meter::new();
    let plan = run.plan.clone();
    let extension = Extension::new(budget, cases);
    obs.run_started(cases.len());
    for group in groups(cases) {
        if stop_requested() {
            break;
        }
        let ctx = Setting {
            budget,
            env,
            plan: &plan,
            meter: &meter,
            storage,
            contenders,
            remote,
            explain,
            watch: true,
            extension: &extension,
            load_engine: run.load_engine.unwrap_or(crate::load::Engine::Epoll),
        };
        let Some((results, rounds)) = measure_group(cases, &group, &ctx, &run.cases, obs) else {
            break; // interrupted mid-group: its cases are dropped
        };
        run.rounds.extend(rounds);
        if aborting() {
            // A second signal: what this group met after it (its files removed) is no result.
            return Ok(Outcome::Interrupted);
        }
        for (i, result) in group.iter().zip(results) {
            obs.case_finished(*i, &result);
            run.cases.push(result);
        }
        store.save(run)?;
    }
    // The fio cross-check, once every case was measured: a job cut short by Ctrl-C is not a
    // row, the jobs that finished are kept.
    if let (Some(profile), Some(st), false) = (fio_crosscheck, storage, stop_requested()) {
        run.cases
            .extend(fio::randread_rows(cases, st, profile, &plan));
    }
    let outcome = if stop_requested() {
        Outcome::Interrupted
    } else {
        Outcome::Finished
    };
    run.finished = outcome == Outcome::Finished;
    if !aborting() {
        store.save(run)?;
    }
    Ok(outcome)
}

/// What every case of a run is measured with.
#[derive(Clone, Copy)]
struct Setting<'a> {
    budget: Budget,
    env: &'a EnvReport,
    plan: &'a pin::CpuPlan,
    meter: &'a Meter,
    storage: Option<&'a StorageCtx>,
    contenders: &'a Catalog,
    /// The other hosts (`--server-host`, `--load-host`), if any.
    remote: Option<&'a Remote>,
    /// `--explain`: one more untimed repetition of each network and storage case, sampling
    /// where the CPU goes (`None`: not asked). With models named (`--explain MODEL,...`),
    /// only at the points where one of them runs, every cell of the point: a caption compares
    /// a named model with its point's leader, decided only once the run is analysed.
    explain: Option<&'a [String]>,
    /// Read other programs' CPU time around each repetition (the runner's own tests turn it
    /// off: a neighbour's scheduler tick must not change what they check).
    watch: bool,
    /// The run's time for added rounds.
    extension: &'a Extension,
    /// What the load generator drives echo and HTTP with (`run --load-engine`).
    load_engine: crate::load::Engine,
}

/// The run's time for added rounds (`Budget::extension_s`), shared fairly: each workload
/// whose points may add rounds gets an equal share when its first point comes, and what a
/// workload leaves unspent carries over to the next (so the first workloads cannot use up
/// what the last ones need).
struct Extension {
    /// Per workload that may add rounds.
    share: std::time::Duration,
    left: std::cell::Cell<std::time::Duration>,
    /// The workloads whose share was given.
    given: std::cell::RefCell<Vec<&'static str>>,
}

impl Extension {
    fn new(budget: Budget, cases: &[Case]) -> Extension {
        let mut adaptive: Vec<&str> = cases
            .iter()
            .filter(|c| c.workload.budget(budget).extra_rounds > 0)
            .map(|c| c.workload.id())
            .collect();
        adaptive.sort_unstable();
        adaptive.dedup();
        let total = std::time::Duration::from_secs(budget.extension_s);
        Extension {
            share: total / (adaptive.len().max(1) as u32),
            left: std::cell::Cell::new(std::time::Duration::ZERO),
            given: Default::default(),
        }
    }

    /// A fixed time for every workload together (the runner's tests).
    #[cfg(test)]
    fn fixed(d: std::time::Duration) -> Extension {
        Extension {
            share: std::time::Duration::ZERO,
            left: std::cell::Cell::new(d),
            given: Default::default(),
        }
    }

    /// What a point of `workload` may spend now (its workload's share given at its first
    /// look).
    fn allowance(&self, workload: &'static str) -> std::time::Duration {
        let mut given = self.given.borrow_mut();
        if !given.contains(&workload) {
            given.push(workload);
            self.left.set(self.left.get() + self.share);
        }
        self.left.get()
    }

    fn spend(&self, d: std::time::Duration) {
        self.left.set(self.left.get().saturating_sub(d));
    }
}

/// The cases of one parameter point (same workload and params; the models and variants at that
/// point), as indices into `cases`, in the order the points first appear: a workload lists a
/// capacity point before its equal-load point, so that group is measured first.
fn groups(cases: &[Case]) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    // A point is its params and whether it is an equal-load point (which has its capacity
    // point's params).
    type Key<'a> = (&'a str, Option<(&'a crate::results::Params, bool)>);
    let mut keys: Vec<Key<'_>> = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        let key = (
            c.workload.id(),
            c.point
                .as_ref()
                .map(|p| (&p.params, p.equal_load.is_some())),
        );
        match keys.iter().position(|k| *k == key) {
            Some(g) if key.1.is_some() => out[g].push(i),
            _ => {
                keys.push(key);
                out.push(vec![i]);
            }
        }
    }
    out
}

/// The offered rate of an equal-load point: its fraction of the slowest model's median ops/s
/// at its capacity point (same workload, params `capacity_of`), measured earlier in this run.
/// `Err`: no model's capacity was measured there.
pub(crate) fn equal_load_rate(
    workload: &str,
    eq: &crate::workload::EqualLoad,
    done: &[CaseResult],
) -> Result<f64, String> {
    let slowest = done
        .iter()
        .filter(|c| c.workload == workload && c.params == eq.capacity_of)
        .filter(|c| c.equal_load.is_none())
        .filter(|c| c.status == Status::Measured)
        .filter_map(|c| c.figures.as_ref().map(|f| f.ops_per_sec.median))
        .filter(|r| r.is_finite() && *r > 0.0)
        .fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.min(r))));
    match slowest {
        Some(r) => Ok(r * eq.fraction),
        None => {
            let at: Vec<String> = eq
                .capacity_of
                .0
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            Err(format!(
                "equal load needs a measured capacity, and no model's was measured at the \
                 capacity point ({})",
                at.join(" ")
            ))
        }
    }
}

/// The counting repetition's index in [`Running::once`].
const COUNTING: u32 = u32::MAX;

/// How a group's repetitions are re-run: a disturbed or stalled repetition once; once a
/// re-run was disturbed too, the disturbance is taken as lasting, and later disturbed
/// repetitions of the group are kept as they are (warned), so a busy machine does not double
/// the run.
#[derive(Default)]
struct Reruns {
    lasting: bool,
}

/// Measures one point's cases with their repetitions interleaved: round k runs timed
/// repetition k of every case in turn (A B C A B C ...), so drift on a shared machine hits
/// every model alike; a case's warm-ups run just before its first timed repetition, and the
/// syscall-counting repetitions come after the timed ones (an enabled syscall tracepoint slows
/// every syscall, so counting never shares a repetition with timing). A case that fails drops
/// out with its reason; the others go on. Each round runs the cases in a freshly shuffled
/// order after a calibration probe, both recorded (the returned rounds). `None`: interrupted.
fn measure_group(
    cases: &[Case],
    group: &[usize],
    set: &Setting<'_>,
    done: &[CaseResult],
    obs: &dyn Observer,
) -> Option<(Vec<CaseResult>, Vec<RoundRecord>)> {
    let mut run: Vec<Running<'_>> = group
        .iter()
        .map(|&i| start_case(i, &cases[i], set))
        .collect();
    let first = &cases[group[0]];
    let offered_rate = offer_equal_load(&mut run, first, done);
    let design = Design::of(&run, first, set, offered_rate);
    let (rounds, capacity_probe) = measure_rounds(&mut run, first, &design, set, obs)?;
    if !capacity_probe {
        count_and_explain(&mut run, set, offered_rate, obs)?;
    }
    let out = finish_group(run, first, &design, capacity_probe, done);
    Some((out, rounds))
}

/// An equal-load point's offered rate, derived from its capacity point: recorded in every live
/// case, which is driven at it. With no capacity measured the cases end `not_applicable`
/// (saying why) and there is no rate; a point of any other kind has none either.
fn offer_equal_load(run: &mut [Running<'_>], first: &Case, done: &[CaseResult]) -> Option<f64> {
    let eq = first.point.as_ref().and_then(|p| p.equal_load.as_ref())?;
    match equal_load_rate(first.workload.id(), eq, done) {
        Ok(rate) => {
            for c in run.iter_mut().filter(|c| c.live) {
                c.r.rate_per_sec = Some(rate.round() as u64);
            }
            Some(rate)
        }
        Err(why) => {
            for c in run.iter_mut().filter(|c| c.live) {
                c.end(Status::NotApplicable, why.clone());
            }
            None
        }
    }
}

/// How a point's rounds run, decided once before the first from its cases' budgets, its
/// workload and the run's setting.
struct Design {
    /// An equal-load point's offered rate ([`offer_equal_load`]).
    offered_rate: Option<f64>,
    /// The rounds the point runs before it may stop for want of time; with no looks, all of
    /// them.
    reps: u32,
    /// Sequential rounds (`stats::sequential`): from the first round a claim may be made at,
    /// the point looks at its claims after every round; it stops once every comparison with
    /// its leader is decided (behind, ahead or equivalent), or none left undecided could be
    /// within its rounds, and it adds rounds beyond `reps` only while the run's extension time
    /// allows. `None`: a fixed number of rounds.
    looks: Option<Looks>,
    /// An open-loop network point on this host: each round made of interleaved slices.
    sliced: Option<Slicing>,
    /// A network point in closed loop measures capacity: its first round is a probe of the
    /// load generator's headroom. Where fewer than two models had any (the load generator,
    /// not the server, set the pace: `client_bound`, `both_saturated`), nothing at the point
    /// can be ranked, so it stops there: the probe gives the equal-load rate and the load
    /// generator's limit (the cells say `capacity_probe`). With headroom it runs its rounds.
    capacity: bool,
}

impl Design {
    fn of(
        run: &[Running<'_>],
        first: &Case,
        set: &Setting<'_>,
        offered_rate: Option<f64>,
    ) -> Design {
        let reps = run.iter().map(|c| c.budget.repetitions).max().unwrap_or(0);
        let extra = run
            .iter()
            .filter(|c| c.live)
            .map(|c| c.budget.extra_rounds)
            .max()
            .unwrap_or(0);
        let looks = (extra > 0).then(|| {
            Looks::new(
                stats::claims::rounds_needed(stats::claims::ALPHA) as u32,
                reps + extra,
            )
        });
        // The rounds a point runs before it may stop for want of time: at least the fewest
        // whose smallest p can reach the design's per-look level (8 for looks 6 to 24), so
        // that every point can decide something.
        let reps = match looks {
            Some(l) => {
                reps.max(stats::claims::Level::sequential(stats::claims::ALPHA, l).first_claim())
            }
            None => reps,
        };
        let sliced = first
            .point
            .as_ref()
            .and_then(|p| first.workload.slices(p))
            .filter(|_| set.remote.is_none());
        let capacity = first.workload.kind() == crate::workload::Kind::Net
            && !first.workload.facts().open_loop
            && offered_rate.is_none()
            && sliced.is_none();
        Design {
            offered_rate,
            reps,
            looks,
            sliced,
            capacity,
        }
    }

    /// Whether the point stops before round `round` (0-based): its rounds are all run, its
    /// claims are settled at a look, or the rounds beyond `reps` have run out of the run's
    /// extension time (at the pace of the point's rounds so far, since `started`).
    fn stops_before(
        &self,
        round: u32,
        run: &[Running<'_>],
        first: &Case,
        set: &Setting<'_>,
        started: std::time::Instant,
    ) -> bool {
        let Some(l) = self.looks else {
            return round >= self.reps;
        };
        if round >= l.last {
            return true;
        }
        if round < l.first {
            return false;
        }
        match settled(
            run,
            first,
            l,
            self.offered_rate.is_some() || self.sliced.is_some(),
        ) {
            Settled::Decided => return true,
            Settled::Open { decidable: false } if round >= self.reps => return true,
            Settled::Open { .. } => {}
        }
        round >= self.reps
            && set.extension.allowance(first.workload.id()) < started.elapsed() / round.max(1)
    }
}

/// The point's rounds until its design stops them, each a fresh shuffle of the live cases
/// after a calibration probe (both recorded); and whether the point stopped after its first
/// round as a capacity probe. `None`: interrupted.
fn measure_rounds(
    run: &mut [Running<'_>],
    first: &Case,
    design: &Design,
    set: &Setting<'_>,
    obs: &dyn Observer,
) -> Option<(Vec<RoundRecord>, bool)> {
    let offered_rate = design.offered_rate;
    let cpus = disturb::plan_cpus(set.plan);
    // The probe's wake-up partner: the other side's CPU.
    let other = set
        .plan
        .helper
        .or(set.plan.load.first().copied())
        .filter(|c| *c != set.plan.measured);
    // Seeded per group from the clock: the order is recorded, not reproduced.
    let mut rng = fastrand::Rng::with_seed(crate::measure::clock::unix_ns());
    let mut reruns = Reruns::default();
    let mut rounds = Vec::new();
    let group_started = std::time::Instant::now();
    let mut round = 0;
    loop {
        if design.stops_before(round, run, first, set, group_started) {
            break;
        }
        let round_started = std::time::Instant::now();
        let mut order: Vec<usize> = (0..run.len())
            .filter(|&i| {
                let c = &run[i];
                c.live && round < c.budget.repetitions + c.budget.extra_rounds
            })
            .collect();
        if order.is_empty() {
            break;
        }
        rng.shuffle(&mut order);
        let probe = calib::probe(other);
        let mut labels = Vec::new();
        if let Some(slicing) = design.sliced {
            labels = order.iter().map(|&i| run[i].r.label()).collect();
            let at = slices::At {
                round,
                slicing,
                offered_rate,
            };
            slices::round(run, &order, set, at, &cpus, &mut rng, obs)?;
        }
        for (pos, &i) in order.iter().enumerate().filter(|_| design.sliced.is_none()) {
            let c = &mut run[i];
            if round == 0 {
                for _ in 0..c.budget.warmups {
                    c.once(set, offered_rate, None, obs)?;
                }
            }
            if !c.live {
                continue;
            }
            labels.push(c.r.label());
            c.timed(
                set,
                offered_rate,
                (round, pos as u32),
                &cpus,
                &mut reruns,
                obs,
            )?;
        }
        rounds.push(RoundRecord {
            workload: first.workload.id().to_string(),
            params: first
                .point
                .as_ref()
                .map(|p| p.params.clone())
                .unwrap_or_default(),
            equal_load: first.point.as_ref().and_then(|p| p.equal_load_at()),
            round,
            order: labels,
            probe,
        });
        if round >= design.reps {
            set.extension.spend(round_started.elapsed());
        }
        round += 1;
        if round == 1 && design.capacity && design.reps > 1 && !headroom(run) {
            return Some((rounds, true));
        }
    }
    Some((rounds, false))
}

/// After the timed rounds, the untimed repetitions of each live case: the one that counts
/// syscalls, and with `--explain` the one that samples where the CPU goes. `None`:
/// interrupted while counting.
fn count_and_explain(
    run: &mut [Running<'_>],
    set: &Setting<'_>,
    offered_rate: Option<f64>,
    obs: &dyn Observer,
) -> Option<()> {
    for c in run.iter_mut().filter(|c| c.live) {
        if let Some(s) = c.once(set, offered_rate, Some(COUNTING), obs)? {
            c.counted = Some(s);
        }
    }
    let named = |names: &[String]| {
        names.is_empty()
            || run
                .iter()
                .any(|c| names.iter().any(|n| n == c.case.model.id))
    };
    if set.explain.is_some_and(named) {
        // Interrupted here, the point's timed cells are finished: kept, each breakdown not
        // taken saying why (the next point sees the stop).
        let mut stopped = false;
        for c in run.iter_mut().filter(|c| c.live && explains(c.case)) {
            if stopped || c.explain_once(set, offered_rate, obs).is_none() {
                stopped = true;
                c.r.explain = Some(Measured::unavailable(
                    "interrupted before its explain repetition ended",
                ));
            }
        }
    }
    Some(())
}

/// The point's results: each case finished, with the design's looks (none for a capacity
/// probe, whose measured cells say `capacity_probe`), and at a point of a cores sweep its
/// efficiency against the one-thread point, measured before.
fn finish_group(
    run: Vec<Running<'_>>,
    first: &Case,
    design: &Design,
    capacity_probe: bool,
    done: &[CaseResult],
) -> Vec<CaseResult> {
    let mut out: Vec<CaseResult> = run.into_iter().map(Running::finish).collect();
    for r in &mut out {
        if let Some(f) = r.figures.as_mut() {
            f.looks = design.looks.filter(|_| !capacity_probe);
            if capacity_probe && f.syscalls_per_op.value().is_none() {
                f.syscalls_per_op = crate::measure::Measured::unavailable(
                    "not counted at a capacity probe (measured once for the load generator's \
                     limit and the equal-load rate; never ranked)",
                )
                .into();
            }
        }
        r.capacity_probe = capacity_probe && r.status == Status::Measured;
    }
    if let Some(sc) = first.point.as_ref().and_then(|p| p.scaling.as_ref()) {
        for r in &mut out {
            r.scaling_efficiency = stats::scaling::efficiency(r, sc.threads, &sc.base, done);
        }
    }
    out
}

/// Whether at least two live cases' repetitions so far had load-generator headroom (none
/// flagged `client_bound` or `both_saturated`): a capacity point where they did can rank.
fn headroom(run: &[Running<'_>]) -> bool {
    run.iter()
        .filter(|c| c.live && !c.samples.is_empty())
        .filter(|c| {
            c.samples.iter().all(|s| {
                s.counters
                    .load
                    .is_some_and(|l| l.client_bound == 0 && l.both_saturated == 0)
            })
        })
        .count()
        >= 2
}

/// Where a point's claims stand after a look.
#[derive(Debug, PartialEq, Eq)]
enum Settled {
    /// Every comparison with the leader is decided (behind, ahead or equivalent), or the
    /// point ranks nothing (one model, no basis): more rounds would add nothing.
    Decided,
    /// Some are undecided; `decidable` when one of them would likely be decided within the
    /// design's rounds at the noise its rounds showed (`Claim::rounds_to_decide`).
    Open { decidable: bool },
}

/// The point's claims as the ranking the report will make has them (`rank_point` on the
/// cells as they stand, judged under the point's design `looks`); with `fine` (an equal-load
/// point) every pair decided is not enough while its smallest visible difference is over the
/// equivalence margin and more rounds could bring it under.
fn settled(run: &[Running<'_>], first: &Case, looks: Looks, fine: bool) -> Settled {
    let interim: Vec<CaseResult> = run
        .iter()
        .filter(|c| c.live && !c.samples.is_empty())
        .map(|c| c.interim(looks))
        .collect();
    let refs: Vec<&CaseResult> = interim.iter().collect();
    let Some(r) = crate::analysis::rank_point(&first.workload.facts(), &refs) else {
        return Settled::Decided;
    };
    let open: Vec<_> = r.undecided().map(|o| o.confidence.claim.as_ref()).collect();
    if open.is_empty() {
        // At equal load, decided and fine enough: the smallest difference the point can see
        // (the median half-width of its intervals, which narrows as 1/sqrt(rounds)) within the
        // equivalence margin, where its last round can bring it there.
        let margin = stats::claims::MARGIN * 100.0;
        let rounds = r.reps.max(1) as f64;
        return match r.invisible_pct() {
            Some(v) if fine && v > margin && rounds * (v / margin).powi(2) <= looks.last as f64 => {
                Settled::Open { decidable: true }
            }
            _ => Settled::Decided,
        };
    }
    let decidable = open.iter().any(|c| match c {
        Some(c) => c
            .rounds_to_decide()
            .is_none_or(|n| n <= looks.last as usize),
        None => true,
    });
    Settled::Open { decidable }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{cpu::CpuReading, Hist};
    use crate::model::ModelSpec;
    use crate::results::Params;
    use crate::workload::{EqualLoad, Point, Workload};
    use std::sync::Mutex;

    /// One call of a fake workload: (model, point n, counting, offered rate).
    type Call = (String, u64, bool, Option<f64>);
    /// What the fake workloads were asked to run, in order.
    static LOG: Mutex<Vec<Call>> = Mutex::new(Vec::new());
    /// Tests share LOG: one at a time.
    static SERIAL: Mutex<()> = Mutex::new(());

    /// Points n = 1 (capacity: ops/s = 1000 x the model's rank) and n = 2 (equal load at half
    /// the slowest's capacity at n = 1). Model `epoll-et` fails its second timed repetition.
    struct Fake {
        id: &'static str,
    }

    fn rank(m: &ModelSpec) -> u64 {
        match m.id {
            "blocking" => 3,
            "epoll-lt" => 2,
            _ => 1,
        }
    }

    #[derive(serde::Serialize, serde::Deserialize)]
    struct Args {
        n: u64,
    }

    impl Workload for Fake {
        fn kind(&self) -> crate::workload::Kind {
            // The defaults of a loop on the measured thread: the budget as given.
            crate::workload::Kind::Micro
        }
        fn id(&self) -> &'static str {
            self.id
        }
        fn about(&self) -> &'static str {
            "fake"
        }
        fn op(&self) -> &'static str {
            "nothing"
        }
        fn accepts(&self, _: &ModelSpec) -> Result<(), String> {
            Ok(())
        }
        fn points(&self, _: Profile, _: &ModelSpec) -> Vec<Point> {
            let cap = Point::of(Args { n: 1 });
            let mut eq = Point::of(Args { n: 2 });
            eq.equal_load = Some(EqualLoad {
                fraction: 0.5,
                capacity_of: cap.params.clone(),
            });
            vec![cap, eq]
        }
        fn run_once(&self, ctx: &Ctx<'_>, m: &ModelSpec, p: &Point) -> Result<Sample, CaseError> {
            let n = p.args::<Args>()?.n;
            let mut log = LOG.lock().unwrap();
            log.push((m.id.into(), n, ctx.count_syscalls, ctx.offered_rate));
            let timed_calls = log
                .iter()
                .filter(|(id, k, c, _)| id == m.id && *k == n && !c)
                .count();
            if m.id == "epoll-et" && n == 1 && timed_calls == 3 {
                // Its warm-up and first timed repetition went fine; the second fails.
                return Err(CaseError::Failed(anyhow::anyhow!("broken on purpose")));
            }
            let ops = 1000 * rank(m);
            Ok(Sample {
                ops,
                bytes: 0,
                wall_ns: 1_000_000_000,
                timed_ns: 1_000_000_000,
                cpu: CpuReading::default(),
                syscalls: None,
                uring: None,
                memory: None,
                latency: Hist::new(),
                timeline: None,
                counters: Default::default(),
            })
        }
    }

    static CAPACITY_THEN_EQUAL: Fake = Fake { id: "fake.eq" };

    fn run_fake(w: &'static Fake, models: &[&str], done: &mut Vec<CaseResult>) -> Vec<RoundRecord> {
        let models: Vec<&'static ModelSpec> = models
            .iter()
            .map(|id| crate::registry::model(id).unwrap())
            .collect();
        let plan = pin::CpuPlan::pair(0, None);
        let cases =
            crate::plan::expand(&[w as &dyn Workload], &models, false, Profile::Smoke, &plan);
        let env = crate::env::probe();
        let meter = Meter::new();
        let extension = Extension::fixed(std::time::Duration::ZERO);
        let budget = Budget {
            warmups: 1,
            repetitions: 3,
            ops: 1,
            warm_ops: 0,
            runs_given: true,
            extra_rounds: 0,
            extension_s: 0,
        };
        let set = Setting {
            budget,
            env: &env,
            plan: &plan,
            meter: &meter,
            storage: None,
            contenders: &crate::model::contender::NO_CONTENDERS,
            remote: None,
            explain: None,
            watch: false,
            extension: &extension,
            load_engine: crate::load::Engine::Epoll,
        };
        let mut rounds = Vec::new();
        for g in groups(&cases) {
            let (rs, r) = measure_group(&cases, &g, &set, done, &crate::ui::Silent).unwrap();
            done.extend(rs);
            rounds.extend(r);
        }
        rounds
    }

    /// A closed-loop network point whose load generator had headroom or not (`BOUND`).
    struct Capacity;
    static BOUND: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

    impl Workload for Capacity {
        fn kind(&self) -> crate::workload::Kind {
            crate::workload::Kind::Net
        }
        fn id(&self) -> &'static str {
            "fake.capacity"
        }
        fn about(&self) -> &'static str {
            "fake"
        }
        fn op(&self) -> &'static str {
            "nothing"
        }
        fn accepts(&self, _: &ModelSpec) -> Result<(), String> {
            Ok(())
        }
        fn points(&self, _: Profile, _: &ModelSpec) -> Vec<Point> {
            vec![Point::of(Args { n: 1 })]
        }
        fn run_once(&self, _: &Ctx<'_>, m: &ModelSpec, _: &Point) -> Result<Sample, CaseError> {
            let bound = BOUND.load(std::sync::atomic::Ordering::Relaxed);
            let counters = crate::measure::CellCounters {
                load: Some(crate::measure::cell::LoadCounters {
                    client_bound: u64::from(bound),
                    ..Default::default()
                }),
                ..Default::default()
            };
            let mut latency = Hist::new();
            latency.record_n(1000, 100);
            Ok(Sample {
                ops: 1000 * rank(m),
                bytes: 0,
                wall_ns: 1_000_000_000,
                timed_ns: 1_000_000_000,
                cpu: CpuReading::default(),
                syscalls: None,
                uring: None,
                memory: None,
                latency,
                timeline: None,
                counters,
            })
        }
    }

    #[test]
    fn a_client_bound_capacity_point_is_probed_once_and_says_so() {
        let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let run = |bound: bool| {
            BOUND.store(bound, std::sync::atomic::Ordering::Relaxed);
            let models: Vec<&'static ModelSpec> = ["blocking", "epoll-lt", "uring"]
                .iter()
                .map(|id| crate::registry::model(id).unwrap())
                .collect();
            let plan = pin::CpuPlan::pair(0, None);
            let w: &'static dyn Workload = &Capacity;
            let cases = crate::plan::expand(&[w], &models, false, Profile::Quick, &plan);
            let env = crate::env::probe();
            let meter = Meter::new();
            let extension = Extension::fixed(std::time::Duration::ZERO);
            let mut budget = Profile::Quick.budget();
            (budget.repetitions, budget.runs_given) = (4, true);
            let set = Setting {
                budget,
                env: &env,
                plan: &plan,
                meter: &meter,
                storage: None,
                contenders: &crate::model::contender::NO_CONTENDERS,
                remote: None,
                explain: None,
                watch: false,
                extension: &extension,
                load_engine: crate::load::Engine::Epoll,
            };
            let mut done = Vec::new();
            for g in groups(&cases) {
                let (rs, _) = measure_group(&cases, &g, &set, &[], &crate::ui::Silent).unwrap();
                done.extend(rs);
            }
            done
        };
        // No headroom: one round, the cells say they were a probe.
        let done = run(true);
        assert_eq!(done.len(), 3);
        for c in &done {
            assert!(c.capacity_probe, "{c:?}");
            assert_eq!(c.repetitions, 1, "{c:?}");
            let why = c.figures.as_ref().unwrap().syscalls_per_op.measured();
            assert!(why.to_string().contains("capacity probe"), "{why}");
            assert!(c.warnings.contains(&Warning::ClientBound), "{c:?}");
        }
        // Headroom: its rounds, ranked as before.
        let done = run(false);
        for c in &done {
            assert!(!c.capacity_probe, "{c:?}");
            assert_eq!(c.repetitions, 4, "{c:?}");
        }
    }

    #[test]
    fn repetitions_run_in_shuffled_rounds_and_a_failing_model_drops_out() {
        let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        LOG.lock().unwrap().clear();
        let mut done = Vec::new();
        let rounds = run_fake(
            &CAPACITY_THEN_EQUAL,
            &["blocking", "epoll-lt", "epoll-et"],
            &mut done,
        );
        let log = LOG.lock().unwrap().clone();
        let at1: Vec<(&str, bool)> = log
            .iter()
            .filter(|e| e.1 == 1)
            .map(|e| (e.0.as_str(), e.2))
            .collect();
        // Round 1: every model (its warm-up just before its first timed repetition); round
        // 2: every model, epoll-et failing and dropping out; round 3: the two left; then the
        // counting repetitions.
        let cap_rounds: Vec<&RoundRecord> =
            rounds.iter().filter(|r| r.params.0["n"] == 1).collect();
        assert_eq!(cap_rounds.len(), 3);
        let sorted = |r: &RoundRecord| {
            let mut v = r.order.clone();
            v.sort();
            v
        };
        assert_eq!(sorted(cap_rounds[0]), ["blocking", "epoll-et", "epoll-lt"]);
        assert_eq!(sorted(cap_rounds[1]), ["blocking", "epoll-et", "epoll-lt"]);
        assert_eq!(sorted(cap_rounds[2]), ["blocking", "epoll-lt"]);
        assert!(cap_rounds.iter().all(|r| r.probe.syscall_ns > 0.0));
        let mut want: Vec<(&str, bool)> = Vec::new();
        for (k, r) in cap_rounds.iter().enumerate() {
            for m in &r.order {
                if k == 0 {
                    want.push((m, false)); // the warm-up
                }
                want.push((m, false));
            }
        }
        want.push(("blocking", true));
        want.push(("epoll-lt", true));
        // The counting repetitions run in case order, after every timed one.
        assert_eq!(at1, want);
        let cap: Vec<&CaseResult> = done.iter().filter(|c| c.params.0["n"] == 1).collect();
        assert_eq!(cap.len(), 3);
        for c in &cap {
            if c.model == "epoll-et" {
                assert_eq!(c.status, Status::Failed);
                assert!(c.reason.as_deref().unwrap().contains("broken on purpose"));
                assert!(c.runs_started_unix_ns.is_empty() && c.runs_order.is_empty());
            } else {
                assert_eq!(c.status, Status::Measured, "{c:?}");
                assert_eq!(c.repetitions, 3);
                let t = &c.runs_started_unix_ns;
                assert_eq!(t.len(), 3, "{t:?}");
                assert!(t.windows(2).all(|w| w[0] < w[1]) && t[0] > 0, "{t:?}");
                // Its place in each round's order, as recorded there.
                for (k, pos) in c.runs_order.iter().enumerate() {
                    assert_eq!(cap_rounds[k].order[*pos as usize], c.model, "{c:?}");
                }
                assert!(c.disturbance.is_some() && c.reruns.is_empty());
            }
        }
    }

    /// One point: `epoll-lt` 30% slower than `blocking` in every round; `epoll-et` and `uring`
    /// swing from round to round between 20% faster and 40% slower than `blocking` (undecided
    /// however many rounds, their median above blocking's, so blocking leads); `uring-defer`
    /// 3x slower, always.
    struct Noisy;

    static NOISY: Noisy = Noisy;

    impl Workload for Noisy {
        fn kind(&self) -> crate::workload::Kind {
            // The defaults of a loop on the measured thread: the budget as given.
            crate::workload::Kind::Micro
        }
        fn id(&self) -> &'static str {
            "fake.noisy"
        }
        fn about(&self) -> &'static str {
            "fake"
        }
        fn op(&self) -> &'static str {
            "nothing"
        }
        fn accepts(&self, _: &ModelSpec) -> Result<(), String> {
            Ok(())
        }
        fn points(&self, _: Profile, _: &ModelSpec) -> Vec<Point> {
            vec![Point::of(Args { n: 1 })]
        }
        fn budget(&self, b: Budget) -> Budget {
            Budget {
                repetitions: 6,
                extra_rounds: 4,
                ..b
            }
        }
        fn run_once(&self, ctx: &Ctx<'_>, m: &ModelSpec, _: &Point) -> Result<Sample, CaseError> {
            // By round, not by call: the shuffled order must not decide who swings where.
            let k = ctx.repetition.unwrap_or(0);
            let ns = match m.id {
                "epoll-lt" => 1300,
                "epoll-et" | "uring" => [800, 1400, 1000, 1300, 900, 1200][(k % 6) as usize],
                "uring-defer" => 3000,
                _ => 1000,
            };
            let mut latency = Hist::new();
            latency.record_n(ns, 100);
            Ok(Sample {
                ops: 100,
                bytes: 0,
                wall_ns: 100 * ns,
                timed_ns: 100 * ns,
                cpu: CpuReading::default(),
                syscalls: None,
                uring: None,
                memory: None,
                latency,
                timeline: None,
                counters: Default::default(),
            })
        }
    }

    fn run_noisy(models: &[&str], pool: std::time::Duration) -> (Vec<CaseResult>, usize) {
        let models: Vec<&'static ModelSpec> = models
            .iter()
            .map(|id| crate::registry::model(id).unwrap())
            .collect();
        let plan = pin::CpuPlan::pair(0, None);
        let cases = crate::plan::expand(
            &[&NOISY as &dyn Workload],
            &models,
            false,
            Profile::Quick,
            &plan,
        );
        let env = crate::env::probe();
        let meter = Meter::new();
        let extension = Extension::fixed(pool);
        let set = Setting {
            budget: Profile::Quick.budget(),
            env: &env,
            plan: &plan,
            meter: &meter,
            storage: None,
            contenders: &crate::model::contender::NO_CONTENDERS,
            remote: None,
            explain: None,
            watch: false,
            extension: &extension,
            load_engine: crate::load::Engine::Epoll,
        };
        let mut done = Vec::new();
        let mut rounds = 0;
        for g in groups(&cases) {
            let (rs, r) = measure_group(&cases, &g, &set, &[], &crate::ui::Silent).unwrap();
            done.extend(rs);
            rounds += r.len();
        }
        (done, rounds)
    }

    #[test]
    fn a_point_stops_once_decided_and_adds_rounds_only_where_they_can_decide() {
        let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let minute = std::time::Duration::from_secs(60);
        // uring-defer 3x behind blocking in every round: decided at the first look whose
        // smallest p reaches the design's per-look level (looks 6 to 10: round 7), before the
        // point's last round.
        let (done, rounds) = run_noisy(&["blocking", "uring-defer"], minute);
        assert_eq!(rounds, 7, "{done:?}");
        for c in &done {
            let f = c.figures.as_ref().unwrap();
            assert_eq!(f.looks, Some(Looks::new(6, 10)), "{c:?}");
        }
        // Two models the same in every round: equivalent, as early.
        let (done, rounds) = run_noisy(&["blocking", "threadpool"], minute);
        assert_eq!(rounds, 7, "{done:?}");
        // Rounds that swing 40% both ways could not be decided within ten: no round is added
        // beyond the seven the point runs anyway (its six, raised to the fewest that can
        // reach the design's per-look level).
        let (done, rounds) = run_noisy(&["blocking", "epoll-et"], minute);
        assert_eq!(rounds, 7, "{done:?}");
        // Without extension time, nothing is added beyond those seven.
        let (done, rounds) = run_noisy(&["blocking", "epoll-lt"], std::time::Duration::ZERO);
        assert_eq!(rounds, 7, "{done:?}");
        assert!(done.iter().all(|c| c.repetitions == 7));
    }

    #[test]
    fn an_equal_load_point_runs_at_a_share_of_the_slowest_measured_capacity() {
        let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        LOG.lock().unwrap().clear();
        let mut done = Vec::new();
        run_fake(&CAPACITY_THEN_EQUAL, &["blocking", "epoll-lt"], &mut done);
        // Slowest capacity at n = 1: epoll-lt's 2000 ops/s; half of it.
        let log = LOG.lock().unwrap().clone();
        assert!(log.iter().filter(|e| e.1 == 2).all(|e| e.3 == Some(1000.0)));
        assert!(log.iter().filter(|e| e.1 == 1).all(|e| e.3.is_none()));
        let eq: Vec<&CaseResult> = done.iter().filter(|c| c.params.0["n"] == 2).collect();
        assert_eq!(eq.len(), 2);
        assert!(eq.iter().all(|c| c.rate_per_sec == Some(1000)), "{eq:?}");
        let at = Some(crate::results::EqualLoadAt { of_slowest: 0.5 });
        assert!(eq.iter().all(|c| c.equal_load == at), "{eq:?}");
        assert!(eq[0].params_text().ends_with(" equal-load"), "{eq:?}");
        assert!(done
            .iter()
            .filter(|c| c.params.0["n"] == 1)
            .all(|c| c.rate_per_sec.is_none() && c.equal_load.is_none()));
    }

    #[test]
    fn without_a_measured_capacity_the_equal_load_point_is_not_applicable() {
        let eq = EqualLoad {
            fraction: 0.5,
            capacity_of: Params::new().with("n", 1u64),
        };
        let why = equal_load_rate("fake.eq", &eq, &[]).unwrap_err();
        assert!(why.contains("n=1"), "{why}");
    }

    /// Every timed repetition stalls: nothing completes, as a server starved by a neighbour.
    struct Stalls;

    static STALLS: Stalls = Stalls;

    impl Workload for Stalls {
        fn kind(&self) -> crate::workload::Kind {
            crate::workload::Kind::Micro
        }
        fn id(&self) -> &'static str {
            "fake.stalls"
        }
        fn about(&self) -> &'static str {
            "fake"
        }
        fn op(&self) -> &'static str {
            "nothing"
        }
        fn accepts(&self, _: &ModelSpec) -> Result<(), String> {
            Ok(())
        }
        fn points(&self, _: Profile, _: &ModelSpec) -> Vec<Point> {
            vec![Point::of(Args { n: 1 })]
        }
        fn run_once(&self, ctx: &Ctx<'_>, _: &ModelSpec, _: &Point) -> Result<Sample, CaseError> {
            if ctx.repetition.is_none() {
                // The warm-up goes fine.
                return Ok(Sample {
                    ops: 1,
                    bytes: 0,
                    wall_ns: 1,
                    timed_ns: 1,
                    cpu: CpuReading::default(),
                    syscalls: None,
                    uring: None,
                    memory: None,
                    latency: Hist::new(),
                    timeline: None,
                    counters: Default::default(),
                });
            }
            std::thread::sleep(std::time::Duration::from_millis(150));
            Err(CaseError::Stalled(anyhow::anyhow!(
                "no response completed in the measured window"
            )))
        }
    }

    #[test]
    fn a_stall_beside_a_cpu_hog_names_the_hog_in_its_failure() {
        let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        // Another program spinning on the plan's CPU: an orphan, not our descendant, without
        // our owner mark, pinned there.
        let out = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done >/dev/null 2>&1 & echo $!"])
            .env_remove(crate::child::OWNER_ENV)
            .stdout(std::process::Stdio::piped())
            .output()
            .unwrap();
        let hog: i32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        struct Kill(i32);
        impl Drop for Kill {
            fn drop(&mut self) {
                let _ = rustix::process::kill_process(
                    rustix::process::Pid::from_raw(self.0).unwrap(),
                    rustix::process::Signal::KILL,
                );
            }
        }
        let _kill = Kill(hog);
        let cpu = pin::allowed_cpus()[0];
        pin::pin_tid(hog, cpu).unwrap();
        let plan = pin::CpuPlan::pair(cpu, None);
        let models = [crate::registry::model("blocking").unwrap()];
        let cases = crate::plan::expand(
            &[&STALLS as &dyn Workload],
            &models,
            false,
            Profile::Smoke,
            &plan,
        );
        let env = crate::env::probe();
        let meter = Meter::new();
        let extension = Extension::fixed(std::time::Duration::ZERO);
        let set = Setting {
            budget: Budget {
                warmups: 1,
                repetitions: 2,
                ops: 1,
                warm_ops: 0,
                runs_given: true,
                extra_rounds: 0,
                extension_s: 0,
            },
            env: &env,
            plan: &plan,
            meter: &meter,
            storage: None,
            contenders: &crate::model::contender::NO_CONTENDERS,
            remote: None,
            explain: None,
            watch: true,
            extension: &extension,
            load_engine: crate::load::Engine::Epoll,
        };
        let mut done = Vec::new();
        for g in groups(&cases) {
            let (rs, _) = measure_group(&cases, &g, &set, &done, &crate::ui::Silent).unwrap();
            done.extend(rs);
        }
        let c = &done[0];
        assert_eq!(c.status, Status::Failed, "{c:?}");
        let reason = c.reason.as_deref().unwrap_or("");
        assert!(
            reason.contains("run once more") && reason.contains("the stall may be theirs"),
            "{reason}"
        );
        // Who took most is named (the hog, or on a busy machine something busier).
        assert!(reason.contains("by other programs (most: "), "{reason}");
    }
}
