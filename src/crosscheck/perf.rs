//! Where the CPU goes, from `perf script` output: the parsing and grouping half of
//! `ringside run --explain` (issue 15, item 4; not wired to a command yet). Input is the text
//! of `perf script -F comm,tid,cpu,event,ip,sym` over a `perf record -e cpu-clock -g -C CPUS`
//! (the software clock: VMs have no hardware counters); each sample is its header line and
//! its call chain, leaf first. Every sample falls in exactly one [`Group`], so the groups sum
//! to the samples read; the leaf kernel symbols are counted for the "top symbols" list.
//!
//! Grouping: idle when any frame is the idle loop; softirq when any frame is softirq
//! processing (charged to the CPU that ran it, as the sample was); otherwise the first frame
//! from the leaf that a rule names (a copy inside tcp_sendmsg is a copy; a spin lock slow path
//! under io_uring task work is a lock slow path); user space when the leaf is a user address;
//! the rest of the kernel under a syscall is syscall entry/exit and other syscall work.

use std::collections::HashMap;

/// Where a sample's CPU went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Group {
    Idle,
    Softirq,
    LockSlowPath,
    Copies,
    IoUring,
    TcpIp,
    Scheduler,
    Syscall,
    OtherKernel,
    User,
}

impl Group {
    pub const ALL: [Group; 10] = [
        Group::User,
        Group::Syscall,
        Group::TcpIp,
        Group::Softirq,
        Group::Scheduler,
        Group::IoUring,
        Group::Copies,
        Group::LockSlowPath,
        Group::OtherKernel,
        Group::Idle,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Group::Idle => "idle",
            Group::Softirq => "softirq",
            Group::LockSlowPath => "lock slow paths",
            Group::Copies => "copies to/from user",
            Group::IoUring => "io_uring task work and io-wq",
            Group::TcpIp => "TCP/IP and loopback transmit",
            Group::Scheduler => "scheduler and wake-ups",
            Group::Syscall => "syscall entry/exit and other syscall work",
            Group::OtherKernel => "other kernel",
            Group::User => "user space",
        }
    }
}

/// Kernel symbol prefixes (or whole names) of each leaf-first rule, in the order tried per
/// frame.
const RULES: &[(Group, &[&str])] = &[
    (
        Group::LockSlowPath,
        &[
            "native_queued_spin_lock_slowpath",
            "queued_spin_lock_slowpath",
            "__pv_queued_spin_lock_slowpath",
            "__mutex_lock",
            "rwsem_down_",
            "queued_read_lock_slowpath",
            "queued_write_lock_slowpath",
        ],
    ),
    (
        Group::Copies,
        &[
            "rep_movs_alternative",
            "copy_user_",
            "_copy_to_user",
            "_copy_from_user",
            "_copy_to_iter",
            "_copy_from_iter",
            "copy_page_to_iter",
            "copy_page_from_iter",
            "skb_copy_datagram_iter",
            "simple_copy_to_iter",
        ],
    ),
    (
        Group::IoUring,
        &[
            "io_uring",
            "io_wq_",
            "io_worker",
            "tctx_task_work",
            "io_submit_sqes",
            "io_issue_sqe",
            "io_poll_",
            "io_recv",
            "io_send",
            "io_req_",
            "io_cqring_",
            "__io_",
        ],
    ),
    (
        Group::TcpIp,
        &[
            "tcp_",
            "__tcp_",
            "ip_",
            "__ip_",
            "ipv4_",
            "inet_",
            "__inet_",
            "sock_",
            "__sock_",
            "sk_",
            "__sk_",
            "skb_",
            "__skb_",
            "__dev_queue_xmit",
            "dev_hard_start_xmit",
            "loopback_xmit",
            "netif_",
            "__netif_",
            "napi_",
            "__napi_",
            "nf_",
            "dst_",
        ],
    ),
    (
        Group::Scheduler,
        &[
            "schedule",
            "__schedule",
            "finish_task_switch",
            "try_to_wake_up",
            "ttwu_",
            "pick_next_task",
            "enqueue_task",
            "dequeue_task",
            "update_curr",
            "__wake_up",
            "wake_up_",
            "select_task_rq",
        ],
    ),
];

