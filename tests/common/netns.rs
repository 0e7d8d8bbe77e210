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
    /// The veth ends, in the server and the client namespace.
    pub server_dev: String,
    pub client_dev: String,
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
            server_dev: format!("{tag}v{id}s"),
            client_dev: format!("{tag}v{id}c"),
        };
        ip(&["netns", "add", &h.server_ns])?;
        if let Err(e) = ip(&["netns", "add", &h.client_ns]) {
            let _ = ip(&["netns", "del", &h.server_ns]);
            return Err(e);
        }
        // From here on, drop removes both.
        let (vs, vc) = (h.server_dev.clone(), h.client_dev.clone());
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

/// Runs `f` on a thread of its own inside network namespace `ns` (sockets it makes stay there).
#[allow(dead_code)]
pub fn in_ns<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    use std::os::fd::AsRawFd;
    let path = format!("/run/netns/{ns}");
    std::thread::spawn(move || {
        let file = std::fs::File::open(&path).map_err(|e| format!("{path}: {e}"))?;
        // SAFETY: setns on this thread only, with a namespace fd we hold.
        if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(format!("setns {path}: {}", std::io::Error::last_os_error()));
        }
        Ok(f())
    })
    .join()
    .map_err(|_| "the namespace thread panicked".to_string())?
}

/// Sets one ethtool on/off feature of `dev` (SIOCETHTOOL with a legacy set command: no
/// `ethtool` binary needed). Run inside the device's namespace.
#[allow(dead_code)]
fn ethtool_set(dev: &str, cmd: u32, on: bool) -> Result<(), String> {
    #[repr(C)]
    struct Value {
        cmd: u32,
        data: u32,
    }
    #[repr(C)]
    struct Ifreq {
        name: [u8; 16],
        data: *mut Value,
        _pad: [u8; 16],
    }
    let mut v = Value {
        cmd,
        data: on as u32,
    };
    let mut ifr = Ifreq {
        name: [0; 16],
        data: &mut v,
        _pad: [0; 16],
    };
    ifr.name[..dev.len().min(15)].copy_from_slice(&dev.as_bytes()[..dev.len().min(15)]);
    // SAFETY: a datagram socket for the ioctl, closed below.
    let s = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0) };
    if s < 0 {
        return Err(format!("socket: {}", std::io::Error::last_os_error()));
    }
    const SIOCETHTOOL: libc::c_ulong = 0x8946;
    // SAFETY: ifr points at a live ethtool_value for the call.
    let r = unsafe { libc::ioctl(s, SIOCETHTOOL as _, &mut ifr as *mut Ifreq) };
    let e = std::io::Error::last_os_error();
    // SAFETY: our fd.
    unsafe { libc::close(s) };
    if r < 0 {
        return Err(format!("SIOCETHTOOL {cmd:#x} on {dev}: {e}"));
    }
    Ok(())
}

#[allow(dead_code)]
impl Hosts {
    /// Makes the veth pair run NAPI: GRO on at both ends (veth then receives through NAPI)
    /// and TSO off (a TSO super-packet from the sender bypasses the receiver's NAPI).
    pub fn veth_napi(&self) -> Result<(), String> {
        const ETHTOOL_STSO: u32 = 0x1f;
        const ETHTOOL_SGRO: u32 = 0x2c;
        for (ns, dev) in [
            (&self.server_ns, &self.server_dev),
            (&self.client_ns, &self.client_dev),
        ] {
            let d = dev.clone();
            in_ns(ns, move || {
                ethtool_set(&d, ETHTOOL_SGRO, true)?;
                ethtool_set(&d, ETHTOOL_STSO, false)
            })??;
        }
        Ok(())
    }

    /// The NAPI id (SO_INCOMING_NAPI_ID) a TCP connection from the client namespace to the
    /// server namespace carries once a byte arrived: 0 when the path has none.
    pub fn napi_id(&self) -> Result<u32, String> {
        use std::io::{Read, Write};
        use std::os::fd::AsRawFd;
        let ip = self.server_ip.clone();
        let l = in_ns(&self.server_ns, move || {
            std::net::TcpListener::bind((ip.as_str(), 0))
        })?
        .map_err(|e| format!("bind: {e}"))?;
        let to = l.local_addr().map_err(|e| e.to_string())?;
        let c = in_ns(&self.client_ns, move || -> std::io::Result<_> {
            let mut c = std::net::TcpStream::connect(to)?;
            c.write_all(b"n")?;
            Ok(c)
        })?
        .map_err(|e| format!("connect: {e}"))?;
        let (mut s, _) = l.accept().map_err(|e| e.to_string())?;
        s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .map_err(|e| e.to_string())?;
        let mut b = [0u8; 1];
        s.read_exact(&mut b).map_err(|e| e.to_string())?;
        drop(c);
        ringside::env::uring::modern::napi_id(s.as_raw_fd()).map_err(|e| e.to_string())
    }
}
