//! `ringside compare`'s sentences: every verdict, reason, gate line and remedy that
//! `analysis::compare` decides as a typed value is worded here, and nowhere else. The
//! matches over those values have no `_` arm (the module denies
//! `clippy::wildcard_enum_match_arm`), so a new kind does not compile until it is worded.
//! Numbers are the analysis's; this only formats them.

use crate::analysis::compare::{
    Blind, Blocked, CellState, CellVerdict, Claim, Drift, Gate, GateFailure, Jumped, Lost, Matrix,
    Missing, More, NoisyGroup, NotCompared, Outcome, Power, ProbeDrift, RelativeTo, Remedy,
    ServerCell, Skip, TooFew, Unseen, Untested, NOISE_MIN_CELLS,
};
use crate::results::Status;

/// "14%", "3.4%".
pub(crate) fn pct_words(p: f64) -> String {
    if p < 10.0 {
        format!("{p:.1}%")
    } else {
        format!("{p:.0}%")
    }
}

/// The gate's verdict in one word.
pub(crate) fn outcome_word(o: Outcome) -> &'static str {
    match o {
        Outcome::Pass => "PASS",
        Outcome::Inconclusive => "INCONCLUSIVE",
        Outcome::Regression => "REGRESSION",
    }
}

/// A cell's verdict in words: "REGRESSION", "improved", "UNTESTED: <why>", the machine's
/// drift, unstable here, a change within the threshold, or "no significant change".
pub(crate) fn verdict(v: &CellVerdict, threshold: f64) -> String {
    match v {
        CellVerdict::Regression => "REGRESSION".into(),
        CellVerdict::Improved => "improved".into(),
        CellVerdict::Untested(u) => format!("UNTESTED: {}", untested(u)),
        CellVerdict::Drift(d) => format!("the machine's drift: {}", drift(d)),
        CellVerdict::Unstable(j) => format!("unstable here: {}", jumped(j)),
        CellVerdict::Blind(b) => format!("UNTESTED at {threshold}%: {}", blind_text(b, threshold)),
        CellVerdict::ChangedWithin => format!("changed within {threshold}%"),
        CellVerdict::NoChange => "no significant change".into(),
    }
}

/// "too few repetitions to test (n=3; need >= 4)"; a side with none recorded says so.
pub(crate) fn too_few(t: &TooFew) -> String {
    let (nb, nn) = t.sizes;
    let need = t.need;
    if nb == 0 || nn == 0 {
        let which = match (nb, nn) {
            (0, 0) => "either file",
            (0, _) => "BASE",
            _ => "NEW",
        };
        return format!(
            "no per-repetition values in {which} to test (need >= {need} repetitions each)"
        );
    }
    let n = if nb == nn {
        format!("n={nb}")
    } else {
        format!("n={nb} and {nn}")
    };
    format!("too few repetitions to test ({n}; need >= {need})")
}

/// Why a change beyond the threshold was not tested.
pub(crate) fn untested(u: &Untested) -> String {
    match u {
        Untested::TooFew(t) => too_few(t),
        Untested::Apart {
            figure,
            pct,
            floor,
            sizes: (nb, nn),
            tests,
            lone,
        } => format!(
            "{} {pct:+.1}% with every repetition apart (p={floor:.3}, the smallest {nb} and \
             {nn} repetitions can give), but a lone change among {tests} tests needs \
             p <= {lone:.4} to be confirmed: too few repetitions to test it here",
            figure.name()
        ),
        Untested::Unpaired { figure, pct, peers } => format!(
            "{} {pct:+.1}%, but its point's {peers} other model{} {} not compared              (disturbed): nothing measured in the same rounds tells the machine's drift from              its change",
            figure.name(),
            if *peers == 1 { "" } else { "s" },
            if *peers == 1 { "was" } else { "were" },
        ),
    }
}

/// What a relative change is relative to: the other model, or "the point's 3 other models".
pub(crate) fn relative_to(r: &RelativeTo) -> String {
    match r {
        RelativeTo::Model(label) => label.clone(),
        RelativeTo::Others(n) => format!("the point's {n} other models"),
    }
}