const IDLE: &[&str] = &[
    "do_idle",
    "cpu_idle",
    "default_idle",
    "pv_native_safe_halt",
    "cpuidle_enter",
];
const SOFTIRQ: &[&str] = &[
    "__do_softirq",
    "handle_softirqs",
    "do_softirq",
    "net_rx_action",
];
const SYSCALL: &[&str] = &[
    "entry_SYSCALL",
    "do_syscall_64",
    "syscall_exit_to_user_mode",
    "__x64_sys_",
];

fn matches(sym: &str, list: &[&str]) -> bool {
    list.iter().any(|p| sym.starts_with(p))
}

/// One frame: a kernel address (top half) or not, and its symbol.
#[derive(Clone, Debug, PartialEq)]
struct Frame {
    kernel: bool,
    sym: String,
}

/// The breakdown of a capture.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Breakdown {
    pub samples: u64,
    /// Samples per group (every sample in exactly one).
    pub groups: Vec<(Group, u64)>,
    /// Leaf kernel symbols with their samples, most first (at most `TOP`).
    pub top_kernel: Vec<(String, u64)>,
}

impl Breakdown {
    /// A group's share of the samples, percent.
    pub fn pct(&self, g: Group) -> f64 {
        let n = self.groups.iter().find(|(x, _)| *x == g).map_or(0, |x| x.1);
        if self.samples == 0 {
            0.0
        } else {
            n as f64 * 100.0 / self.samples as f64
        }
    }
}

/// Leaf kernel symbols kept.
pub const TOP: usize = 10;

fn classify(comm: &str, frames: &[Frame]) -> Group {
    if comm.starts_with("swapper") || frames.iter().any(|f| f.kernel && matches(&f.sym, IDLE)) {
        return Group::Idle;
    }
    if frames.iter().any(|f| f.kernel && matches(&f.sym, SOFTIRQ)) {
        return Group::Softirq;
    }
    match frames.first() {
        None => return Group::OtherKernel,
        Some(f) if !f.kernel => return Group::User,
        _ => {}
    }
    for f in frames.iter().filter(|f| f.kernel) {
        for (g, list) in RULES {
            if matches(&f.sym, list) {
                return *g;
            }
        }
    }
    if comm.starts_with("iou-") {
        return Group::IoUring;
    }
    if frames.iter().any(|f| f.kernel && matches(&f.sym, SYSCALL)) {
        return Group::Syscall;
    }
    Group::OtherKernel
}

