//! One case while its group's repetitions run: its repetitions, warm-up and counting ones,
//! re-runs of the disturbed, and the result it becomes.

use super::*;

/// One case of a group while its repetitions run.
pub(super) struct Running<'c> {
    pub(super) index: usize,
    pub(super) case: &'c Case,
    pub(super) r: CaseResult,
    pub(super) budget: Budget,
    pub(super) samples: Vec<Sample>,
    pub(super) counted: Option<Sample>,
    /// Still taking part (not failed, unavailable or not applicable).
    pub(super) live: bool,
    /// Other programs' and steal time over the kept repetitions.
    pub(super) noise: Disturbance,
    /// Kept repetitions that were disturbed (after their re-run).
    pub(super) disturbed: u32,
    /// Kept repetitions that stalled (after their re-run).
    pub(super) stalled: u32,
    /// A repetition that completed nothing was already run once more (once per cell).
    pub(super) nothing_retried: bool,
    /// The case failed because a repetition and its re-run completed nothing.
    stall_failed: bool,
}

/// The load generator's headroom warnings (`client_bound`, `both_saturated`) its repetitions
/// flagged in their counters: what a network ranking's basis reads.
pub(super) fn load_warnings(f: &crate::results::schema::CaseFigures, warnings: &mut Vec<Warning>) {
    let (client_bound, both_saturated, _) = f.counters.flags();
    if client_bound > 0 {
        warnings.push(Warning::ClientBound);
    }
    if both_saturated > 0 {
        warnings.push(Warning::BothSaturated);
    }
}

/// Whether `--explain` samples a case: network and storage cells (a micro loop's CPU is its own
/// thread's, and its figures already say where it goes).
pub(super) fn explains(case: &Case) -> bool {
    case.workload.kind() != crate::workload::Kind::Micro
}

pub(super) fn start_case<'c>(index: usize, case: &'c Case, set: &Setting<'_>) -> Running<'c> {
    let (w, m) = (case.workload, case.model);
    let budget = w.budget(set.budget);
    let r = CaseResult {
        workload: w.id().to_string(),
        model: m.id.to_string(),
        variant: case
            .point
            .as_ref()
            .and_then(|p| p.variant)
            .map(str::to_string),
        params: case
            .point
            .as_ref()
            .map(|p| p.params.clone())
            .unwrap_or_default(),
        equal_load: case.point.as_ref().and_then(|p| p.equal_load_at()),
        facts: case
            .point
            .as_ref()
            .map(|p| p.facts.clone())
            .unwrap_or_default(),
        status: Status::Measured,
        reason: None,
        op: w.op().to_string(),
        knobs: serde_json::to_value(m.knobs).unwrap_or_default(),
        // ring::build pins every SQPOLL poller to the plan's SQPOLL CPU.
        sqpoll_cpu: m
            .uring_knobs()
            .and_then(|k| k.sqpoll_idle_ms())
            .and(set.plan.sqpoll_cpu()),
        warmups: budget.warmups,
        repetitions: 0,
        rate_per_sec: None,
        scaling_efficiency: None,
        capacity_probe: false,
        explain: None,
        runs_started_unix_ns: Vec::new(),
        runs_order: Vec::new(),
        reruns: Vec::new(),
        disturbance: None,
        figures: None,
        warnings: Vec::new(),
    };
    let mut c = Running {
        index,
        case,
        r,
        budget,
        samples: Vec::with_capacity(budget.repetitions as usize),
        counted: None,
        live: true,
        noise: Disturbance::default(),
        disturbed: 0,
        stalled: 0,
        nothing_retried: false,
        stall_failed: false,
    };
    if case.point.is_none() {
        c.end(Status::NotApplicable, case.not_applicable.clone());
    } else if let Some(why) = m
        .availability_serving(set.env, serving(set.remote))
        .reason()
    {
        c.end(Status::Unavailable, why.to_string());
    }
    c
}

