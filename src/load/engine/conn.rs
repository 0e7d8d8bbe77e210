//! One connection's life in a loop: its window, its message's send and receive, the verdict
//! on its response, and its errors, each counted once.

use super::*;
use rustix::io::Errno;

impl<S: Sockets> Loop<'_, S> {
    /// Reads the window's edges (set by the coordinator when the warm-up settles, closed
    /// early by a stop) into `t_open` / `t_close`. Read again before each time is judged, so
    /// a response is judged against the edges even when they were set during this
    /// thread's wait: two relaxed loads. The gap tracker starts with the window.
    pub(super) fn window(&mut self) {
        if !self.traffic {
            return;
        }
        let (open, planned, close) = self.shared.edges_planned();
        (self.t_open, self.t_close) = (open, close);
        if self.gaps.is_none() && open != u64::MAX {
            self.gaps = Some(Gaps::new(open, planned - open));
        }
    }

    /// The connection no longer awaits its first answer (it got one, or it died).
    pub(super) fn answered(&mut self, c: &mut Conn) {
        if c.unanswered {
            c.unanswered = false;
            self.shared.unanswered.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Counts one error of `kind` seen at `now`: in the window's counts, or in the warm-up's.
    /// (Connects before the traffic starts have `t_open` 0: they count in the window's.)
    pub(super) fn count(&mut self, kind: Kind, now: u64) {
        self.window();
        if now < self.t_open {
            self.c.n.warmup_errors += 1;
            if kind.invalid() {
                self.c.n.warmup_invalid += 1;
            }
            return;
        }
        let c = &mut self.c.n;
        match kind {
            Kind::Connect => c.connect_errors += 1,
            Kind::Reset => c.resets += 1,
            Kind::Io => c.io_errors += 1,
            Kind::Timeout => c.timeouts += 1,
            Kind::Mismatch => c.mismatches += 1,
            Kind::Non2xx => c.non_2xx += 1,
            Kind::Malformed => c.malformed += 1,
            Kind::Unsolicited => c.unsolicited += 1,
        }
    }

    pub(super) fn note_error(&mut self, now: u64, what: impl FnOnce() -> String) {
        self.c.error_at(now, what);
    }

    pub(super) fn fail_connect(&mut self, c: &mut Conn, e: io::Error) {
        let now = now_ns();
        self.count(Kind::Connect, now);
        self.note_error(now, || format!("connect: {e}"));
        self.answered(c);
        c.st = St::Dead;
        self.io.close(c);
        c.reconnecting = false;
    }

    /// A connect under way resolved (the socket became writable or failed).
    pub(super) fn connected(&mut self, c: &mut Conn) {
        match so_error(c.fd.as_ref()).and_then(|()| self.io.ready(c)) {
            Err(e) => self.fail_connect(c, e),
            Ok(()) => {
                c.reconnecting = false;
                c.st = St::Idle;
                let now = now_ns();
                match self.interval {
                    // A connection per message: timed from its connect's start.
                    None if self.churn && c.seq > 0 => self.start(c, c.origin),
                    None => self.start(c, now),
                    Some(_) if c.due <= now => self.start(c, c.due),
                    Some(_) => self.due.push(Reverse((c.due, c.idx))),
                }
            }
        }
    }

    /// The server closes after the response just counted: open the connection again.
    pub(super) fn reconnect(&mut self, c: &mut Conn) {
        self.io.close(c);
        c.checked = false;
        c.inb.clear();
        c.pending = None;
        c.discard = 0;
        let now = now_ns();
        self.window();
        if now >= self.t_open {
            self.c.n.reconnects += 1;
        }
        match self.io.open(c, self.target) {
            Ok(()) => {
                c.st = St::Connecting;
                c.reconnecting = true;
                c.opened = now; // for the connect timeout
            }
            Err(e) => self.fail_connect(c, e),
        }
    }

    /// [`Config::churn`]: the response just counted ends its connection. The socket (with
    /// SO_LINGER 0) is closed, which resets it, and the next message gets a new connection:
    /// at once in closed loop, timed from the connect's start; in open loop when it falls
    /// due, timed from then.
    pub(super) fn churn_next(&mut self, c: &mut Conn) {
        self.io.close(c);
        c.checked = false;
        c.inb.clear();
        c.pending = None;
        c.discard = 0;
        let now = now_ns();
        self.window();
        if now >= self.t_open && now < self.t_close {
            self.c.n.abortive_closes += 1;
        }
        match self.interval {
            None => self.open_for(c, now),
            Some(_) if c.due <= now => self.open_for(c, c.due),
            // Waits unconnected until it is due (`start_due`).
            Some(_) => self.due.push(Reverse((c.due, c.idx))),
        }
    }

    /// [`Config::churn`]: opens a new connection for the next message, timed from `origin`.
    pub(super) fn open_for(&mut self, c: &mut Conn, origin: u64) {
        let now = now_ns();
        match self.io.open(c, self.target) {
            Ok(()) => {
                self.c.n.connects += 1;
                c.st = St::Connecting;
                c.reconnecting = true;
                c.opened = now;
                c.origin = origin;
            }
            Err(e) => self.fail_connect(c, e),
        }
    }

    pub(super) fn fail_io(&mut self, c: &mut Conn, e: Option<io::Error>, writing: bool) {
        let now = now_ns();
        let kind = match &e {
            None => Kind::Reset, // EOF: the server closed it
            Some(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ECONNRESET | libc::EPIPE | libc::ECONNABORTED)
                ) =>
            {
                Kind::Reset
            }
            Some(_) => Kind::Io,
        };
        self.window();
        if now >= self.t_open {
            if writing {
                self.c.n.write_errors += 1;
            } else {
                self.c.n.read_errors += 1;
            }
        }
        self.count(kind, now);
        self.note_error(now, || match e {
            None => "connection closed by the server".into(),
            Some(e) => format!("socket: {e}"),
        });
        self.answered(c);
        c.st = St::Dead;
        self.io.close(c);
    }

    /// `bytes` arrived on `c` that no request asked for (`when`: where they were seen):
    /// counted (an error that fails the run, never an op) and named in the first error.
    pub(super) fn unsolicited(&mut self, c: &Conn, bytes: u64, when: &str) {
        let now = now_ns();
        self.count(Kind::Unsolicited, now);
        self.note_error(now, || {
            format!(
                "{bytes} unsolicited bytes on connection {} {when} (after {} responses)",
                c.id, c.seq
            )
        });
    }

    /// Reads and drops what is waiting on `c` while no request is outstanding, counting it
    /// as unsolicited. A server that keeps sending past [`MAX_UNSOLICITED_READS`] reads is
    /// not read forever: its connection is closed. EOF or an error fails the connection.
    pub(super) fn drain_unsolicited(&mut self, c: &mut Conn, when: &str) {
        let mut got = 0u64;
        for _ in 0..MAX_UNSOLICITED_READS {
            if c.fd.is_none() {
                return;
            }
            let r = self
                .io
                .recv(c, &mut self.scratch.spare_capacity_mut()[..READ_CHUNK]);
            match self.received(c, r) {
                Some(n) => got += n as u64,
                None => {
                    if got > 0 {
                        self.unsolicited(c, got, when);
                    }
                    return;
                }
            }
        }
        self.unsolicited(c, got, when);
        self.answered(c);
        c.st = St::Dead;
        self.io.close(c);
    }

    /// Whether the first round is over (no first round: always).
    pub(super) fn round_over(&mut self) -> bool {
        if !self.released {
            self.released = self.shared.round_done();
        }
        self.released
    }

    /// Starts the connection's next message with latency measured from `origin` (in a first
    /// round, a connection answered once is parked instead until the round is over).
    pub(super) fn start(&mut self, c: &mut Conn, origin: u64) {
        if c.seq > 0 && !self.round_over() {
            c.st = St::Idle;
            self.parked.push(c.idx);
            return;
        }
        if c.seq == 0 && !c.unanswered && self.interval.is_some() {
            // Open loop: its first message fell due.
            c.unanswered = true;
            self.shared.unanswered.fetch_add(1, Ordering::SeqCst);
        }
        if !c.checked {
            // A server may write before it is asked (a canned answer at accept): bytes already
            // here when a connection's first request goes out answer nothing. One recv per
            // connection (and per reconnection); later ones are seen by `drive` and the loop.
            c.checked = true;
            self.drain_unsolicited(c, "before the first request");
            if c.st == St::Dead {
                return;
            }
        }
        c.out.clear();
        self.ex.request(c.id, c.seq, &mut c.out);
        c.sent = 0;
        c.origin = origin;
        c.timed_out = false;
        c.read_pending = false;
        c.st = St::Sending;
        self.drive(c);
    }

    /// Does whatever the connection's state allows until it would block.
    pub(super) fn drive(&mut self, c: &mut Conn) {
        loop {
            if c.fd.is_none() {
                return;
            }
            let step = match c.st {
                St::Sending => self.send_step(c),
                St::Receiving if c.pending.is_some() => self.discard_step(c),
                St::Receiving => self.receive_step(c),
                St::Idle | St::Connecting | St::Dead => Step::Wait,
            };
            if step == Step::Wait {
                return;
            }
        }
    }

    /// One send of the rest of the outstanding message (sendto(2) with no address, as glibc's
    /// send).
    pub(super) fn send_step(&mut self, c: &mut Conn) -> Step {
        if c.fd.is_none() {
            return Step::Wait;
        }
        let n = match self.io.send(c, c.sent) {
            Ok(n) => n,
            Err(Errno::WOULDBLOCK) => return Step::Wait,
            Err(Errno::INTR) => return Step::Again,
            Err(e) => {
                self.fail_io(c, Some(e.into()), true);
                return Step::Wait;
            }
        };
        c.sent += n;
        if c.sent == c.out.len() {
            c.st = St::Receiving;
            if !c.read_pending && c.inb.is_empty() {
                return Step::Wait; // the echo's arrival will wake this connection
            }
        }
        Step::Again
    }

    /// A response already judged: one read of its rest, dropped; complete once it is all
    /// read.
    pub(super) fn discard_step(&mut self, c: &mut Conn) -> Step {
        if c.discard == 0 {
            let d = c.pending.take().expect("pending response");
            return self.finish(c, d);
        }
        // One byte more than the response's rest: a byte past it is unsolicited.
        let want = (c.discard + 1).min(READ_CHUNK as u64) as usize;
        if c.fd.is_none() {
            return Step::Wait;
        }
        let r = self
            .io
            .recv(c, &mut self.scratch.spare_capacity_mut()[..want]);
        match self.received(c, r) {
            Some(n) if n as u64 > c.discard => {
                let extra = n as u64 - c.discard;
                c.discard = 0;
                self.unsolicited(c, extra, "past the end of a response");
            }
            Some(n) => c.discard -= n as u64,
            None => return Step::Wait,
        }
        Step::Again
    }

    /// Judges what the connection holds; a response not yet complete gets one read more.
    pub(super) fn receive_step(&mut self, c: &mut Conn) -> Step {
        let need = match self.ex.response(&c.out, &c.inb) {
            // Our own message size bounds what an echo holds; nothing a peer announces is
            // reserved beyond READ_CHUNK at a time.
            Response::NeedMore(n) => n.min(READ_CHUNK.max(c.out.len())),
            Response::Complete {
                len,
                verdict,
                close,
            } => {
                let d = Done {
                    len,
                    verdict,
                    close,
                };
                if matches!(verdict, Verdict::Fault(_)) && !self.c.has_error() {
                    let head = describe(&c.inb);
                    self.note_error(now_ns(), || format!("error response: {head}"));
                }
                let held = c.inb.len() as u64;
                if len > held {
                    // Judged from what is held: drop the rest as it arrives.
                    c.discard = len - held;
                    c.inb.clear();
                    c.pending = Some(d);
                    return Step::Again;
                }
                return self.finish(c, d);
            }
            Response::Unreadable(why) => {
                self.fail_unreadable(c, why);
                return Step::Wait;
            }
        };
        // One byte more than the response can still hold: one request is outstanding, so a
        // byte past its response is unsolicited (`complete`).
        let need = need + 1;
        let have = c.inb.len();
        c.inb.reserve(need);
        if c.fd.is_none() {
            return Step::Wait;
        }
        // Into `need` bytes of the spare capacity reserved just above (taken out of `c` for
        // the call, which reads the connection's other fields).
        let mut inb = std::mem::take(&mut c.inb);
        let r = self.io.recv(c, &mut inb.spare_capacity_mut()[..need]);
        c.inb = inb;
        match self.received(c, r) {
            // SAFETY: `recv` initialized `n` bytes after `have`.
            Some(n) => unsafe { c.inb.set_len(have + n) },
            None => return Step::Wait,
        }
        Step::Again
    }

    /// Completes response `d`; the connection goes on only when it sends again at once.
    pub(super) fn finish(&mut self, c: &mut Conn, d: Done) -> Step {
        self.complete(c, d);
        if c.st == St::Sending {
            Step::Again
        } else {
            Step::Wait
        }
    }

    /// A recv's result: the bytes received, or `None` when the connection must wait (or
    /// failed, which is counted and closes it). EINTR comes back as 0 bytes.
    pub(super) fn received(&mut self, c: &mut Conn, r: rustix::io::Result<usize>) -> Option<usize> {
        match r {
            Ok(0) => {
                self.fail_io(c, None, false);
                None
            }
            Ok(n) => Some(n),
            Err(Errno::WOULDBLOCK) => None,
            Err(Errno::INTR) => Some(0),
            Err(e) => {
                self.fail_io(c, Some(e.into()), false);
                None
            }
        }
    }

    /// A response that cannot be read: count it, close the connection (where the next
    /// response would start is unknown).
    pub(super) fn fail_unreadable(&mut self, c: &mut Conn, why: &str) {
        let now = now_ns();
        self.count(Kind::Malformed, now);
        let head = describe(&c.inb);
        self.note_error(now, || format!("malformed response ({why}): {head}"));
        self.answered(c);
        c.st = St::Dead;
        self.io.close(c);
    }

    /// A whole response arrived: count it (an op when valid and inside the window), then
    /// start or schedule the next message, or reconnect when the server closes.
    pub(super) fn complete(&mut self, c: &mut Conn, d: Done) {
        let now = now_ns();
        self.answered(c);
        self.window();
        let in_window = now >= self.t_open && now < self.t_close;
        match d.verdict {
            Verdict::Valid if in_window => {
                self.c.n.msgs += 1;
                self.c.n.bytes += c.out.len() as u64;
                self.c.n.rx_bytes += d.len;
                let latency = now.saturating_sub(c.origin);
                self.c.latency.record(latency);
                if let Some(g) = self.gaps.as_mut() {
                    g.record(now, latency);
                }
            }
            Verdict::Valid => {}
            Verdict::Mismatch { at } => {
                self.note_error(now, || {
                    format!(
                        "mismatched response to message {} on connection {} (first wrong byte {at})",
                        c.seq, c.id
                    )
                });
                self.c.mismatch_at(
                    now,
                    Mismatch {
                        conn: c.id,
                        msg: c.seq,
                        offset: at,
                        in_warmup: now < self.t_open,
                    },
                );
                self.count(Kind::Mismatch, now);
            }
            Verdict::Fault(Fault::Non2xx) => self.count(Kind::Non2xx, now),
            Verdict::Fault(Fault::Malformed) => self.count(Kind::Malformed, now),
        }
        let held = (d.len.min(c.inb.len() as u64)) as usize;
        c.inb.drain(..held);
        if !c.inb.is_empty() {
            // Arrived with the response, past its end: nothing asked for them.
            let extra = c.inb.len() as u64;
            c.inb.clear();
            self.unsolicited(c, extra, "past the end of a response");
        }
        c.seq += 1;
        c.st = St::Idle;
        if let Some(iv) = self.interval {
            c.due += iv;
        }
        if d.close {
            return self.reconnect(c);
        }
        if self.churn {
            return self.churn_next(c);
        }
        match self.interval {
            None => self.start(c, now),
            Some(_) if c.due <= now => self.start(c, c.due),
            Some(_) => self.due.push(Reverse((c.due, c.idx))),
        }
    }
}

/// The start of a response, for a message: its first line, at most 80 bytes.
pub(super) fn describe(b: &[u8]) -> String {
    let line = b.split(|&x| x == b'\n').next().unwrap_or(b"");
    let line = &line[..line.len().min(80)];
    format!("{:?}", String::from_utf8_lossy(line).trim_end())
}
