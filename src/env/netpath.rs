//! The network path from this host to a peer address: the interface the kernel routes it
//! through (`ip -j route get`), what kind of link that is (loopback, veth, another virtual
//! kind, or a NIC with its driver), its MTU and link speed where the kernel knows them, its
//! receive/transmit queues, and the CPUs its IRQs are steered to (`/proc/interrupts`,
//! `/proc/irq/N/effective_affinity_list`) where readable. Every field that could not be read
//! is absent, with the reason in `unavailable` when nothing could be.

use crate::child;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs;
use std::process::Command;
use std::time::Duration;

/// The path toward one peer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NetPath {
    /// The peer address the route was asked for.
    pub(crate) peer: String,
    /// The outgoing interface (`lo`, `eth0`, a veth end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) interface: Option<String>,
    /// This host's address on that route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) local_addr: Option<String>,
    /// `loopback`, `veth` (or another virtual kind from `ip -d link`: `bridge`, `vlan`, ...),
    /// `nic` (a device with a driver), `virtual` (none of those).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) kind: Option<String>,
    /// The NIC's driver (`/sys/class/net/DEV/device/driver`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) driver: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) mtu: Option<u32>,
    /// Link speed, Mbit/s, where the kernel knows it (not for loopback or an unknown speed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) speed_mbps: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) rx_queues: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tx_queues: Option<u32>,
    /// The interface's IRQs: `"IRQ name" -> CPUs` (effective affinity, else smp_affinity).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) irq_cpus: BTreeMap<String, String>,
    /// Why the route could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) unavailable: Option<String>,
}

impl NetPath {
    /// One line: `eth0 (nic, virtio_net) mtu 1500, 10000 Mbit/s, 10.0.0.2 -> 10.0.0.1`.
    pub(crate) fn summary(&self) -> String {
        if let Some(why) = &self.unavailable {
            return format!("to {}: unavailable: {why}", self.peer);
        }
        let mut s = self.interface.clone().unwrap_or_else(|| "?".into());
        let mut what: Vec<String> = self.kind.iter().cloned().collect();
        what.extend(self.driver.iter().cloned());
        if !what.is_empty() {
            s += &format!(" ({})", what.join(", "));
        }
        if let Some(m) = self.mtu {
            s += &format!(" mtu {m}");
        }
        if let Some(v) = self.speed_mbps {
            s += &format!(", {v} Mbit/s");
        }
        if let (Some(r), Some(t)) = (self.rx_queues, self.tx_queues) {
            s += &format!(", {r} rx / {t} tx queues");
        }
        s += &format!(
            ", {} -> {}",
            self.local_addr.as_deref().unwrap_or("?"),
            self.peer
        );
        if !self.irq_cpus.is_empty() {
            let irqs: Vec<String> = self
                .irq_cpus
                .iter()
                .map(|(k, v)| format!("{k} on CPU {v}"))
                .collect();
            s += &format!("; IRQs: {}", irqs.join(", "));
        }
        s
    }
}

/// Runs `ip ARGS` (bounded) and parses its JSON output.
fn ip_json(args: &[&str]) -> Result<serde_json::Value, String> {
    let mut c = Command::new("ip");
    c.args(args);
    let cap = child::Capture {
        stdout_max: 1 << 20,
        stderr_max: 4096,
        within: Duration::from_secs(5),
        cpus: None,
    };
    let out = child::run_captured(c, &cap, |_| {}).map_err(|e| format!("ip: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("ip {}: {e}", args.join(" ")))
}

fn read_trim(path: &str) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// The path from this host toward `peer` (an IP address).
pub(crate) fn toward(peer: &str) -> NetPath {
    let mut p = NetPath {
        peer: peer.to_string(),
        ..Default::default()
    };
    let route = match ip_json(&["-j", "route", "get", peer]) {
        Ok(v) => v,
        Err(why) => {
            p.unavailable = Some(why);
            return p;
        }
    };
    let r = &route[0];
    let Some(dev) = r["dev"].as_str().map(str::to_string) else {
        p.unavailable = Some(format!("no interface in the route: {route}"));
        return p;
    };
    p.local_addr = r["prefsrc"].as_str().map(str::to_string);
    let sys = format!("/sys/class/net/{dev}");
    p.mtu = read_trim(&format!("{sys}/mtu")).and_then(|s| s.parse().ok());
    // Unknown speed reads -1 (or fails with EINVAL while the link is down).
    p.speed_mbps = read_trim(&format!("{sys}/speed"))
        .and_then(|s| s.parse::<i64>().ok())
        .filter(|&v| v > 0)
        .map(|v| v as u64);
    let count = |prefix: &str| {
        fs::read_dir(format!("{sys}/queues")).ok().map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
                .count() as u32
        })
    };
    p.rx_queues = count("rx-");
    p.tx_queues = count("tx-");
    let device = fs::read_link(format!("{sys}/device"))
        .ok()
        .and_then(|l| l.file_name().map(|f| f.to_string_lossy().into_owned()));
    p.driver = fs::read_link(format!("{sys}/device/driver"))
        .ok()
        .and_then(|l| l.file_name().map(|f| f.to_string_lossy().into_owned()));
    let flags = read_trim(&format!("{sys}/flags"))
        .and_then(|s| u32::from_str_radix(s.trim_start_matches("0x"), 16).ok());
    let link_kind = ip_json(&["-j", "-d", "link", "show", "dev", &dev])
        .ok()
        .and_then(|v| v[0]["linkinfo"]["info_kind"].as_str().map(str::to_string));
    p.kind = Some(
        if flags.is_some_and(|f| f & libc::IFF_LOOPBACK as u32 != 0) {
            "loopback".into()
        } else if let Some(k) = link_kind {
            k
        } else if device.is_some() {
            "nic".into()
        } else {
            "virtual".into()
        },
    );
    p.irq_cpus = irqs_of(&dev, device.as_deref());
    p.interface = Some(dev);
    p
}

/// The IRQs in /proc/interrupts named after `dev` or its device (`virtio0-input.0`,
/// `eth0-TxRx-3`), with the CPUs each is steered to.
fn irqs_of(dev: &str, device: Option<&str>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Ok(text) = fs::read_to_string("/proc/interrupts") else {
        return out;
    };
    for line in text.lines().skip(1) {
        let Some((irq, rest)) = line.trim_start().split_once(':') else {
            continue;
        };
        if irq.parse::<u32>().is_err() {
            continue;
        }
        let Some(name) = rest.split_whitespace().last() else {
            continue;
        };
        let ours = |n: &str| {
            name == n || name.starts_with(&format!("{n}-")) || name.starts_with(&format!("{n}."))
        };
        if !(ours(dev) || device.is_some_and(ours)) {
            continue;
        }
        let cpus = read_trim(&format!("/proc/irq/{irq}/effective_affinity_list"))
            .filter(|s| !s.is_empty())
            .or_else(|| read_trim(&format!("/proc/irq/{irq}/smp_affinity_list")));
        if let Some(c) = cpus {
            out.insert(format!("{irq} {name}"), c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_named_loopback() {
        let p = toward("127.0.0.1");
        if let Some(why) = &p.unavailable {
            eprintln!("skipped: {why}");
            return;
        }
        assert_eq!(p.interface.as_deref(), Some("lo"), "{p:?}");
        assert_eq!(p.kind.as_deref(), Some("loopback"), "{p:?}");
        assert!(p.mtu.is_some_and(|m| m > 0), "{p:?}");
        assert!(
            p.summary().starts_with("lo (loopback) mtu"),
            "{}",
            p.summary()
        );
    }
}