/// Why a change is the machine's.
pub(crate) fn drift(d: &Drift) -> String {
    match d {
        Drift::Poller {
            figure,
            pct,
            wake_pct,
        } => format!(
            "{} {pct:+.1}%, but its ops cross to a SQPOLL poller on another CPU (its \
             point's other models' do not) and the machine's cross-CPU wake-up moved \
             {wake_pct:+.0}% between the runs the same way (calibration probe)",
            figure.name()
        ),
        Drift::Relative {
            figure,
            pct,
            relative_pct,
            to,
        } => format!(
            "{} {pct:+.1}% but {relative_pct:+.1}% relative to {} in the same rounds",
            figure.name(),
            to.as_ref()
                .map_or_else(|| "the point's others".to_string(), relative_to)
        ),
        Drift::WithinProbes {
            figure,
            pct,
            drift_pct,
        } => format!(
            "{} {pct:+.1}%, within the threshold plus the probes' drift ({drift_pct:.0}%)",
            figure.name()
        ),
    }
}

/// A change within the jump its model showed within a run.
pub(crate) fn jumped(j: &Jumped) -> String {
    // The run of spaces is the wording as it was pinned (tests/fixtures/golden).
    format!(
        "{} {:+.1}%, within the {:.0}% jump between two levels {} showed                          within {} ({})",
        j.figure.name(),
        j.pct,
        j.gap_pct,
        j.unstable.label,
        j.which,
        j.unstable.text()
    )
}

/// Why a cell could not see a change of `threshold` percent, as (the figure it is of, why):
/// (CPU/op, "could see only changes beyond 14% (6 repetitions a side, noise between runs
/// ±4.1% a run; 40 a side would see 5% at this noise)"); see [`blind_text`].
pub(crate) fn blind_reason(b: &Blind, threshold: f64) -> (Option<&'static str>, String) {
    let t = threshold;
    match b {
        Blind::Figure(fig, p) => {
            let more = match p.more {
                More::Nothing => String::new(),
                More::Rounds(n) => format!("; {n} a side would see {t}% at this noise"),
                More::NoNumber(f) => format!(
                    "; no number of repetitions would: the noise between runs alone hides \
                     changes under {}",
                    pct_words(f)
                ),
            };
            let why = match &p.power {
                Power::Sees(m) => format!(
                    "could see only changes beyond {} ({}{}{more})",
                    pct_words(*m),
                    sizes_text(p.sizes),
                    p.noise_pct
                        .map(|n| format!(", noise between runs ±{n:.1}% a run"))
                        .unwrap_or_default()
                ),
                Power::TooFew { sizes, need } => format!(
                    "too few repetitions to test ({}; a change alone among {} tests needs \
                     >= {need} a side{more})",
                    sizes_text(*sizes),
                    p.tests
                ),
                Power::NoValues(t) => too_few(t),
                Power::NoiseUnknown => format!(
                    "the noise between runs is not estimated (under {NOISE_MIN_CELLS} tests of \
                     it), so what its test could see is unknown"
                ),
            };
            (Some(fig.name()), why)
        }
        Blind::MachineMoved {
            drift_pct,
            within_pct,
        } => (
            None,
            format!(
                "a model alone at its point while the calibration probes moved {drift_pct:.0}% \
                 between the runs: its changes within {within_pct:.0}% are taken as the \
                 machine's"
            ),
        ),
        Blind::Poller(w) => (
            None,
            format!(
                "its ops cross to a SQPOLL poller and the machine's cross-CPU wake-up got \
                 {w:.0}% slower between the runs: a change for the worse is taken as the \
                 machine's"
            ),
        ),
        Blind::Jump(which, gap) => (
            None,
            format!(
                "its model jumped between two levels {gap:.0}% apart within {which} in \
                 this workload: its changes within that are not called"
            ),
        ),
    }
}

