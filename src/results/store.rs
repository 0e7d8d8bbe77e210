//! Atomic storage: temp file + fsync + rename + directory fsync, after every case; loading
//! with errors that name the file and what is wrong with it.

use super::schema::{RunResults, SCHEMA_ID, SCHEMA_VERSION};
use anyhow::{bail, Context};
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` so readers see the old file or the new one, never half; fsynced
/// (file and directory): the results file is the durable one.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_via_temp(path, bytes, true)
}

/// Writes `bytes` to `path` through a temporary file beside it and a rename. The temporary
/// file has an unpredictable name and is created new, never through a link (`O_EXCL`,
/// `O_NOFOLLOW`): a symlink planted at a predictable name (`.report.md.partial`) cannot make
/// us write elsewhere, and the rename replaces a link at `path` rather than writing through
/// it. `durable`: fsync the file and the directory (the derived files, re-renderable from the
/// results, skip it). The temporary file is removed when anything fails.
pub(crate) fn write_via_temp(path: &Path, bytes: &[u8], durable: bool) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("results");
    let (tmp, mut f) = loop {
        let tmp = dir.join(format!(".{name}.{:016x}.partial", fastrand::u64(..)));
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .mode(0o644)
            .open(&tmp)
        {
            Ok(f) => break (tmp, f),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    };
    let written = (|| {
        f.write_all(bytes)?;
        if durable {
            f.sync_all()?;
        }
        drop(f);
        fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    if durable {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// `dir`, which must be a real directory if it exists (never a symbolic link, which would
/// make writes under it land elsewhere), created if it does not.
pub(crate) fn real_dir(dir: &Path) -> io::Result<()> {
    match fs::symlink_metadata(dir) {
        Ok(m) if m.file_type().is_dir() => Ok(()),
        Ok(m) => Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!(
                "'{}' is {}, not a directory: refusing to write under it",
                dir.display(),
                if m.file_type().is_symlink() {
                    "a symbolic link"
                } else {
                    kind(&m)
                }
            ),
        )),
        Err(e) if e.kind() == io::ErrorKind::NotFound => fs::create_dir(dir),
        Err(e) => Err(e),
    }
}

/// The exclusive hold of a run on its `--out` directory, for the run's life: a second run
/// on the same directory would mix its files with this one's (both used to print
/// `results: DIR/results.json` over one run's file and charts from both). An advisory
/// `flock` on `DIR/.ringside.lock`, released when the process ends however it ends.
pub(crate) struct OutLock {
    _file: File,
}

/// Why [`lock_out`] could not take a directory.
#[derive(Debug)]
pub(crate) enum LockRefused {
    /// Another run holds it: "another ringside run (pid N) is writing to it; ...".
    Held(String),
    /// It cannot be created or its lock file opened.
    Unusable(String),
}

/// Makes `dir` (and its parents) for output, or says in words why it cannot be: a file
/// there, a link to nothing, a read-only filesystem, no permission; else the system's error.
pub(crate) fn make_out_dir(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::create_dir_all(dir).map_err(|e| out_dir_refusal(dir, &e))?;
    // A directory may exist and still take no file (/proc, a read-only mount): try one.
    let probe = dir.join(format!(".ringside-probe-{}", std::process::id()));
    match fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&probe)
    {
        Ok(_) => {
            let _ = fs::remove_file(&probe);
            Ok(())
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Err(format!(
            "it does not take new files (a virtual filesystem such as /proc or /sys?): \
             cannot create '{}': {e}",
            probe.display()
        )),
        Err(e) => Err(out_dir_refusal(dir, &e)),
    }
}

/// Why `dir` cannot be made or written, given the error the system gave for `what` in it.
fn out_dir_refusal(dir: &Path, e: &io::Error) -> String {
    if let Ok(m) = fs::symlink_metadata(dir) {
        if m.file_type().is_symlink() && fs::metadata(dir).is_err() {
            let to = fs::read_link(dir).map(|t| t.display().to_string());
            return format!(
                "it is a link to '{}', which does not exist",
                to.unwrap_or_default()
            );
        }
        if fs::metadata(dir).is_ok_and(|m| !m.is_dir()) {
            return "it is a file, not a directory".into();
        }
    }
    match e.raw_os_error() {
        Some(libc::EROFS) => "it is on a read-only filesystem".into(),
        Some(libc::EACCES | libc::EPERM) => format!("no permission to write there ({e})"),
        Some(libc::ENOTDIR) => "a part of its path is a file, not a directory".into(),
        _ => format!("cannot create it: {e}"),
    }
}

/// Takes `dir`'s [`OutLock`] (creating `dir`), or says who holds it.
pub(crate) fn lock_out(dir: &Path) -> Result<OutLock, LockRefused> {
    use rustix::fs::{flock, FlockOperation};
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let unusable = LockRefused::Unusable;
    make_out_dir(dir).map_err(unusable)?;
    let path = dir.join(".ringside.lock");
    let mut f = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .mode(0o644)
        .open(&path)
        .map_err(|e| {
            unusable(match e.raw_os_error() {
                Some(libc::ELOOP) => format!(
                    "'{}' is a symbolic link, which ringside never writes through: remove it",
                    path.display()
                ),
                // The directory exists, yet a file cannot be made in it.
                Some(libc::ENOENT) => format!(
                    "it does not take new files (a virtual filesystem such as /proc or /sys?): \
                     cannot create '{}': {e}",
                    path.display()
                ),
                Some(libc::EROFS | libc::EACCES | libc::EPERM) => out_dir_refusal(dir, &e),
                _ => format!("cannot open '{}': {e}", path.display()),
            })
        })?;
    if let Err(e) = flock(&f, FlockOperation::NonBlockingLockExclusive) {
        if e != rustix::io::Errno::WOULDBLOCK {
            let e = io::Error::from(e);
            return Err(unusable(format!("cannot lock '{}': {e}", path.display())));
        }
        let mut holder = String::new();
        let _ = (&f).take(64).read_to_string(&mut holder);
        let who = match holder.trim().parse::<u32>() {
            Ok(pid) => format!("another ringside run (pid {pid})"),
            Err(_) => "another ringside run".to_string(),
        };
        return Err(LockRefused::Held(format!(
            "{who} is writing to it; wait for it to end or choose another directory"
        )));
    }
    let _ = f.set_len(0);
    let _ = f.write_all(format!("{}\n", std::process::id()).as_bytes());
    Ok(OutLock { _file: f })
}

/// Where a run's files go.
pub(crate) struct Store {
    pub(crate) dir: PathBuf,
}

impl Store {
    /// Creates `dir` and proves it can be written, before anything is measured.
    pub(crate) fn create(dir: &Path) -> anyhow::Result<Store> {
        fs::create_dir_all(dir).with_context(|| format!("cannot create '{}'", dir.display()))?;
        let probe = dir.join(".ringside-write-test");
        write_atomic(&probe, b"ok")
            .with_context(|| format!("cannot write in '{}'", dir.display()))?;
        let _ = fs::remove_file(&probe);
        Ok(Store {
            dir: dir.to_path_buf(),
        })
    }

    pub(crate) fn results_path(&self) -> PathBuf {
        self.dir.join("results.json")
    }

    /// Saves the run so far (every case measured until now, not only the last). A directory
    /// removed mid-run is made again first (a real directory, never through a link), so what
    /// was measured is not lost with it.
    pub(crate) fn save(&self, run: &RunResults) -> anyhow::Result<()> {
        let bytes = serde_json::to_vec_pretty(run)?;
        if fs::symlink_metadata(&self.dir).is_err() {
            fs::create_dir_all(&self.dir).with_context(|| {
                format!(
                    "'{}' was removed mid-run and cannot be made again",
                    self.dir.display()
                )
            })?;
        }
        write_atomic(&self.results_path(), &bytes)
            .with_context(|| format!("cannot save '{}'", self.results_path().display()))
    }
}

/// The largest results file `report` and `compare` read: 64 MiB. A full run of every suite
/// with contenders writes a few MiB (about 1.5-6 KiB per cell, histogram included, for
/// several hundred cells); anything past this is not a results file, and reading it would only
/// spend memory.
pub const MAX_RESULTS_BYTES: u64 = 64 << 20;

/// What kind of file `m` is, for a refusal.
fn kind(m: &fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = m.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a plain file"
    }
}

/// Reads a results file: a regular file of at most [`MAX_RESULTS_BYTES`], checked before it
/// is opened (a FIFO would block, a device never ends) and again while reading (a file that
/// grows, or one whose size the kernel does not report, as in /proc).
fn read_bounded(path: &Path) -> anyhow::Result<Vec<u8>> {
    use std::io::Read;
    let cap_mib = MAX_RESULTS_BYTES >> 20;
    let m = fs::metadata(path)
        .with_context(|| format!("cannot read results file '{}'", path.display()))?;
    if !m.is_file() {
        bail!(
            "'{}' is not a regular file ({}); a results file is the results.json a run wrote",
            path.display(),
            kind(&m)
        );
    }
    if m.len() > MAX_RESULTS_BYTES {
        bail!(
            "'{}' is {} MiB, which exceeds {cap_mib} MiB, the most a results file may be",
            path.display(),
            m.len() >> 20
        );
    }
    let f = File::open(path)
        .with_context(|| format!("cannot read results file '{}'", path.display()))?;
    let mut bytes = Vec::with_capacity(m.len() as usize);
    f.take(MAX_RESULTS_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read results file '{}'", path.display()))?;
    if bytes.len() as u64 > MAX_RESULTS_BYTES {
        bail!(
            "'{}' exceeds {cap_mib} MiB, the most a results file may be (it grew while being \
             read, or did not report its size)",
            path.display()
        );
    }
    Ok(bytes)
}

/// Loads a results file, naming the file and the problem (missing, not a regular file, larger
/// than [`MAX_RESULTS_BYTES`], not JSON, truncated, other schema version).
pub fn load(path: &Path) -> anyhow::Result<RunResults> {
    let bytes = read_bounded(path)?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
        if e.is_eof() {
            anyhow::anyhow!("'{}' is truncated: JSON ends early ({e})", path.display())
        } else {
            anyhow::anyhow!("'{}' is not JSON: {e}", path.display())
        }
    })?;
    // The text is not needed past here: up to 64 MiB less held while the cells are built.
    drop(bytes);
    let mut v = v;
    match v.get("schema_version").and_then(|s| s.as_u64()) {
        Some(n) if n == SCHEMA_VERSION as u64 => {}
        Some(1) => upgrade_v1(&mut v),
        Some(n) => bail!(
            "'{}' has schema_version {n}; this ringside reads schema_version 1 to \
             {SCHEMA_VERSION}",
            path.display()
        ),
        None => bail!(
            "'{}' is not a ringside results file (no schema_version)",
            path.display()
        ),
    }
    move_load_engine(&mut v);
    move_cpu_plans(&mut v);
    type_equal_load(&mut v);
    let r: RunResults = serde_json::from_value(v)
        .with_context(|| format!("'{}' does not match the results schema", path.display()))?;
    super::check::check_cells(&r).map_err(|e| anyhow::anyhow!("'{}': {e}", path.display()))?;
    Ok(r)
}

/// A results file's text, a version-1 file upgraded first ([`upgrade_v1`]); without
/// [`load`]'s checks of size and cells.
pub fn parse(json: &str) -> anyhow::Result<RunResults> {
    let mut v: serde_json::Value = serde_json::from_str(json)?;
    if v.get("schema_version").and_then(|s| s.as_u64()) == Some(1) {
        upgrade_v1(&mut v);
    }
    move_load_engine(&mut v);
    move_cpu_plans(&mut v);
    type_equal_load(&mut v);
    Ok(serde_json::from_value(v)?)
}

/// The equal-load marker, which files written before 2026-11-29 kept as a param
/// (`"offered": "30% of slowest"`, on cells and rounds): moved to `equal_load` with its share
/// (`{"of_slowest": 0.3}`), so that their keys, headings and `compare`'s matching are
/// today's.
fn type_equal_load(v: &mut serde_json::Value) {
    use serde_json::Value;
    let Some(top) = v.as_object_mut() else { return };
    for list in ["cases", "rounds"] {
        for c in top
            .get_mut(list)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            let Some(c) = c.as_object_mut() else { continue };
            let share = c
                .get("params")
                .and_then(|p| p.get("offered"))
                .and_then(Value::as_str)
                .and_then(|s| s.strip_suffix("% of slowest"))
                .and_then(|pct| pct.trim().parse::<f64>().ok());
            let Some(pct) = share else { continue };
            if let Some(p) = c.get_mut("params").and_then(Value::as_object_mut) {
                p.remove("offered");
            }
            c.entry("equal_load")
                .or_insert(serde_json::json!({"of_slowest": pct / 100.0}));
        }
    }
}

/// The CPU plans, which files written before 2026-11-28 also kept in each environment
/// (`env.cpu_plan`: the run's choice, not the machine): the run's replaces the top-level
/// `plan` (the same plan, recorded with its sets), each other host's goes to its record's
/// `plan`.
fn move_cpu_plans(v: &mut serde_json::Value) {
    use serde_json::Value;
    let Some(top) = v.as_object_mut() else { return };
    let take = |env: Option<&mut Value>| {
        env.and_then(Value::as_object_mut)
            .and_then(|e| e.remove("cpu_plan"))
            .filter(|p| !p.is_null())
    };
    if let Some(p) = take(top.get_mut("env")) {
        top.insert("plan".into(), p);
    }
    for h in top
        .get_mut("hosts")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        let Some(h) = h.as_object_mut() else { continue };
        if let Some(p) = take(h.get_mut("env")) {
            h.entry("plan").or_insert(p);
        }
    }
}

/// The run's load engine, which files written before 2026-11-28 kept in `env.load_engine`
/// (the environment is what the machine is; the engine is what the run chose), moved to the
/// top-level `load_engine` where that is absent.
fn move_load_engine(v: &mut serde_json::Value) {
    let Some(top) = v.as_object_mut() else { return };
    let old = top
        .get_mut("env")
        .and_then(serde_json::Value::as_object_mut)
        .and_then(|env| env.remove("load_engine"));
    if let Some(e) = old {
        top.entry("load_engine").or_insert(e);
    }
}

/// A file of schema_version 1 in today's form (2): `ci95`'s percentiles named as
/// `latency_ns`'s (`p99_ns` -> `latency_ns.p99`); the open-loop rates per second rather than
/// summed over repetitions; `syscalls_per_op` a number or null with the reason beside it;
/// the storage suite's filesystem, device, O_DIRECT and page-cache state in `facts`, out of
/// `params` (of its cells and rounds).
/// What the file says is kept; only its form changes.
pub(crate) fn upgrade_v1(v: &mut serde_json::Value) {
    use serde_json::{Map, Value};
    let Some(top) = v.as_object_mut() else { return };
    for c in top
        .get_mut("cases")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        let Some(c) = c.as_object_mut() else { continue };
        let reps = c
            .get("repetitions")
            .and_then(Value::as_u64)
            .unwrap_or(1)
            .max(1);
        if let Some(facts) = storage_facts(c) {
            c.insert("facts".into(), Value::Object(facts));
        }
        if let Some(ci) = c.get_mut("ci95").and_then(Value::as_object_mut) {
            let mut lat = Map::new();
            for q in ["p50", "p90", "p99", "p999"] {
                if let Some(x) = ci.remove(&format!("{q}_ns")) {
                    lat.insert(q.into(), x);
                }
            }
            if !lat.is_empty() {
                ci.insert("latency_ns".into(), Value::Object(lat));
            }
        }
        if let Some(k) = c.get_mut("counters").and_then(Value::as_object_mut) {
            for name in ["offered_per_sec", "achieved_per_sec"] {
                if let Some(x) = k.get_mut(name) {
                    if let Some(sum) = x.as_u64() {
                        *x = ((sum + reps / 2) / reps).into();
                    }
                }
            }
        }
        if let Some(why) = c
            .get("syscalls_per_op")
            .and_then(|s| s.get("unavailable"))
            .cloned()
        {
            c.insert("syscalls_per_op".into(), Value::Null);
            c.insert("syscalls_per_op_unavailable".into(), why);
        }
    }
    for r in top
        .get_mut("rounds")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if let Some(r) = r.as_object_mut() {
            storage_facts(r);
        }
    }
    top.insert("$schema".into(), SCHEMA_ID.into());
    top.insert("schema_version".into(), SCHEMA_VERSION.into());
}

/// A version-1 storage cell's (or round's) setting, taken out of its `params`.
fn storage_facts(
    c: &mut serde_json::Map<String, serde_json::Value>,
) -> Option<serde_json::Map<String, serde_json::Value>> {
    let storage = c
        .get("workload")
        .and_then(|w| w.as_str())
        .is_some_and(|w| w.starts_with("storage."));
    let params = c.get_mut("params")?.as_object_mut().filter(|_| storage)?;
    let facts: serde_json::Map<_, _> = ["fs", "device", "o_direct", "page_cache"]
        .into_iter()
        .filter_map(|k| params.remove(k).map(|v| (k.to_string(), v)))
        .collect();
    (!facts.is_empty()).then_some(facts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("r.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        let names: Vec<_> = fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    /// A version-1 file loads in version 2's form, saying the same: ci95's percentiles under
    /// `latency_ns`, the open-loop rates per second, syscalls_per_op null with its reason,
    /// the storage setting out of `params` (of cells and rounds) into `facts`.
    #[test]
    fn a_version_1_file_loads_in_todays_form() {
        let mut v: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/fixtures/results.json")).unwrap();
        assert_eq!(v["schema_version"], 1);
        let setting = serde_json::json!({"fs": "ext4", "device": "/dev/vda",
                                         "o_direct": "works", "page_cache": "warm"});
        let mut cell = v["cases"][0].clone();
        cell["workload"] = "storage.randread".into();
        cell["params"] = serde_json::json!({"file_bytes": 4096, "depth": 1});
        for (k, x) in setting.as_object().unwrap() {
            cell["params"][k] = x.clone();
        }
        cell["repetitions"] = 4.into();
        cell["ci95"] = serde_json::json!({"samples": 100, "p50_ns": [1.0, 2.0],
                                          "p999_ns": [5.0, 9.0], "ops_per_sec": [3.0, 4.0]});
        cell["counters"] = serde_json::json!({"offered_per_sec": 4000,
                                              "achieved_per_sec": 3998, "fell_behind": 1});
        cell["syscalls_per_op"] = serde_json::json!({"unavailable": "perf refused"});
        v["cases"] = serde_json::json!([cell]);
        v["rounds"] = serde_json::json!([{"workload": "storage.randread",
            "params": cell["params"].clone(), "round": 0, "order": ["uring"],
            "probe": {"syscall_ns": 100.0}}]);
        let r = parse(&v.to_string()).unwrap();
        assert_eq!(
            (r.schema_version, r.schema.as_str()),
            (SCHEMA_VERSION, SCHEMA_ID)
        );
        let c = &r.cases[0];
        assert_eq!(
            serde_json::to_value(&c.params).unwrap(),
            serde_json::json!({"file_bytes": 4096, "depth": 1})
        );
        assert_eq!(serde_json::to_value(&c.facts).unwrap(), setting);
        assert_eq!(r.rounds[0].params, c.params);
        let f = c.figures.as_ref().unwrap();
        let ci = f.ci95.as_ref().unwrap();
        assert_eq!(
            (ci.latency_ns.p50, ci.latency_ns.p99, ci.latency_ns.p999),
            (Some((1.0, 2.0)), None, Some((5.0, 9.0)))
        );
        assert_eq!(ci.ops_per_sec, Some((3.0, 4.0)));
        let o = f.counters.open_loop.unwrap();
        assert_eq!(
            (o.offered_per_sec, o.achieved_per_sec, o.fell_behind),
            (1000, 1000, 1)
        );
        assert_eq!(
            f.syscalls_per_op.measured(),
            crate::measure::Measured::unavailable("perf refused")
        );
        let json = serde_json::to_value(c).unwrap();
        assert!(json["syscalls_per_op"].is_null(), "{json}");
        assert_eq!(json["syscalls_per_op_unavailable"], "perf refused");
    }

    /// A file that kept the load engine in `env` (before 2026-11-28) reads with it at the top,
    /// and one that names it at the top keeps that.
    #[test]
    fn a_load_engine_kept_in_env_is_read_as_the_runs() {
        let mut v: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/fixtures/results.json")).unwrap();
        v["env"]["load_engine"] = "uring".into();
        let r = parse(&v.to_string()).unwrap();
        assert_eq!(r.load_engine, Some(crate::load::Engine::Uring));
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("r.json");
        fs::write(&p, v.to_string()).unwrap();
        assert_eq!(
            load(&p).unwrap().load_engine,
            Some(crate::load::Engine::Uring)
        );
        let back = serde_json::to_value(&r).unwrap();
        assert!(back["env"].get("load_engine").is_none(), "{}", back["env"]);
        assert_eq!(back["load_engine"], "uring");
        v["load_engine"] = "epoll".into();
        assert_eq!(
            parse(&v.to_string()).unwrap().load_engine,
            Some(crate::load::Engine::Epoll)
        );
        v.as_object_mut().unwrap().remove("load_engine");
        v["env"].as_object_mut().unwrap().remove("load_engine");
        assert_eq!(parse(&v.to_string()).unwrap().load_engine, None);
    }

    /// A file that marked equal-load points with the param `offered` (before 2026-11-29)
    /// reads with the typed marker: its keys are today's, its capacity points untouched.
    #[test]
    fn an_offered_param_is_read_as_the_equal_load_marker() {
        let json = include_str!("../../tests/fixtures/ladder.json");
        assert!(json.contains("\"offered\": \"50% of slowest\""));
        let r = parse(json).unwrap();
        let (eq, cap): (
            Vec<&crate::results::CaseResult>,
            Vec<&crate::results::CaseResult>,
        ) = r.cases.iter().partition(|c| c.equal_load.is_some());
        assert!(!eq.is_empty() && !cap.is_empty());
        for c in &eq {
            assert_eq!(c.equal_load.unwrap().of_slowest, 0.5);
            assert!(!c.params.0.contains_key("offered"), "{:?}", c.params);
            assert!(c.key().ends_with(" equal-load"), "{}", c.key());
        }
        assert!(cap.iter().all(|c| !c.key().contains("equal-load")));
        let back = serde_json::to_value(&r).unwrap();
        assert!(!back.to_string().contains("offered\":"));
    }

    #[test]
    fn cpu_plans_kept_in_envs_are_read_as_the_runs_and_the_hosts() {
        let mut v: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/fixtures/charts.json")).unwrap();
        let plan = v["env"]["cpu_plan"].clone();
        assert!(plan.is_object(), "the fixture kept its plan in env");
        // What the old file's top-level plan said is replaced by env's (the same plan).
        v["plan"]["server"] = serde_json::json!([0]);
        v["hosts"] = serde_json::json!([
            {"role": "server", "host": "root@10.0.0.2", "env": v["env"].clone()}
        ]);
        let r = parse(&v.to_string()).unwrap();
        assert_eq!(serde_json::to_value(&r.plan).unwrap(), plan);
        assert_eq!(serde_json::to_value(&r.hosts[0].plan).unwrap(), plan);
        let back = serde_json::to_value(&r).unwrap();
        assert!(back["env"].get("cpu_plan").is_none());
        assert!(back["hosts"][0]["env"].get("cpu_plan").is_none());
        assert_eq!(back["hosts"][0]["plan"], plan);
    }

    #[test]
    fn load_names_the_problem() {
        let d = tempfile::tempdir().unwrap();
        let missing = load(&d.path().join("nope.json")).unwrap_err();
        assert!(format!("{missing:#}").contains("nope.json"));
        let p = d.path().join("t.json");
        fs::write(&p, b"{\"schema_version\": 1, \"cases\": [").unwrap();
        assert!(format!("{:#}", load(&p).unwrap_err()).contains("truncated"));
        fs::write(&p, b"hello").unwrap();
        assert!(format!("{:#}", load(&p).unwrap_err()).contains("not JSON"));
        fs::write(&p, b"{\"schema_version\": 7}").unwrap();
        assert!(format!("{:#}", load(&p).unwrap_err()).contains("schema_version 7"));
        let e = format!("{:#}", load(d.path()).unwrap_err());
        assert!(e.contains("not a regular file (a directory)"), "{e}");
        let e = format!("{:#}", load(Path::new("/dev/null")).unwrap_err());
        assert!(e.contains("not a regular file (a character device)"), "{e}");
    }
}
