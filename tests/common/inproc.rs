//! Servers run on a thread of the test process: a built-in one through `io::serve`
//! ([`Running`]), a contender through `peer::serve_*` ([`Peer`]).

use ringside::io::Stop;
use ringside::measure::pin::{allowed_cpus, CpuPlan};
use ringside::measure::Counters;
use ringside::model::ModelSpec;
use ringside::proto::Protocol;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// A built-in server (`io::serve`) on a thread; `stop` ends it and returns its counters
/// (within 5 s).
pub struct Running {
    pub id: &'static str,
    pub addr: SocketAddr,
    stop: Arc<Stop>,
    done: mpsc::Receiver<Result<Counters, String>>,
}

impl Running {
    pub fn start<P: Protocol>(m: &'static ModelSpec, proto: P) -> Running {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let stop = Arc::new(Stop::new().unwrap());
        let (tx, done) = mpsc::channel();
        let s2 = stop.clone();
        thread::spawn(move || {
            let plan = CpuPlan::default_for(&allowed_cpus());
            let r = ringside::io::serve(m, l, proto, &plan, &s2).map_err(|e| e.to_string());
            let _ = tx.send(r);
        });
        Running {
            id: m.id,
            addr,
            stop,
            done,
        }
    }

    /// A connection with TCP_NODELAY and a 2 s write timeout.
    pub fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(self.addr).unwrap();
        s.set_nodelay(true).unwrap();
        s.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
        s
    }

    pub fn stop(self) -> Counters {
        self.stop.request();
        let id = self.id;
        self.done
            .recv_timeout(Duration::from_secs(5))
            .unwrap_or_else(|_| panic!("{id}: did not stop within 5 s"))
            .unwrap_or_else(|e| panic!("{id}: {e}"))
    }
}

/// A contender served on a thread (`peer::serve_echo`, `serve_proto`, `serve_http`) until its
/// stop flag is set.
pub struct Peer {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: JoinHandle<anyhow::Result<()>>,
}

impl Peer {
    /// Binds 127.0.0.1:0 and runs `serve(listener, stop flag)` on a thread.
    pub fn start<F>(serve: F) -> Peer
    where
        F: FnOnce(TcpListener, Arc<AtomicBool>) -> anyhow::Result<()> + Send + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = thread::spawn(move || serve(listener, s));
        Peer { addr, stop, thread }
    }

    /// Sets the flag; the server must return within a second, without error.
    pub fn stop_within_a_second(self) {
        let t0 = Instant::now();
        self.stop.store(true, Ordering::Relaxed);
        while !self.thread.is_finished() {
            assert!(
                t0.elapsed() < Duration::from_secs(1),
                "server still running 1 s after stop"
            );
            thread::sleep(Duration::from_millis(5));
        }
        self.thread.join().unwrap().expect("serve failed");
    }
}