/// Where this run's servers take their connections: on another host (`--server-host`) over
/// the network, else over loopback.
pub(super) fn serving(remote: Option<&Remote>) -> crate::model::probe::Serving {
    match remote.is_some_and(|r| r.server.is_some()) {
        true => crate::model::probe::Serving::Network,
        false => crate::model::probe::Serving::Loopback,
    }
}

impl Running<'_> {
    pub(super) fn end(&mut self, status: Status, reason: impl Into<Option<String>>) {
        self.r.status = status;
        self.r.reason = reason.into();
        self.live = false;
    }

    /// One repetition: timed repetition `rep`, the counting one (`Some(COUNTING)`) or a
    /// warm-up (`None`). `None`: interrupted; `Some(None)`: the case ended (failed,
    /// unavailable, not applicable) and dropped out.
    pub(super) fn once(
        &mut self,
        set: &Setting<'_>,
        offered_rate: Option<f64>,
        rep: Option<u32>,
        obs: &dyn Observer,
    ) -> Option<Option<Sample>> {
        let counting = rep == Some(COUNTING);
        if stop_requested() {
            return None;
        }
        obs.case_started(self.index, self.case);
        let ctx = self.ctx(set, offered_rate, rep);
        let point = self.case.point.as_ref()?;
        let mut res = self.case.workload.run_once(&ctx, self.case.model, point);
        if let (Err(CaseError::Stalled(e)), false) = (&res, self.nothing_retried) {
            // Nothing completed in the window while the server ran: once per cell, the
            // repetition is run again and the re-run says why; a second stall fails it.
            self.nothing_retried = true;
            if let Some(round) = rep.filter(|_| !counting) {
                self.r.reruns.push(Rerun {
                    round,
                    why: format!("stall: {e:#}"),
                });
            }
            if stop_requested() {
                return None;
            }
            res = self.case.workload.run_once(&ctx, self.case.model, point);
        }
        match res {
            Ok(s) => Some(Some(s)),
            Err(e) => {
                self.end_with(e, "(and again when the repetition was run once more)");
                Some(None)
            }
        }
    }

    /// The context of repetition `rep` (`Some(COUNTING)`: the counting one; `None`: a
    /// warm-up).
    pub(super) fn ctx<'s>(
        &self,
        set: &Setting<'s>,
        offered_rate: Option<f64>,
        rep: Option<u32>,
    ) -> Ctx<'s> {
        let counting = rep == Some(COUNTING);
        Ctx {
            ops: self.budget.ops,
            warm_ops: self.budget.warm_ops,
            plan: set.plan,
            meter: set.meter,
            count_syscalls: counting,
            count_uring: counting && self.case.model.on_uring(),
            storage: set.storage,
            contenders: set.contenders,
            remote: set.remote,
            offered_rate,
            repetition: rep.filter(|_| !counting),
            explain: None,
            load_engine: set.load_engine,
        }
    }

    /// Ends the case with `e`'s status and reason (a stall, `stalled` appended to it).
    pub(super) fn end_with(&mut self, e: CaseError, stalled: &str) {
        let (status, reason) = match e {
            CaseError::Unavailable(why) => (Status::Unavailable, why),
            CaseError::NotApplicable(why) => (Status::NotApplicable, why),
            CaseError::Failed(e) => (Status::Failed, format!("{e:#}")),
            CaseError::Stalled(e) => {
                self.stall_failed = true;
                (Status::Failed, format!("{e:#} {stalled}"))
            }
        };
        self.end(status, reason);
    }

    /// Keeps a timed repetition made elsewhere (a round of slices): started at `started`, at
    /// place `pos` of its round's order, with the disturbance `d` read around it.
    pub(super) fn keep(&mut self, s: Sample, started: u64, pos: u32, d: &Disturbance) {
        self.disturbed += d.disturbed() as u32;
        self.noise.add(d);
        self.r.runs_started_unix_ns.push(started);
        self.r.runs_order.push(pos);
        self.samples.push(s);
    }

    /// Timed repetition `round` at place `pos` of its round's order, with the disturbance
    /// on the plan's `cpus` read around it. A disturbed repetition (other programs or steal
    /// on the plan's CPUs, or a CPU-bound cell's tasks starved of their CPU: see
    /// `disturb::starved`), or one whose throughput stalled (under half of this cell's
    /// earlier repetitions' median), is run once more in
    /// its place (see [`Reruns`]); the re-run is kept whatever it gives, and warned when it
    /// is still disturbed or stalled. `None`: interrupted.
    pub(super) fn timed(
        &mut self,
        set: &Setting<'_>,
        offered_rate: Option<f64>,
        (round, pos): (u32, u32),
        cpus: &[u32],
        reruns: &mut Reruns,
        obs: &dyn Observer,
    ) -> Option<()> {
        let mut again = false;
        loop {
            let started = crate::measure::clock::unix_ns();
            let before = set.watch.then(|| disturb::snapshot(cpus));
            let Some(s) = self.once(set, offered_rate, Some(round), obs)? else {
                // The case ended. A stall while other programs held the plan's CPUs may be
                // theirs, not the model's: the reason says so, naming who.
                if let (true, Some(b)) = (self.stall_failed, before) {
                    let d = b.until(&disturb::snapshot(cpus), cpus);
                    if d.disturbed() {
                        if let Some(r) = self.r.reason.as_mut() {
                            r.push_str(&format!(
                                "; during it {}: the stall may be theirs, not the model's; \
                                 rerun on a quiet machine",
                                d.text()
                            ));
                        }
                    }
                }
                return Some(()); // the case ended
            };
            let d = before
                .map(|b| b.until(&disturb::snapshot(cpus), cpus))
                .unwrap_or_default();
            let earlier: Vec<f64> = self.samples.iter().map(Sample::ops_per_sec).collect();
            let stall = stats::claims::is_stall(s.ops_per_sec(), &earlier, true);
            // A CPU-bound cell (micro, storage) whose measured tasks got less of the CPU
            // than in its earlier repetitions: disturbed by what the snapshot cannot name.
            let busy_before: Vec<f64> = self.samples.iter().map(Sample::cpu_busy).collect();
            let starved = set.watch
                && self.case.workload.kind() != crate::workload::Kind::Net
                && disturb::starved(s.cpu_busy(), &busy_before);
            let disturbed = d.disturbed() || starved;
            let why = if d.disturbed() {
                Some(format!("disturbed: {}", d.text()))
            } else if starved {
                Some(format!(
                    "starved: the measured tasks ran {:.0}% of the window against {:.0}% in \
                     the earlier repetitions (the CPU went to something the process snapshot \
                     cannot name: a kernel thread, interrupts, a process born and gone)",
                    s.cpu_busy() * 100.0,
                    stats::median(&busy_before) * 100.0
                ))
            } else if stall {
                Some(format!(
                    "stall: {:.0} ops/s against a median of {:.0} in the earlier repetitions",
                    s.ops_per_sec(),
                    stats::median(&earlier)
                ))
            } else {
                None
            };
            if let Some(why) = why {
                let lasting = disturbed && reruns.lasting;
                if !again && !lasting {
                    self.r.reruns.push(Rerun { round, why });
                    again = true;
                    continue;
                }
                if again && disturbed {
                    reruns.lasting = true;
                }
            }
            self.disturbed += disturbed as u32;
            self.stalled += stall as u32;
            self.noise.add(&d);
            self.r.runs_started_unix_ns.push(started);
            self.r.runs_order.push(pos);
            self.samples.push(s);
            return Some(());
        }
    }

    /// `--explain`'s repetition: untimed, its Sample discarded; the workload leaves where the
    /// CPU went in the slot. A failure here is the breakdown's reason, never the case's.
    /// `None`: interrupted.
    pub(super) fn explain_once(
        &mut self,
        set: &Setting<'_>,
        offered_rate: Option<f64>,
        obs: &dyn Observer,
    ) -> Option<()> {
        if stop_requested() {
            return None;
        }
        obs.case_started(self.index, self.case);
        let slot = crate::workload::ExplainSlot::default();
        let ctx = Ctx {
            ops: self.budget.ops,
            warm_ops: self.budget.warm_ops,
            plan: set.plan,
            meter: set.meter,
            count_syscalls: false,
            count_uring: false,
            storage: set.storage,
            contenders: set.contenders,
            remote: set.remote,
            offered_rate,
            repetition: None,
            explain: Some(&slot),
            load_engine: set.load_engine,
        };
        let point = self.case.point.as_ref()?;
        let res = self.case.workload.run_once(&ctx, self.case.model, point);
        let got = slot.into_inner().unwrap_or_else(|e| e.into_inner());
        self.r.explain = Some(match (res, got) {
            (Ok(_), Some(m)) => m,
            (Ok(_), None) => Measured::unavailable("this workload does not sample its window"),
            (Err(e), _) => Measured::unavailable(format!("the explain repetition failed: {e}")),
        });
        Some(())
    }

    /// The cell as its repetitions so far make it, for a look at its claims: its figures
    /// and the headroom warnings a ranking's basis reads.
    pub(super) fn interim(&self, looks: Looks) -> CaseResult {
        let mut r = self.r.clone();
        let mut f = stats::summarize(&self.samples, None);
        f.looks = Some(looks);
        load_warnings(&f, &mut r.warnings);
        r.repetitions = self.samples.len() as u32;
        r.figures = Some(f);
        r
    }

    pub(super) fn finish(self) -> CaseResult {
        let mut r = self.r;
        if r.status != Status::Measured {
            r.runs_started_unix_ns.clear();
            r.runs_order.clear();
            r.rate_per_sec = None;
            return r;
        }
        let mut noise = NoiseRecord::of(&self.noise);
        noise.disturbed_repetitions = self.disturbed;
        r.disturbance = Some(noise);
        if self.disturbed > 0 {
            r.warnings.push(Warning::Disturbed);
        }
        if self.stalled > 0 {
            r.warnings.push(Warning::Stalled);
        }
        let samples = self.samples;
        r.repetitions = samples.len() as u32;
        let f = stats::summarize(&samples, self.counted.as_ref());
        if f.run_p50_ns.rel_mad() > HIGH_SPREAD {
            r.warnings.push(Warning::HighSpread);
        }
        // Workloads that drive a server flag these per repetition in their counters.
        if f.counters.flags().2 > 0 {
            r.warnings.push(Warning::SharedCpus);
        }
        load_warnings(&f, &mut r.warnings);
        if f.counters.cpu_over_allowed_ns > 0 {
            r.warnings.push(Warning::CpuOverAllowed);
        }
        if f.cpu_below_syscalls() {
            r.warnings.push(Warning::CpuBelowSyscalls);
        }
        if f.counters
            .load
            .as_ref()
            .is_some_and(|l| l.load_unsettled_conns > 0)
        {
            r.warnings.push(Warning::WarmupUnsettled);
        }
        // The UDP load counts the datagrams it lost (`load::udp`).
        if f.counters
            .dgram
            .is_some_and(|d| d.dgram_lost + d.dgram_send_failed > 0)
        {
            r.warnings.push(Warning::DatagramsLost);
        }
        // Duplicates reach a measured cell only off loopback (`load::Report::unverified`).
        if f.counters.dgram.is_some_and(|d| d.dgram_duplicates > 0) {
            r.warnings.push(Warning::DatagramsDuplicated);
        }
        if f.counters.dgram.is_some_and(|d| d.dgram_reordered > 0) {
            r.warnings.push(Warning::DatagramsReordered);
        }
        // NAPI rows read each served socket's NAPI id (io::uring::server::napi).
        if f.counters.napi.is_some_and(|n| n.server_napi_id_zero > 0) {
            r.warnings.push(Warning::NoNapiId);
        }
        match agreement(&f.counters, f.ops_per_sec.median, samples.len() as u64) {
            Some(Agreement::WrkBound) => r.warnings.push(Warning::WrkBound),
            Some(Agreement::Disagrees) => r.warnings.push(Warning::LoadgenDisagrees),
            Some(Agreement::Agrees) | None => {}
        }
        r.figures = Some(f);
        r
    }
}