/// Parses `perf script -F comm,tid,cpu,event,ip,sym` text and groups its samples.
pub fn breakdown(script: &str) -> Breakdown {
    let mut counts: HashMap<Group, u64> = HashMap::new();
    let mut leaves: HashMap<String, u64> = HashMap::new();
    let mut samples = 0u64;
    let mut comm: Option<String> = None;
    let mut frames: Vec<Frame> = Vec::new();
    let mut flush = |comm: &mut Option<String>, frames: &mut Vec<Frame>| {
        if let Some(c) = comm.take() {
            samples += 1;
            *counts.entry(classify(&c, frames)).or_default() += 1;
            if let Some(f) = frames.first().filter(|f| f.kernel) {
                *leaves.entry(f.sym.clone()).or_default() += 1;
            }
        }
        frames.clear();
    };
    for line in script.lines() {
        if line.trim().is_empty() {
            flush(&mut comm, &mut frames);
            continue;
        }
        if line.starts_with(char::is_whitespace) {
            // A frame: "<hex ip> <symbol...>".
            let t = line.trim();
            let (ip, sym) = t.split_once(' ').unwrap_or((t, "[unknown]"));
            let ip = u64::from_str_radix(ip, 16).unwrap_or(0);
            frames.push(Frame {
                kernel: ip >= 0xffff_8000_0000_0000,
                sym: sym.trim().to_string(),
            });
        } else {
            flush(&mut comm, &mut frames);
            // The header: "comm  tid [cpu] event:"; comm may hold spaces.
            let head = line.split(" [").next().unwrap_or(line).trim_end();
            let name = head
                .rsplit_once(' ')
                .map(|(c, _tid)| c.trim_end())
                .unwrap_or(head);
            comm = Some(name.to_string());
        }
    }
    flush(&mut comm, &mut frames);
    let mut top: Vec<(String, u64)> = leaves.into_iter().collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    top.truncate(TOP);
    Breakdown {
        samples,
        groups: Group::ALL
            .iter()
            .map(|g| (*g, counts.get(g).copied().unwrap_or(0)))
            .filter(|(_, n)| *n > 0)
            .collect(),
        top_kernel: top,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Samples in the shape perf 6.1 prints on this machine.
    const SCRIPT: &str = "\
swapper     0 [001] cpu-clock: 
\tffffffff821f6a8e pv_native_safe_halt
\tffffffff821f6c1a default_idle
\tffffffff813c2c31 do_idle

ringside    1748 [001] cpu-clock: 
\t          10a974 __libc_recv
\t    7f0065a80000 [unknown]

ringside serve  1750 [001] cpu-clock: 
\tffffffff81000130 entry_SYSCALL_64_after_hwframe

ringside serve  1750 [001] cpu-clock: 
\tffffffff813f4a10 native_queued_spin_lock_slowpath
\tffffffff813f4b00 _raw_spin_lock
\tffffffff81a0c000 tctx_task_work
\tffffffff821ef691 do_syscall_64

ringside serve  1750 [001] cpu-clock: 
\tffffffff81e40000 rep_movs_alternative
\tffffffff81e30000 tcp_sendmsg_locked
\tffffffff821ef691 do_syscall_64

ksoftirqd/1    22 [001] cpu-clock: 
\tffffffff81e50000 tcp_v4_rcv
\tffffffff81e51000 net_rx_action
\tffffffff81e52000 handle_softirqs

ringside serve  1750 [001] cpu-clock: 
\tffffffff81e30000 tcp_sendmsg_locked
\tffffffff821ef691 do_syscall_64

ringside serve  1750 [001] cpu-clock: 
\tffffffff813a4413 finish_task_switch.isra.0
\tffffffff813a5000 __schedule

iou-wrk-1750  1760 [001] cpu-clock: 
\tffffffff81777000 some_fs_helper

ringside serve  1750 [001] cpu-clock: 
\tffffffff81777000 some_fs_helper
";

    #[test]
    fn every_sample_in_one_group_and_the_groups_sum_to_all() {
        let b = breakdown(SCRIPT);
        assert_eq!(b.samples, 10);
        assert_eq!(b.groups.iter().map(|g| g.1).sum::<u64>(), 10);
        let of = |g: Group| b.groups.iter().find(|x| x.0 == g).map_or(0, |x| x.1);
        assert_eq!(of(Group::Idle), 1);
        assert_eq!(of(Group::User), 1);
        assert_eq!(of(Group::Syscall), 1);
        assert_eq!(
            of(Group::LockSlowPath),
            1,
            "spin lock slow path under task work"
        );
        assert_eq!(of(Group::Copies), 1, "a copy inside tcp_sendmsg is a copy");
        assert_eq!(of(Group::Softirq), 1);
        assert_eq!(of(Group::TcpIp), 1);
        assert_eq!(of(Group::Scheduler), 1);
        assert_eq!(
            of(Group::IoUring),
            1,
            "an io-wq worker's unnamed kernel work"
        );
        assert_eq!(of(Group::OtherKernel), 1);
        assert!((b.pct(Group::Idle) - 10.0).abs() < 1e-9);
        // Leaf kernel symbols: some_fs_helper twice leads.
        assert_eq!(b.top_kernel[0], ("some_fs_helper".to_string(), 2));
    }

    #[test]
    fn empty_input_is_no_samples() {
        assert_eq!(breakdown(""), Breakdown::default());
    }
}