/// Why a cell could not see a change of `threshold` percent: its reasons in order, the
/// figures that share one named together ("p50, ops/s: too few repetitions ...").
pub(crate) fn blind_text(blind: &[Blind], threshold: f64) -> String {
    let mut merged: Vec<(Vec<&'static str>, String)> = Vec::new();
    for b in blind {
        let (fig, why) = blind_reason(b, threshold);
        match merged.iter_mut().find(|m| m.1 == why) {
            Some(m) => m.0.extend(fig),
            None => merged.push((fig.into_iter().collect(), why)),
        }
    }
    merged
        .into_iter()
        .map(|(figs, why)| {
            if figs.is_empty() {
                why
            } else {
                format!("{}: {why}", figs.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// "6 repetitions a side", "3 and 6 repetitions".
fn sizes_text((nb, nn): (usize, usize)) -> String {
    if nb == nn {
        format!("{nb} repetitions a side")
    } else {
        format!("{nb} and {nn} repetitions")
    }
}

/// A cell's status where its figures could not be used: "measured", or the status with its
/// reason.
fn state(c: &CellState) -> String {
    match c.status {
        Status::Measured => "measured".to_string(),
        s @ (Status::Unavailable | Status::Failed | Status::NotApplicable) => status(s, c),
    }
}

/// "failed: server died", with "no reason recorded" where none was.
fn status(s: Status, c: &CellState) -> String {
    format!(
        "{s}: {}",
        c.reason.as_deref().unwrap_or("no reason recorded")
    )
}

/// Why a cell both runs have was not compared.
pub(crate) fn skip(s: &Skip) -> String {
    match s {
        Skip::Unmeasured { base, new } => format!("base {}; new {}", state(base), state(new)),
        Skip::Disturbed { base, new } => {
            let which: Vec<&str> = [("BASE", *base), ("NEW", *new)]
                .iter()
                .filter(|(_, d)| *d)
                .map(|(w, _)| *w)
                .collect();
            format!(
                "disturbed in {} (other programs took its CPUs; see the cell's disturbance)",
                which.join(" and ")
            )
        }
        Skip::RatesDiffer { base, new } => format!(
            "offered {base:.0} ops/s in BASE and {new:.0} in NEW (each run derives an \
             equal-load rate from its own capacity point): figures at different loads are \
             not compared"
        ),
    }
}

/// "cell: why it was not compared".
pub(crate) fn not_compared(n: &NotCompared) -> String {
    format!("{}: {}", n.cell, skip(&n.why))
}

/// "cell: NEW's status: its reason".
fn lost(l: &Lost) -> String {
    format!("{}: {}", l.cell, state(&l.new))
}

/// What makes a comparison a regression, in a sentence.
pub(crate) fn failure(f: &GateFailure, threshold: f64) -> String {
    match f {
        GateFailure::Regressions(cells) => format!(
            "{} regression(s) beyond {threshold}%: {}",
            cells.len(),
            cells.join("; ")
        ),
        GateFailure::BecameFailed(cells) => format!(
            "{} cell(s) measured in BASE failed in NEW: {}",
            cells.len(),
            cells.iter().map(lost).collect::<Vec<_>>().join("; ")
        ),
    }
}

/// What keeps a comparison from passing, in a sentence.
pub(crate) fn blocked(b: Blocked) -> &'static str {
    match b {
        Blocked::Unfinished => {
            "NEW is an unfinished run (\"finished\": false): cells it never reached are not \
             compared"
        }
        Blocked::NothingCompared => {
            "no cell was compared: the two files have no measured cell in common"
        }
    }
}

/// "cell: why" for a cell not tested with power to see the threshold.
pub(crate) fn unseen(u: &Unseen, threshold: f64) -> String {
    match u {
        Unseen::Compared {
            cell,
            untested: Some(why),
            ..
        } => format!("{cell}: {}", untested(why)),
        Unseen::Compared {
            cell,
            untested: None,
            blind,
        } => format!("{cell}: {}", blind_text(blind, threshold)),
        Unseen::NotCompared(n) => not_compared(n),
        Unseen::NoLongerMeasured(l) => format!("{} (measured in BASE, not in NEW)", lost(l)),
        Unseen::OnlyBase(k) => format!("{k}: in BASE only"),
        Unseen::OnlyNew(k) => format!("{k}: in NEW only"),
    }
}

/// The sentence for the groups whose typical cell moved beyond the threshold (none: no
/// sentence).
pub(crate) fn noisy(groups: &[NoisyGroup], threshold: f64) -> Vec<String> {
    if groups.is_empty() {
        return Vec::new();
    }
    let each: Vec<String> = groups
        .iter()
        .map(|n| {
            format!(
                "{} {}{} (±{:.1}% per run, from {} tests)",
                n.workload,
                n.figure.name(),
                if n.relative {
                    " relative to its point"
                } else {
                    ""
                },
                n.pct,
                n.tests
            )
        })
        .collect();
    vec![format!(
        "the two runs differ by more than the {threshold}% threshold in a typical cell \
         of {}: either the machine was not the same or most cells changed, and no change \
         there can be told from that",
        each.join("; ")
    )]
}

/// What would make a change of `threshold` percent visible, in a sentence.
pub(crate) fn remedy(r: &Remedy, threshold: f64) -> String {
    match r {
        Remedy::MoreRepetitions {
            fewest,
            most,
            cells,
        } => {
            let range = if fewest == most {
                format!("{most}")
            } else {
                format!("{fewest} to {most} (each cell's line says its own)")
            };
            format!(
                "more repetitions: at the noise measured, {range} a side (`ringside run ... \
                 --runs {most}` for both builds) would let {cells} cell(s) see a {threshold}% \
                 change (a test's variance from its rounds shrinks as 1/repetitions, so that \
                 share of what it can see as sqrt(n_now/n); the share from the noise between \
                 runs does not)"
            )
        }
        Remedy::NoNumberOfRepetitions { cells, worst_pct } => format!(
            "no number of repetitions would for {cells} cell(s): the noise between two runs \
             alone hides changes under {} there",
            pct_words(*worst_pct)
        ),
        Remedy::AtLeast { need, tests } => format!(
            "at least {need} repetitions a side (`--runs {need}`): fewer cannot confirm a \
             change alone among {tests} tests"
        ),
        Remedy::MoreCells { min_tests } => format!(
            "more cells in both runs (whole suites): the noise between two runs is \
             estimated from at least {min_tests} tests of a figure"
        ),
        Remedy::QuieterMachine { disturbed } => format!(
            "a quieter machine: nothing else running on the plan's CPUs during either \
             run{}, the same machine state for both",
            match disturbed {
                0 => String::new(),
                n => format!(" ({n} cell(s) were disturbed)"),
            }
        ),
        Remedy::BothBuilds(server) => both_builds(server.as_ref()),
    }
}

/// The README's "ab-builds" recipe: both builds as contenders of one run, for `server`'s
/// workload and model where the gate named one.
fn both_builds(server: Option<&ServerCell>) -> String {
    let why = "every round then measures both, so the noise between runs and the \
               machine's drift cancel, and equal-load cells share one rate";
    let Some(ServerCell {
        workload: w,
        protocol: proto,
        label,
    }) = server
    else {
        return format!(
            "for a server workload, both builds in one run (the README's \"ab-builds\" \
             recipe: `ringside run WORKLOAD --contender \"old=...\" --contender \
             \"new=...\"`): {why}"
        );
    };
    let cmd = match label.strip_prefix("ext:") {
        Some(_) => format!(
            "ringside run {w} --contender \"{proto}:old=OLD_SERVER --port {{port}}\" \
             --contender \"{proto}:new=NEW_SERVER --port {{port}}\""
        ),
        None => {
            let model = label.split('/').next().unwrap_or(label);
            let serve = |build: &str| {
                format!(
                    "{proto}:{build}=/path/to/{build}/ringside serve --protocol {proto} \
                     --model {model} --addr 127.0.0.1:{{port}}"
                )
            };
            format!(
                "ringside run {w} --models {model} --contender \"{}\" --contender \"{}\"",
                serve("old"),
                serve("new")
            )
        }
    };
    format!(
        "both builds in one run, paired round by round (the README's \"ab-builds\" \
         recipe): `{cmd}`: {why}"
    )
}

/// The gate's verdict in one line, as every rendering opens with it.
pub(crate) fn headline(g: &Gate) -> String {
    let t = g.threshold_pct;
    let gaps = g.untested.len();
    let word = outcome_word(g.outcome);
    match g.outcome {
        Outcome::Regression => {
            let failures: Vec<String> = g.failures.iter().map(|f| failure(f, t)).collect();
            let mut s = format!("{word}: {}", failures.join("; "));
            if gaps > 0 {
                s += &format!("; {gaps} more cell(s) could not be tested");
            }
            s
        }
        Outcome::Inconclusive if !g.blocked.is_empty() => {
            let blocked: Vec<&str> = g.blocked.iter().map(|b| blocked(*b)).collect();
            format!("{word}: {}", blocked.join("; "))
        }
        Outcome::Inconclusive => format!(
            "{word}: no regression found, but {gaps} cell(s){} could not be tested with \
             power to see a {t}% change ({} of {} compared cells could)",
            if g.noisy.is_empty() {
                ""
            } else {
                " and the run-to-run noise"
            },
            g.tested,
            g.cells
        ),
        Outcome::Pass if g.accepted => format!(
            "{word} (--allow-untested): no significant regression beyond {t}% in {} \
             compared cells; {gaps} cell(s) could not be tested with power to see it \
             (accepted)",
            g.cells
        ),
        Outcome::Pass => format!(
            "{word}: no regression beyond {t}%, and each of the {} compared cells was \
             tested with power to see one",
            g.cells
        ),
    }
}

/// What the calibration probes say, in a sentence, when they say anything.
pub(crate) fn probes(pd: &ProbeDrift) -> Option<String> {
    let mut parts = Vec::new();
    if pd.drift_pct > 0.0 {
        let list: Vec<String> = pd
            .probes
            .iter()
            .map(|(n, b, x, pct, _)| format!("{n} {b:.0} -> {x:.0} ns ({pct:+.0}%)"))
            .collect();
        parts.push(format!(
            "the machine changed between the runs (calibration probes: {}): absolute \
             changes within {:.0}% more than the threshold are taken as the machine's",
            list.join(", "),
            pd.drift_pct
        ));
    }
    parts.extend(pd.within.iter().cloned());
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// A later run's claim about a cell, as every rendering of a matrix shows it.
pub(crate) fn claim(c: &Claim, threshold: f64) -> String {
    match c {
        Claim::Judged { verdict: v, .. } => verdict(v, threshold),
        Claim::Unmeasured => "not compared: not measured in both".into(),
        Claim::NotCompared(Some(s)) => format!("not compared: {}", skip(s)),
        Claim::NotCompared(None) => "not compared: no reason recorded".into(),
        Claim::Absent => "not in this run".into(),
        Claim::NotInFirst => "not in the first run".into(),
    }
}

/// Why a run has no figures of a matrix's cell: "absent", "failed: server died".
pub(crate) fn missing(m: &Missing) -> String {
    match m {
        Missing::Absent => "absent".into(),
        Missing::Unmeasured(c) => status(c.status, c),
    }
}

/// The matrix's verdict in one line, each later run's beside it: "INCONCLUSIVE: B against
/// A PASS; C against A INCONCLUSIVE".
pub(crate) fn matrix_headline(m: &Matrix) -> String {
    let first = &m.runs[0].letter;
    let each: Vec<String> = m
        .gates()
        .iter()
        .zip(&m.runs[1..])
        .map(|(g, run)| format!("{} against {first} {}", run.letter, outcome_word(g.outcome)))
        .collect();
    format!(
        "{}{}: {}",
        outcome_word(m.outcome()),
        if m.allow_untested {
            " (--allow-untested)"
        } else {
            ""
        },
        each.join("; ")
    )
}

/// Each later run's gate in sentences, naming the run: its headline, what failed ("FAIL: C
/// (c.json) against A (a.json): ..."), what it could not test and what would let it.
pub(crate) fn matrix_gate_lines(m: &Matrix) -> Vec<String> {
    let first = &m.runs[0];
    let mut out = Vec::new();
    for (g, run) in m.gates().iter().zip(&m.runs[1..]) {
        let t = g.threshold_pct;
        let who = format!(
            "{} ({}) against {} ({})",
            run.letter, run.name, first.letter, first.name
        );
        // The lines under a pair's headline name it by its letters alone.
        let short = format!("{} vs {}", run.letter, first.letter);
        out.push(format!("{who}: {}", headline(g)));
        out.extend(
            g.failures
                .iter()
                .map(|f| format!("FAIL: {who}: {}", failure(f, t))),
        );
        out.extend(
            g.untested
                .iter()
                .map(|u| format!("{short}: not tested: {}", unseen(u, t))),
        );
        out.extend(noisy(&g.noisy, t).iter().map(|n| format!("{short}: {n}")));
        if g.outcome == Outcome::Inconclusive {
            out.extend(
                g.remedies
                    .iter()
                    .map(|r| format!("{short}: to see it: {}", remedy(r, t))),
            );
        }
    }
    out
}

/// The gate in lines: what failed, what could not be tested and why, and what would make a
/// change of the threshold visible.
pub(crate) fn gate_lines(g: &Gate) -> Vec<String> {
    let t = g.threshold_pct;
    let mut out: Vec<String> = g
        .failures
        .iter()
        .map(|f| format!("FAIL: {}", failure(f, t)))
        .collect();
    out.extend(
        g.blocked
            .iter()
            .map(|b| format!("cannot pass: {}", blocked(*b))),
    );
    if !g.untested.is_empty() {
        out.push(format!(
            "not tested with power to see a {t}% change ({} cell(s){}):",
            g.untested.len(),
            if g.accepted {
                ", accepted with --allow-untested"
            } else {
                ""
            }
        ));
        out.extend(g.untested.iter().map(|u| format!("  {}", unseen(u, t))));
    }
    out.extend(noisy(&g.noisy, t));
    if !g.remedies.is_empty() {
        out.push(format!("what would make a {t}% change visible:"));
        out.extend(g.remedies.iter().map(|r| format!("  - {}", remedy(r, t))));
    }
    out
}
