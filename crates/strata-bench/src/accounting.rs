//! Resource accounting from `/proc`: peak memory, bytes written, CPU time, disk usage,
//! and a description of the machine.

use std::path::Path;

fn proc_field(file: &str, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(file).ok()?;
    let line = text.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[allow(unsafe_code, reason = "one foreign call into glibc")]
unsafe extern "C" {
    /// glibc: gives free heap pages of every arena back to the system.
    fn malloc_trim(pad: usize) -> i32;
}

/// Resets the peak resident set size so the next reading covers only what follows. Free
/// heap memory that an earlier engine or round left in the allocator's arenas is handed
/// back first: the peak then starts from what is really live, not from whatever the
/// largest earlier run made the allocator keep.
#[allow(unsafe_code, reason = "one foreign call into glibc")]
pub fn reset_peak_rss() {
    // SAFETY: malloc_trim takes no pointers; it only releases pages that hold no
    // allocation, so no live memory is touched.
    unsafe {
        malloc_trim(0);
    }
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// A process whose `/proc` entries are read: this one, or a child (a peer's own
/// benchmark program).
#[derive(Debug, Clone, Copy)]
pub enum Process {
    /// This process.
    This,
    /// Another process, by pid.
    Pid(u32),
}

impl Process {
    fn path(self, leaf: &str) -> String {
        match self {
            Process::This => format!("/proc/self/{leaf}"),
            Process::Pid(pid) => format!("/proc/{pid}/{leaf}"),
        }
    }
}

/// Resets another process's peak resident set size (see [`reset_peak_rss`]; its free
/// heap is not trimmed).
pub fn reset_peak_rss_of(p: Process) {
    let _ = std::fs::write(p.path("clear_refs"), "5");
}

/// Peak resident set size in bytes since the last reset.
pub fn peak_rss() -> u64 {
    peak_rss_of(Process::This)
}

/// [`peak_rss`] of any process.
pub fn peak_rss_of(p: Process) -> u64 {
    proc_field(&p.path("status"), "VmHWM:").unwrap_or(0) * 1024
}

/// Bytes this process has written through write calls (WAL, tables, manifests).
pub fn bytes_written() -> u64 {
    bytes_written_of(Process::This)
}

/// [`bytes_written`] of any process.
pub fn bytes_written_of(p: Process) -> u64 {
    proc_field(&p.path("io"), "wchar:").unwrap_or(0)
}

/// CPU time (user + system) of this process, in seconds.
pub fn cpu_seconds() -> f64 {
    cpu_seconds_of(Process::This)
}

/// [`cpu_seconds`] of any process.
pub fn cpu_seconds_of(p: Process) -> f64 {
    let Ok(stat) = std::fs::read_to_string(p.path("stat")) else {
        return 0.0;
    };
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return 0.0;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
    // utime and stime are fields 14 and 15 of the whole line: 12 and 13 after ')'.
    (ticks(11) + ticks(12)) as f64 / 100.0
}

/// Bytes the files under `dir` take on disk: their allocated blocks, as `du` counts them
/// (a hole a file punched takes none; space an engine preallocated does).
pub fn disk_usage(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => disk_usage(&e.path()),
            Ok(m) => std::os::unix::fs::MetadataExt::blocks(&m) * 512,
            Err(_) => 0,
        })
        .sum()
}

/// The machine a run was made on.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Machine {
    /// CPU model name.
    pub cpu: String,
    /// Logical cores.
    pub cores: usize,
    /// Memory in bytes.
    pub memory: u64,
    /// Filesystem type of the database directory.
    pub filesystem: String,
    /// Kernel release.
    pub kernel: String,
}

/// Describes this machine, with the filesystem holding `dir`.
pub fn machine(dir: &Path) -> Machine {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default();
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let memory = proc_field("/proc/meminfo", "MemTotal:").unwrap_or(0) * 1024;
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    let filesystem = mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_, point, fs) = (f.next()?, f.next()?, f.next()?);
            dir.starts_with(point)
                .then(|| (point.len(), fs.to_string()))
        })
        .max()
        .map(|(_, fs)| fs)
        .unwrap_or_default();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .unwrap_or_default()
        .trim()
        .to_string();
    Machine {
        cpu,
        cores,
        memory,
        filesystem,
        kernel,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_are_plausible() {
        reset_peak_rss();
        let v = vec![1u8; 8 << 20];
        std::hint::black_box(&v);
        assert!(peak_rss() >= 8 << 20);
        let before = bytes_written();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), vec![0u8; 100_000]).unwrap();
        assert!(bytes_written() >= before + 100_000);
        let used = disk_usage(dir.path());
        assert!((100_000..100_000 + 65_536).contains(&used), "{used}");
        let sparse = std::fs::File::create(dir.path().join("sparse")).unwrap();
        sparse.set_len(10 << 20).unwrap();
        assert!(
            disk_usage(dir.path()) < used + 65_536,
            "a hole takes no space"
        );
        let m = machine(dir.path());
        assert!(m.cores >= 1 && m.memory > 0);
        assert!(!m.filesystem.is_empty());
    }
}
