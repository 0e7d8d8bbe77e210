//! Two hosts on one machine: two network namespaces joined by a veth pair (iproute2), with
//! 10.213.N.1 (the server side) and 10.213.N.2 (the client side); removed on drop. Only these
//! addresses, inside namespaces the test made, are ever targets.

use std::process::Command;

pub fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Two namespaces and the veth pair between them; removed on drop.
pub struct Hosts {
    pub server_ns: String,
    pub client_ns: String,
    pub server_ip: String,
    pub client_ip: String,
}

impl Hosts {
    /// `tag` keeps the names of two tests' namespaces apart (with the test's pid).
    pub fn make(tag: &str) -> Result<Hosts, String> {
        let id = std::process::id();
        let net = id % 250 + 1;
        let h = Hosts {
            server_ns: format!("{tag}{id}s"),
            client_ns: format!("{tag}{id}c"),
            server_ip: format!("10.213.{net}.1"),
            client_ip: format!("10.213.{net}.2"),
        };
        ip(&["netns", "add", &h.server_ns])?;
        if let Err(e) = ip(&["netns", "add", &h.client_ns]) {
            let _ = ip(&["netns", "del", &h.server_ns]);
            return Err(e);
        }
        // From here on, drop removes both.
        let (vs, vc) = (format!("{tag}v{id}s"), format!("{tag}v{id}c"));
        ip(&[
            "link",
            "add",
            &vs,
            "netns",
            &h.server_ns,
            "type",
            "veth",
            "peer",
            "name",
            &vc,
            "netns",
            &h.client_ns,
        ])?;
        for (ns, dev, addr) in [
            (&h.server_ns, &vs, format!("{}/24", h.server_ip)),
            (&h.client_ns, &vc, format!("{}/24", h.client_ip)),
        ] {
            ip(&["-n", ns, "addr", "add", &addr, "dev", dev])?;
            ip(&["-n", ns, "link", "set", dev, "up"])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
        }
        Ok(h)
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        // Deleting a namespace deletes the veth end inside it, and with it the pair.
        let _ = ip(&["netns", "del", &self.server_ns]);
        let _ = ip(&["netns", "del", &self.client_ns]);
    }
}
