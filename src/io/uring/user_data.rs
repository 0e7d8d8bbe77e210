//! The 64-bit user_data of every SQE a server (or the io_uring load engine) submits, with a
//! typed bit layout:
//!
//! ```text
//!  63      56 55                  32 31                         0
//! +----------+----------------------+----------------------------+
//! |  op (8)  |   generation (24)    |      slab index (32)       |
//! +----------+----------------------+----------------------------+
//! ```
//!
//! The slab index names the connection's slot, never its fd; the generation (bumped each time a
//! slot is reused) makes a completion that outlived its connection recognisable.

/// What an SQE was for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Op {
    Accept = 1,
    Recv = 2,
    Send = 3,
    /// The poll on the stop eventfd.
    Stop = 4,
    /// The timeout that ends an accept pause (EMFILE, ENFILE...: see `io::accept`).
    AcceptPause = 5,
    /// A cancel aimed at a connection's send, or at everything.
    Cancel = 6,
    Close = 7,
    /// A cancel aimed at a connection's recv (retried if the kernel missed it).
    CancelRecv = 8,
    /// The idle-sweep timer (only with an idle limit).
    IdleTick = 9,
    /// NAPI rows: a direct descriptor installed as a plain fd to read its NAPI id.
    NapiFd = 10,
    /// The SHUT_RD of a reset direct descriptor (`Server::reset`): forced to io-wq, where the
    /// kernel resolves the slot, so the slot stays the connection's until it completes.
    ShutRead = 11,
    /// The load engine: the poll that tells a connect resolved.
    Connect = 12,
}

impl Op {
    fn from_u8(v: u8) -> Option<Op> {
        Some(match v {
            1 => Op::Accept,
            2 => Op::Recv,
            3 => Op::Send,
            4 => Op::Stop,
            5 => Op::AcceptPause,
            6 => Op::Cancel,
            7 => Op::Close,
            8 => Op::CancelRecv,
            9 => Op::IdleTick,
            10 => Op::NapiFd,
            11 => Op::ShutRead,
            12 => Op::Connect,
            _ => return None,
        })
    }
}

/// The op byte's low nibble holds the op; its high nibble a send's tag ([`UserData::tag_of`]).
const OP_MASK: u8 = 0x0F;

/// Generations wrap at 2^24.
pub(crate) const GEN_MASK: u32 = (1 << 24) - 1;

/// A decoded user_data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct UserData {
    pub(crate) op: Op,
    pub(crate) gen: u32,
    pub(crate) idx: u32,
}

impl UserData {
    pub(crate) fn new(op: Op, idx: u32, gen: u32) -> UserData {
        UserData {
            op,
            gen: gen & GEN_MASK,
            idx,
        }
    }

    /// For ops that belong to no connection.
    pub(crate) fn global(op: Op) -> UserData {
        UserData::new(op, 0, 0)
    }

    #[inline]
    pub(crate) fn encode(self) -> u64 {
        ((self.op as u64) << 56) | (((self.gen & GEN_MASK) as u64) << 32) | self.idx as u64
    }

    /// With a 4-bit `tag` in the op byte's high nibble (the ops fit in its low one): the
    /// broker's SEND_ZC sends carry one each, so that a notification CQE (same user_data as
    /// its send) names the send whose buffer it frees. Tag 0 is [`UserData::encode`].
    #[inline]
    pub(crate) fn encode_tagged(self, tag: u8) -> u64 {
        self.encode() | (u64::from(tag & OP_MASK) << 60)
    }

    /// The tag [`UserData::encode_tagged`] put in `v` (0 for an untagged value).
    #[inline]
    pub(crate) fn tag_of(v: u64) -> u8 {
        (v >> 60) as u8
    }

    /// `None` for a value no server SQE carries.
    #[inline]
    pub(crate) fn decode(v: u64) -> Option<UserData> {
        Some(UserData {
            op: Op::from_u8(((v >> 56) as u8) & OP_MASK)?,
            gen: ((v >> 32) as u32) & GEN_MASK,
            idx: v as u32,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_field_at_its_extremes() {
        for op in [
            Op::Accept,
            Op::Recv,
            Op::Send,
            Op::Stop,
            Op::AcceptPause,
            Op::Cancel,
            Op::Close,
            Op::CancelRecv,
            Op::IdleTick,
            Op::NapiFd,
            Op::ShutRead,
            Op::Connect,
        ] {
            for idx in [0, 1, 12345, u32::MAX] {
                for gen in [0, 1, GEN_MASK - 1, GEN_MASK] {
                    let u = UserData::new(op, idx, gen);
                    assert_eq!(UserData::decode(u.encode()), Some(u));
                }
            }
        }
        for tag in [0, 1, 15] {
            let u = UserData::new(Op::Send, 7, GEN_MASK);
            let v = u.encode_tagged(tag);
            assert_eq!((UserData::decode(v), UserData::tag_of(v)), (Some(u), tag));
        }
        assert_eq!(
            UserData::new(Op::Send, 7, 9).encode_tagged(0),
            UserData::new(Op::Send, 7, 9).encode()
        );
        // Generations wrap instead of spilling into the op byte.
        assert_eq!(UserData::new(Op::Recv, 3, GEN_MASK + 1).gen, 0);
        assert_eq!(UserData::decode(0), None);
        assert_eq!(UserData::decode(u64::MAX), None);
    }
}
