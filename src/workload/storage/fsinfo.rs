//! What the storage suite's directory sits on: the filesystem type (statfs), the backing
//! device (mountinfo), whether O_DIRECT works there (tried, not assumed), and whether the
//! device has poll queues for IOPOLL (sysfs `queue/io_poll`).

use crate::workload::Params;
use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

#[derive(Clone, Debug)]
pub struct FsInfo {
    /// "ext4", "tmpfs", "xfs", or the magic number in hex.
    pub(crate) fs_type: String,
    /// Mount source ("/dev/vda"), "none" for memory filesystems.
    pub(crate) device: String,
    /// Ok when an aligned O_DIRECT write succeeded there; else what was refused.
    pub(crate) o_direct: Result<(), String>,
    /// Ok when the block device polls (IOPOLL works); else why not.
    pub(crate) dev_polls: Result<(), String>,
}

impl FsInfo {
    pub(crate) fn probe(dir: &Path) -> FsInfo {
        let fs_type = fs_type(dir).unwrap_or_else(|e| format!("unknown ({e})"));
        let device = mount_source(dir).unwrap_or_else(|| "unknown".into());
        FsInfo {
            o_direct: try_o_direct(dir),
            dev_polls: dev_polls(dir, &fs_type),
            fs_type,
            device,
        }
    }

    /// As recorded in every storage cell's `facts`.
    pub(crate) fn facts(&self) -> Params {
        Params::new()
            .with("fs", self.fs_type.clone())
            .with("device", self.device.clone())
            .with(
                "o_direct",
                match &self.o_direct {
                    Ok(()) => "works".to_string(),
                    Err(why) => format!("refused: {why}"),
                },
            )
    }
}

/// Free bytes for an unprivileged writer at `dir`.
pub(crate) fn free_bytes(dir: &Path) -> io::Result<u64> {
    // statfs(2) underneath, as glibc's statvfs.
    let s = rustix::fs::statvfs(dir)?;
    Ok(s.f_bavail * s.f_frsize)
}

fn fs_type(dir: &Path) -> io::Result<String> {
    let magic = rustix::fs::statfs(dir)?.f_type as u64;
    Ok(match magic {
        0xEF53 => "ext4".into(),
        0x0102_1994 => "tmpfs".into(),
        0x5846_5342 => "xfs".into(),
        0x9123_683E => "btrfs".into(),
        0x794C_7630 => "overlayfs".into(),
        0x2FC1_2FC1 => "zfs".into(),
        0xF2F5_2010 => "f2fs".into(),
        0x6969 => "nfs".into(),
        0x6573_5546 => "fuse".into(),
        0x0102_1997 => "9p".into(),
        0x4d44 => "vfat".into(),
        _ => format!("0x{magic:x}"),
    })
}

/// The mount source of the longest mount point containing `dir` (/proc/self/mountinfo).
fn mount_source(dir: &Path) -> Option<String> {
    let dir = std::fs::canonicalize(dir).ok()?;
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mut best: Option<(usize, String)> = None;
    for line in info.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let Some(sep) = f.iter().position(|x| *x == "-") else {
            continue;
        };
        let (Some(mnt), Some(src)) = (f.get(4), f.get(sep + 2)) else {
            continue;
        };
        if dir.starts_with(mnt) && best.as_ref().is_none_or(|(l, _)| mnt.len() >= *l) {
            best = Some((mnt.len(), src.to_string()));
        }
    }
    best.map(|(_, s)| s)
}

/// Tries an aligned 4 KiB O_DIRECT write in `dir` (the file is removed again).
fn try_o_direct(dir: &Path) -> Result<(), String> {
    let path = dir.join(".ringside-odirect-probe");
    let _guard = super::TempFiles(vec![path.clone()]);
    let c = CString::new(path.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
    // raw: rustix's open adds O_LARGEFILE to the flags (and is open(2), not openat(2)).
    // SAFETY: valid NUL-terminated path.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDWR | libc::O_CREAT | libc::O_DIRECT | libc::O_CLOEXEC,
            0o600,
        )
    };
    if fd < 0 {
        return Err(format!("open(O_DIRECT): {}", io::Error::last_os_error()));
    }
    let bufs = crate::io::file::Buffers::new(1, 4096).map_err(|e| e.to_string())?;
    // SAFETY: an aligned 4 KiB buffer we own; fd is open.
    let r = unsafe { libc::pwrite(fd, bufs.ptr(0).cast(), 4096, 0) };
    let e = io::Error::last_os_error();
    // SAFETY: we opened fd.
    unsafe { libc::close(fd) };
    if r == 4096 {
        Ok(())
    } else {
        Err(format!("aligned 4 KiB O_DIRECT write: {e}"))
    }
}

/// Whether the block device under `dir` has poll queues (IOPOLL completes only there).
fn dev_polls(dir: &Path, fs: &str) -> Result<(), String> {
    let dev = std::fs::metadata(dir).map_err(|e| e.to_string())?.dev();
    let (maj, min) = (libc::major(dev), libc::minor(dev));
    if maj == 0 {
        return Err(format!(
            "IOPOLL needs a block device with poll queues; {fs} has none"
        ));
    }
    let base = format!("/sys/dev/block/{maj}:{min}");
    let polls = [
        format!("{base}/queue/io_poll"),
        format!("{base}/../queue/io_poll"),
    ]
    .iter()
    .find_map(|p| std::fs::read_to_string(p).ok());
    let name = std::fs::canonicalize(&base)
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| format!("{maj}:{min}"));
    match polls.as_deref().map(str::trim) {
        Some("1") => Ok(()),
        Some(v) => Err(format!(
            "device {name} has no poll queues (queue/io_poll = {v}; NVMe needs \
             nvme.poll_queues=N, virtio-blk and most others cannot poll)"
        )),
        None => Err(format!("device {name}: queue/io_poll not found in sysfs")),
    }
}
