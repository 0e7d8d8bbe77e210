//! Blocking file I/O handed to a pool of worker threads: what epoll-based runtimes (tokio's
//! `spawn_blocking` file ops) do, because regular files are not pollable — epoll refuses
//! them and a read of a regular file never returns EAGAIN. Each linked chain goes to one
//! worker, which runs it with blocking syscalls; the submitting thread waits on a condvar.
//!
//! Workers may run on the measured CPU and the helper CPU; their CPU time and (in the
//! counting repetition) their syscalls belong to the model.

use crate::io::file::{self, exec_all, Buffers, Done, FdTable, FileConfig, FileOp};
use crate::io::FileEngine;
use crate::measure::{cpu::CpuReading, pin, pin::CpuPlan, Counters};
use std::collections::VecDeque;
use std::io;
use std::os::unix::thread::JoinHandleExt;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

struct Shared {
    cfg: FileConfig,
    fds: FdTable,
    bufs: Buffers,
    jobs: Mutex<Jobs>,
    job_ready: Condvar,
    done: Mutex<Vec<Done>>,
    done_ready: Condvar,
}

struct Jobs {
    queue: VecDeque<Vec<FileOp>>,
    stop: bool,
}

pub(crate) struct PoolFiles {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    chains: u64,
    ops: u64,
    wakeups: u64,
}

impl PoolFiles {
    pub(crate) fn new(cfg: FileConfig, threads: usize, plan: &CpuPlan) -> io::Result<PoolFiles> {
        let shared = Arc::new(Shared {
            fds: FdTable::new(cfg.paths.len()),
            bufs: Buffers::new(cfg.bufs, cfg.buf_len)?,
            cfg,
            jobs: Mutex::new(Jobs {
                queue: VecDeque::new(),
                stop: false,
            }),
            job_ready: Condvar::new(),
            done: Mutex::new(Vec::new()),
            done_ready: Condvar::new(),
        });
        let cpus: Vec<u32> = std::iter::once(plan.measured).chain(plan.helper).collect();
        let mut workers = Vec::with_capacity(threads);
        // Each worker says whether it runs on the plan's CPUs (it would inherit the pinned
        // measured thread's single CPU otherwise) before the pool is used.
        let (tx, rx) = std::sync::mpsc::channel();
        for i in 0..threads {
            let s = Arc::clone(&shared);
            let cpus = cpus.clone();
            let tx = tx.clone();
            let h = std::thread::Builder::new()
                .name(format!("rs-pool-{i}"))
                .spawn(move || {
                    let _ = tx.send(pin::allow_this_thread(&cpus));
                    worker(&s)
                })?;
            workers.push(h);
        }
        drop(tx);
        // Dropped on an error, the pool stops the workers it started.
        let pool = PoolFiles {
            shared,
            workers,
            chains: 0,
            ops: 0,
            wakeups: 0,
        };
        for r in rx.iter().take(threads) {
            r.map_err(|e| io::Error::new(e.kind(), format!("a pool worker: {e}")))?;
        }
        Ok(pool)
    }

    /// CPU time of the worker threads so far (exact, from their CPU-time clocks).
    fn cpu_of_workers(&self) -> CpuReading {
        let mut r = CpuReading::default();
        for h in &self.workers {
            // raw: a pthread's CPU clock (pthread_getcpuclockid) is beyond rustix's ClockId.
            let mut id: libc::clockid_t = 0;
            // SAFETY: the thread is alive until joined in Drop; id is ours to fill.
            if unsafe { libc::pthread_getcpuclockid(h.as_pthread_t(), &mut id) } == 0 {
                let mut ts = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                };
                // SAFETY: valid clock id and timespec.
                if unsafe { libc::clock_gettime(id, &mut ts) } == 0 {
                    r.total_ns += ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
                }
            }
        }
        r
    }
}

fn worker(s: &Shared) {
    loop {
        let chain = {
            let mut j = s.jobs.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                if let Some(c) = j.queue.pop_front() {
                    break c;
                }
                if j.stop {
                    return;
                }
                j = s.job_ready.wait(j).unwrap_or_else(|e| e.into_inner());
            }
        };
        let mut out = Vec::with_capacity(chain.len());
        exec_all(&chain, &s.cfg, &s.fds, &s.bufs, |d| out.push(d));
        s.done
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .append(&mut out);
        s.done_ready.notify_one();
    }
}

impl FileEngine for PoolFiles {
    fn submit(&mut self, ops: &[FileOp]) -> io::Result<()> {
        self.ops += ops.len() as u64;
        let mut j = self.shared.jobs.lock().unwrap_or_else(|e| e.into_inner());
        let queued = j.queue.len();
        let mut start = 0;
        for (i, op) in ops.iter().enumerate() {
            if !op.link {
                j.queue.push_back(ops[start..=i].to_vec());
                start = i + 1;
                self.chains += 1;
            }
        }
        if start < ops.len() {
            j.queue.push_back(ops[start..].to_vec());
            self.chains += 1;
        }
        let new = j.queue.len() - queued;
        drop(j);
        // One wake-up per chain queued (as tokio's blocking pool does), not notify_all: that
        // woke every idle worker for a single read, and all but one went back to sleep.
        for _ in 0..new.min(self.workers.len()) {
            self.shared.job_ready.notify_one();
        }
        Ok(())
    }

    fn reap(&mut self, min: usize, done: &mut Vec<Done>) -> io::Result<()> {
        let mut d = self.shared.done.lock().unwrap_or_else(|e| e.into_inner());
        while d.len() < min {
            d = self
                .shared
                .done_ready
                .wait(d)
                .unwrap_or_else(|e| e.into_inner());
            self.wakeups += 1;
        }
        done.append(&mut d);
        Ok(())
    }

    fn bufs(&self) -> &Buffers {
        &self.shared.bufs
    }

    fn open_now(&mut self, file: u32) -> io::Result<()> {
        let s = &self.shared;
        file::open_now(file, &s.cfg, &s.fds, &s.bufs)
    }

    fn counters(&self) -> Counters {
        let mut c = Counters::default();
        c.add("pool_chains", self.chains);
        c.add("blocking_calls", self.ops);
        c.add("reap_wakeups", self.wakeups);
        c
    }

    fn workers_cpu(&self) -> CpuReading {
        self.cpu_of_workers()
    }
}

impl Drop for PoolFiles {
    fn drop(&mut self) {
        self.shared
            .jobs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .stop = true;
        self.shared.job_ready.notify_all();
        for h in self.workers.drain(..) {
            let _ = h.join();
        }
    }
}
