//! How much to measure: the profiles (smoke, quick, full) and the budget of repetitions and
//! sizes each gives. A leaf: the workloads, the plan and the cross-checks all read it.

use serde::{Deserialize, Serialize};

/// The most rounds a point may run when its rounds are added while its claims are undecided
/// (the sequential design's looks go this far: `results::schema::Looks`).
pub(crate) const MAX_ROUNDS: u32 = 40;

/// How much to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Profile {
    /// Seconds: for tests and CI. Few points, few repetitions.
    Smoke,
    /// The default: minutes on 2 cores.
    Quick,
    /// The published studies' sizes: 30 runs x 5,000 ops per config.
    Full,
}

/// Repetitions and sizes for a profile.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct Budget {
    /// Discarded repetitions before the measured ones.
    pub(crate) warmups: u32,
    pub(crate) repetitions: u32,
    /// Ops per repetition for micro workloads.
    pub(crate) ops: u64,
    /// Ops run inside each repetition before its window opens.
    pub(crate) warm_ops: u64,
    /// `repetitions` was given by the user (`--runs`): workloads that scale the profile's
    /// repetitions down (servers, storage) keep it as given.
    pub(crate) runs_given: bool,
    /// Rounds a point may add after `repetitions` while its claims are undecided (adaptive
    /// rounds: network and storage points at quick and full; 0 elsewhere).
    #[serde(default)]
    pub(crate) extra_rounds: u32,
    /// Seconds a whole run may spend on rounds added beyond a point's first six (the
    /// profile's; a run that used them up adds no more): quick 240 s, so that the default run
    /// stays within its 10 minutes on a 2-vCPU VM.
    #[serde(default)]
    pub(crate) extension_s: u64,
}

impl Budget {
    /// The rounds a network or storage point runs (each repetition a fresh server or fresh
    /// files, seconds each): 3/5 of the micro loops' repetitions, 1, 6 and 10 at smoke, quick
    /// and full. Six is the fewest with which a paired claim (the signed-rank test over the
    /// rounds) can reach p < 0.05. `--runs N` as given.
    pub(crate) fn rounds(self) -> u32 {
        if self.runs_given {
            self.repetitions
        } else {
            (self.repetitions * 3 / 5).clamp(1, 10)
        }
    }

    /// The rounds a network or storage point may add while its claims are undecided
    /// (sequential rounds, `stats::sequential`): up to four times [`Budget::rounds`] in all
    /// (24 at quick, 40 at full), none at smoke or with `--runs`.
    pub(crate) fn extra_rounds(self) -> u32 {
        let r = self.rounds();
        if self.runs_given || r < 6 {
            0
        } else {
            (4 * r).min(MAX_ROUNDS) - r
        }
    }

    /// The same for a micro loop, whose repetitions are milliseconds: up to twice its
    /// repetitions in all (24 at quick, 40 at full).
    pub(crate) fn extra_micro_rounds(self) -> u32 {
        let r = self.repetitions;
        if self.runs_given || r < 6 {
            0
        } else {
            (2 * r).min(MAX_ROUNDS).saturating_sub(r)
        }
    }
}

impl Profile {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Profile::Smoke => "smoke",
            Profile::Quick => "quick",
            Profile::Full => "full",
        }
    }

    pub(crate) fn budget(self) -> Budget {
        match self {
            Profile::Smoke => Budget {
                warmups: 1,
                repetitions: 3,
                ops: 300,
                warm_ops: 50,
                runs_given: false,
                extra_rounds: 0,
                extension_s: 0,
            },
            Profile::Quick => Budget {
                warmups: 1,
                repetitions: 10,
                ops: 2_000,
                warm_ops: 200,
                runs_given: false,
                extra_rounds: 0,
                extension_s: 240,
            },
            Profile::Full => Budget {
                warmups: 2,
                repetitions: 30,
                ops: 5_000,
                warm_ops: 500,
                runs_given: false,
                extra_rounds: 0,
                extension_s: 1800,
            },
        }
    }
}
