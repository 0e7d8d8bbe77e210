//! A round of interleaved slices (docs/method.md, "interleaved slices"). On a shared VM the
//! machine's state drifts over seconds: within one server's window, CPU per message moved
//! 20-35% between regimes lasting one to three seconds, so a round that runs each model for
//! one contiguous window catches each in another regime, and the paired ratio barely
//! cancels it (per-round log ratio sd 0.11-0.28 on the 2-vCPU VM). So an open-loop network
//! point's round starts every model's server, then drives each in turn for one short slice
//! (`net::cell::slices::SLICE`, each with its own brief warm-up), in a fresh order per pass, until each
//! has had its window; every model samples the round's regimes alike, and the ratio cancels
//! them (sd 0.03-0.06 at the same measured time). Each model's slices are its repetition of
//! the round; the servers stop at its end, so every round has fresh processes.

use super::*;
use crate::measure::clock::unix_ns;
use crate::workload::net::cell::{self, Live, Slicing};

/// Which round of a point, cut how, at which offered rate (an equal-load point's).
#[derive(Clone, Copy)]
pub(super) struct At {
    pub(super) round: u32,
    pub(super) slicing: Slicing,
    pub(super) offered_rate: Option<f64>,
}

/// Runs round `at.round` of the live cases in `order` as interleaved slices shaped by
/// `at.slicing`: each case's server started in that order, then `per_round` passes, each
/// driving every live case for one slice in a freshly shuffled order, then the servers stopped. Each case's slices become
/// its timed repetition of the round ([`cell::merge_slices`]), the disturbance read around
/// the whole round its disturbance (every model of the round shared it). A case whose server
/// or slice fails ends with the reason. `None`: interrupted (its servers stopped).
pub(super) fn round(
    run: &mut [Running<'_>],
    order: &[usize],
    set: &Setting<'_>,
    at: At,
    cpus: &[u32],
    rng: &mut fastrand::Rng,
    obs: &dyn Observer,
) -> Option<()> {
    let At {
        round,
        slicing,
        offered_rate,
    } = at;
    let first = run.get(*order.first()?)?.case;
    let point = first.point.as_ref()?;
    let passes = slicing.per_round;
    let started = unix_ns();
    let before = set.watch.then(|| disturb::snapshot(cpus));
    let mut lives: Vec<(usize, u32, Live, Vec<Sample>)> = Vec::new();
    for (pos, &i) in order.iter().enumerate() {
        let c = &mut run[i];
        if !c.live {
            continue;
        }
        obs.case_started(c.index, c.case);
        let ctx = c.ctx(set, offered_rate, Some(round));
        match c.case.workload.start_live(&ctx, c.case.model, point) {
            Ok(l) => lives.push((i, pos as u32, l, Vec::new())),
            Err(e) => c.end_with(e, ""),
        }
    }
    for _ in 0..passes {
        if stop_requested() {
            stop_all(lives);
            return None;
        }
        let mut turn: Vec<usize> = (0..lives.len()).collect();
        rng.shuffle(&mut turn);
        for k in turn {
            let (i, _, live, samples) = &mut lives[k];
            let c = &mut run[*i];
            if !c.live {
                continue;
            }
            let ctx = c.ctx(set, offered_rate, Some(round));
            match c.case.workload.slice(&ctx, live, point, slicing) {
                Ok(s) => samples.push(s),
                Err(e) => c.end_with(e, "(in one slice of a round)"),
            }
        }
    }
    let d = before
        .map(|b| b.until(&disturb::snapshot(cpus), cpus))
        .unwrap_or_default();
    for (i, pos, live, samples) in lives {
        let stopped = live.stop();
        let c = &mut run[i];
        if !c.live {
            continue;
        }
        match stopped {
            Err(e) => c.end_with(e, ""),
            Ok(server) => match cell::merge_slices(samples, &server) {
                Some(s) => c.keep(s, started, pos, &d),
                None => c.end(
                    Status::Failed,
                    "no slice of the round was measured".to_string(),
                ),
            },
        }
    }
    Some(())
}

/// Stops every server of an interrupted round.
fn stop_all(lives: Vec<(usize, u32, Live, Vec<Sample>)>) {
    for (_, _, live, _) in lives {
        let _ = live.stop();
    }
}
