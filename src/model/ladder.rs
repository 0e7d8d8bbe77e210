//! The ablation ladder's rungs: the io_uring rows in ladder order, each the registry row that
//! adds one knob to the row it is measured against. Data about models, so it lives beside
//! them: the ladder workloads (`workload::net::ladder`) run these rows and `analysis::ladder`
//! computes each rung's change from them.

use super::{Drive, Files, Provided, Rx, UringKnobs, Wait};

/// One rung: a registry row and the knob it adds to the row it is measured against.
#[derive(Debug)]
pub struct Rung {
    /// The registry row (`registry::MODELS`).
    pub model: &'static str,
    /// The row this rung adds its knob to and is compared with (`None`: the first rung).
    pub(crate) over: Option<&'static str>,
    /// The knob it adds, for the report.
    pub(crate) adds: &'static str,
    /// The knob itself: `add(knobs of over) == knobs of model`, checked by the tests below, so
    /// a rung's `adds` cannot drift from the rows it compares.
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "data the tests check the registry against")
    )]
    pub(crate) add: fn(UringKnobs) -> UringKnobs,
    /// The first kernel version with the feature (the whole rung's minimum).
    pub min_kernel: &'static str,
    /// Where the rung is not over the rung before it, why.
    pub(crate) note: Option<&'static str>,
}

/// The rungs, in ladder order.
pub static RUNGS: &[Rung] = &[
    Rung {
        model: "uring",
        over: None,
        adds: "plain io_uring (accept/recv/send SQEs, one enter submits and waits)",
        add: |k| k,
        min_kernel: "5.6",
        note: None,
    },
    Rung {
        model: "uring-defer",
        over: Some("uring"),
        adds: "+DEFER_TASKRUN|SINGLE_ISSUER",
        add: |k| UringKnobs {
            drive: Drive::Defer,
            ..k
        },
        min_kernel: "6.1",
        note: None,
    },
    Rung {
        model: "uring-defer-fixed",
        over: Some("uring-defer"),
        adds: "+registered files",
        add: |k| UringKnobs {
            files: Files::Registered,
            ..k
        },
        min_kernel: "6.1",
        note: None,
    },
    Rung {
        model: "uring-tuned",
        over: Some("uring-defer-fixed"),
        adds: "+multishot accept/recv with a provided buffer ring",
        add: |k| UringKnobs {
            rx: Rx::Multishot(Provided::WHOLE),
            ..k
        },
        min_kernel: "6.1",
        note: None,
    },
    Rung {
        model: "uring-bundle",
        over: Some("uring-tuned"),
        adds: "+recv bundles",
        add: |k| k.with_provided(|p| Provided { bundle: true, ..p }),
        min_kernel: "6.10",
        note: None,
    },
    Rung {
        model: "uring-bundle-inc",
        over: Some("uring-bundle"),
        adds: "+incremental buffer consumption",
        add: |k| {
            k.with_provided(|p| Provided {
                incremental: true,
                ..p
            })
        },
        min_kernel: "6.12",
        note: None,
    },
    Rung {
        model: "uring-bundle-inc-minwait",
        over: Some("uring-bundle-inc"),
        adds: "+min-wait",
        add: |k| UringKnobs {
            wait: Wait {
                min_wait_us: Some(super::MIN_WAIT_US),
                ..k.wait
            },
            ..k
        },
        min_kernel: "6.12",
        note: None,
    },
    Rung {
        model: "uring-bundle-inc-minwait-napi",
        over: Some("uring-bundle-inc-minwait"),
        adds: "+NAPI busy poll",
        add: |k| UringKnobs {
            wait: Wait {
                napi_busy_poll_us: Some(super::NAPI_BUSY_POLL_US),
                ..k.wait
            },
            ..k
        },
        min_kernel: "6.12",
        note: None,
    },
];

#[cfg(test)]
mod tests {
    use super::RUNGS;
    use crate::model::{Knobs, UringKnobs};

    fn knobs(id: &str) -> UringKnobs {
        match crate::registry::model(id).map(|m| &m.knobs) {
            Some(Knobs::Uring(k)) => *k,
            _ => panic!("{id} is not an io_uring row"),
        }
    }

    /// Each rung's row is the row below it plus exactly the knob the rung says it adds.
    #[test]
    fn each_rung_adds_exactly_its_knob() {
        for r in RUNGS {
            let base = r.over.map_or(knobs(r.model), knobs);
            assert_eq!((r.add)(base), knobs(r.model), "{}: {}", r.model, r.adds);
            if let Some(o) = r.over {
                assert_ne!(knobs(o), knobs(r.model), "{} adds nothing to {o}", r.model);
            }
        }
    }
}
