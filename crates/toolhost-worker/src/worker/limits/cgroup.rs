//! cgroup v2 for workers, where the host's own cgroup is delegated to its user: a child
//! cgroup per worker, with `memory.max` and `pids.max` when those controllers are available,
//! ended with `cgroup.kill`.
//!
//! A cgroup is ours to divide when we can write it and it says it is delegated (systemd marks
//! delegated cgroups with the `user.delegate` attribute), or it is the root of our cgroup
//! namespace (a container's own tree). Controllers can only be enabled for children of a
//! cgroup that holds no process itself: the host first moves what its cgroup holds (itself,
//! its children) into a leaf beside the workers'.

use std::{
    ffi::CString,
    fs, io,
    os::unix::ffi::OsStrExt,
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicU64, Ordering},
        OnceLock,
    },
};

/// A delegated cgroup the host puts its workers' cgroups in, and what they can be limited by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Base {
    pub dir: PathBuf,
    pub memory: bool,
    pub pids: bool,
}

/// The cgroup v2 path of this process (the `0::` line of `/proc/self/cgroup`).
fn own_path(proc_cgroup: &str) -> Option<&str> {
    proc_cgroup
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(str::trim)
}

/// Where cgroup v2 is mounted (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified` on a hybrid
/// system), from `/proc/self/mountinfo`.
fn mount_point(mountinfo: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|l| {
        // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
        let (fields, rest) = l.split_once(" - ")?;
        if rest.split_whitespace().next()? != "cgroup2" {
            return None;
        }
        let mut f = fields.split_whitespace();
        let root = f.nth(3)?;
        let mount = f.next()?;
        // A mount of a subtree would need its root taken off our path; not worth it.
        (root == "/").then(|| PathBuf::from(unescape(mount)))
    })
}

/// mountinfo escapes spaces, tabs, newlines and backslashes as octal.
fn unescape(s: &str) -> String {
    let mut out = Vec::with_capacity(s.len());
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(u8::is_ascii_digit) {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn writable(path: &Path) -> bool {
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: access(2) reads the NUL-terminated path only.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

#[cfg(not(target_os = "linux"))]
fn marked_delegated(_: &Path) -> bool {
    false
}

/// Whether systemd delegated `dir` (`user.delegate` = 1).
#[cfg(target_os = "linux")]
fn marked_delegated(dir: &Path) -> bool {
    let Ok(c) = CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    let mut value = [0u8; 8];
    // SAFETY: getxattr writes at most `value.len()` bytes into `value`; both names are
    // NUL-terminated.
    let n = unsafe {
        libc::getxattr(
            c.as_ptr(),
            c"user.delegate".as_ptr(),
            value.as_mut_ptr().cast(),
            value.len(),
        )
    };
    n > 0 && value[..n as usize].trim_ascii() == b"1"
}

/// The cgroup this process may divide, and the controllers it offers, from the system's
/// files (`root`: `/` but for tests); `Err` says why there is none. No side effects.
pub(crate) fn probe_at(root: &Path) -> Result<Base, String> {
    let read = |p: &str| fs::read_to_string(root.join(p)).unwrap_or_default();
    let mount = mount_point(&read("proc/self/mountinfo"))
        .ok_or("cgroup v2 is not mounted")?
        .strip_prefix("/")
        .map(|m| root.join(m))
        .map_err(|_| "cgroup v2 mount point is not absolute")?;
    let cgroup_text = read("proc/self/cgroup");
    let own = own_path(&cgroup_text).ok_or("this process is in no cgroup v2")?;
    let dir = match own.trim_start_matches('/') {
        "" => mount,
        own => mount.join(own),
    };
    let delegated = own == "/" || marked_delegated(&dir);
    if !delegated {
        return Err(format!(
            "{} is not delegated to this user (run toolhost under `systemd-run --user \
             --scope -p Delegate=yes`)",
            dir.display()
        ));
    }
    for file in ["", "cgroup.procs", "cgroup.subtree_control"] {
        let path = if file.is_empty() {
            dir.clone()
        } else {
            dir.join(file)
        };
        if !writable(&path) {
            return Err(format!("{} is not writable", path.display()));
        }
    }
    let controllers = fs::read_to_string(dir.join("cgroup.controllers")).unwrap_or_default();
    let has = |c: &str| controllers.split_whitespace().any(|x| x == c);
    Ok(Base {
        memory: has("memory"),
        pids: has("pids"),
        dir,
    })
}

/// The host's [`Base`], made ready for workers once: the processes of its cgroup moved into
/// a leaf of their own, the controllers enabled for children. A controller that cannot be
/// enabled is left out (its limit falls back to what a process can set on itself).
pub(crate) fn prepared() -> Result<&'static Base, String> {
    static BASE: OnceLock<Result<Base, String>> = OnceLock::new();
    BASE.get_or_init(|| {
        let base = probe_at(Path::new("/"))?;
        let (memory, pids) = enable(&base);
        if base.memory != memory || base.pids != pids {
            tracing::warn!(
                cgroup = %base.dir.display(),
                "cannot enable the cgroup's controllers for workers; their limits fall back \
                 to rlimits"
            );
        }
        Ok(Base {
            memory,
            pids,
            dir: base.dir,
        })
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// Enables memory and pids for the children of `base.dir`; which of them are on.
fn enable(base: &Base) -> (bool, bool) {
    let wanted: Vec<&str> = [("memory", base.memory), ("pids", base.pids)]
        .into_iter()
        .filter_map(|(c, on)| on.then_some(c))
        .collect();
    if wanted.is_empty() {
        return (false, false);
    }
    let control = base.dir.join("cgroup.subtree_control");
    let enabled = || {
        let text = fs::read_to_string(&control).unwrap_or_default();
        let on = |c: &str| text.split_whitespace().any(|x| x == c);
        (base.memory && on("memory"), base.pids && on("pids"))
    };
    if enabled() == (base.memory, base.pids) {
        return enabled();
    }
    let request: String = wanted.iter().map(|c| format!("+{c} ")).collect();
    if fs::write(&control, request.trim_end()).is_err() {
        // Not the namespace's root: no process may stay in a cgroup whose children get
        // controllers. Everything in it moves to a leaf (it is ours: the cgroup is delegated).
        let leaf = base
            .dir
            .join(format!("toolhost-host-{}", std::process::id()));
        if let Err(e) = fs::create_dir(&leaf).or_else(|e| match e.kind() {
            io::ErrorKind::AlreadyExists => Ok(()),
            _ => Err(e),
        }) {
            tracing::debug!("cannot create {}: {e}", leaf.display());
            return (false, false);
        }
        for _ in 0..5 {
            let procs = fs::read_to_string(base.dir.join("cgroup.procs")).unwrap_or_default();
            if procs.trim().is_empty() {
                break;
            }
            for pid in procs.split_whitespace() {
                let _ = fs::write(leaf.join("cgroup.procs"), pid);
            }
        }
        let _ = fs::write(&control, request.trim_end());
    }
    enabled()
}

/// Creates the cgroup of one worker beneath `base`, bounded by `memory` bytes and
/// `processes` tasks where the controllers allow.
pub(crate) fn create(
    base: &Base,
    memory: Option<u64>,
    processes: Option<u64>,
) -> io::Result<PathBuf> {
    let dir = fresh_dir(base)?;
    let set = |file: &str, value: String| -> io::Result<()> {
        fs::write(dir.join(file), value)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.join(file).display())))
    };
    let written = (|| {
        if let (true, Some(bytes)) = (base.memory, memory) {
            set("memory.max", bytes.to_string())?;
            // The whole worker is the unit: an OOM kill takes all of it, not one helper.
            set("memory.oom.group", "1".into())?;
            // Swap would let it go past the limit in effect; absent without swap support.
            match set("memory.swap.max", "0".into()) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                other => other?,
            }
        }
        if let (true, Some(n)) = (base.pids, processes) {
            set("pids.max", n.to_string())?;
        }
        Ok(())
    })();
    if let Err(e) = written {
        let _ = fs::remove_dir(&dir);
        return Err(e);
    }
    Ok(dir)
}

/// Makes a new, empty cgroup beneath `base` for one worker. The name holds the host's pid, so
/// an earlier host of the same pid (pids wrap) may have left one of that name behind if it
/// was killed before its keepers ran: an empty leftover is removed, a busy one passed by.
fn fresh_dir(base: &Base) -> io::Result<PathBuf> {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let mut tries = 0;
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = base
            .dir
            .join(format!("toolhost-{}-worker-{n}", std::process::id()));
        match fs::create_dir(&dir) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && tries < 64 => {
                tries += 1;
                // rmdir of a cgroup fails while it holds a process or a child: then it is
                // someone's, and the next number is tried.
                if fs::remove_dir(&dir).is_ok() && fs::create_dir(&dir).is_ok() {
                    return Ok(dir);
                }
            }
            Err(e) => return Err(e),
            Ok(()) => return Ok(dir),
        }
    }
}

/// Moves the calling process into the cgroup `dir`.
pub(crate) fn join(dir: &Path) -> io::Result<()> {
    fs::write(dir.join("cgroup.procs"), "0")
}

/// Kills every process in `dir` (Linux 5.14); `false` when the kernel has no `cgroup.kill`.
pub(crate) fn kill(dir: &Path) -> bool {
    fs::write(dir.join("cgroup.kill"), "1").is_ok()
}

/// Whether the OOM killer acted in `dir` (its `memory.events`).
pub(crate) fn oom_killed(dir: &Path) -> bool {
    let events = fs::read_to_string(dir.join("memory.events")).unwrap_or_default();
    events.lines().any(|l| {
        l.strip_prefix("oom_kill ")
            .or_else(|| l.strip_prefix("oom_group_kill "))
            .and_then(|n| n.trim().parse::<u64>().ok())
            .is_some_and(|n| n > 0)
    })
}

/// Removes the (emptied) cgroup `dir`.
pub(crate) fn remove(dir: &Path) -> io::Result<()> {
    fs::remove_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 1 0:21 / /proc rw,nosuid shared:12 - proc proc rw
30 25 0:26 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
31 25 0:27 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn the_cgroup_v2_mount_and_path_are_found_on_hybrid_systems() {
        assert_eq!(
            mount_point(MOUNTINFO),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        assert_eq!(mount_point("22 1 0:21 / /proc rw - proc proc rw\n"), None);
        let with_space = "31 25 0:27 / /mnt/c\\040g rw - cgroup2 cgroup2 rw\n";
        assert_eq!(mount_point(with_space), Some(PathBuf::from("/mnt/c g")));
        let text = "4:memory:/x\n0::/user.slice/user-1000.slice/app.scope\n";
        assert_eq!(
            own_path(text),
            Some("/user.slice/user-1000.slice/app.scope")
        );
        assert_eq!(own_path("4:memory:/x\n"), None);
    }

    /// A fake system root: mountinfo, /proc/self/cgroup, and a cgroup folder whose files are
    /// plain files (so what is written can be read back).
    fn fake(own: &str, controllers: &str) -> (tempfile::TempDir, PathBuf) {
        let root = tempfile::tempdir().unwrap();
        fs::create_dir_all(root.path().join("proc/self")).unwrap();
        fs::write(
            root.path().join("proc/self/mountinfo"),
            "31 25 0:27 / /cg rw - cgroup2 cgroup2 rw\n",
        )
        .unwrap();
        fs::write(root.path().join("proc/self/cgroup"), format!("0::{own}\n")).unwrap();
        let dir = root.path().join("cg").join(own.trim_start_matches('/'));
        fs::create_dir_all(&dir).unwrap();
        for f in ["cgroup.procs", "cgroup.subtree_control"] {
            fs::write(dir.join(f), "").unwrap();
        }
        fs::write(dir.join("cgroup.controllers"), controllers).unwrap();
        (root, dir)
    }

    #[test]
    fn a_namespace_root_is_ours_and_a_cgroup_not_marked_delegated_is_not() {
        let (root, dir) = fake("/", "cpu memory pids");
        let base = probe_at(root.path()).unwrap();
        assert_eq!(
            base,
            Base {
                dir,
                memory: true,
                pids: true
            }
        );
        let (root, _) = fake("/user.slice/app.scope", "memory pids");
        let e = probe_at(root.path()).unwrap_err();
        assert!(e.contains("is not delegated"), "{e}");
        let (root, _) = fake("/", "hugetlb");
        let base = probe_at(root.path()).unwrap();
        assert!(!base.memory && !base.pids);
    }

    #[test]
    fn a_worker_cgroup_gets_the_limits_its_controllers_allow() {
        let (_root, dir) = fake("/", "memory pids");
        let base = Base {
            dir: dir.clone(),
            memory: true,
            pids: true,
        };
        let worker = create(&base, Some(64 << 20), Some(100)).unwrap();
        assert!(worker.starts_with(&dir));
        let read = |f: &str| fs::read_to_string(worker.join(f)).unwrap();
        assert_eq!(read("memory.max"), (64u64 << 20).to_string());
        assert_eq!(read("memory.oom.group"), "1");
        assert_eq!(read("memory.swap.max"), "0");
        assert_eq!(read("pids.max"), "100");

        let no_pids = Base {
            pids: false,
            ..base
        };
        let worker = create(&no_pids, Some(64 << 20), Some(100)).unwrap();
        assert!(!worker.join("pids.max").exists());
        fs::write(worker.join("memory.events"), "low 0\noom 2\noom_kill 1\n").unwrap();
        assert!(oom_killed(&worker));
        fs::write(worker.join("memory.events"), "oom 0\noom_kill 0\n").unwrap();
        assert!(!oom_killed(&worker));
    }

    /// A host whose pid an earlier, killed host had leaves that host's empty cgroups behind
    /// and must still start workers; a cgroup still in use is never taken over.
    #[test]
    fn leftovers_of_an_earlier_host_of_the_same_pid_are_reused_only_when_empty() {
        let root = tempfile::tempdir().unwrap();
        let base = Base {
            dir: root.path().into(),
            memory: false,
            pids: false,
        };
        let name = |n: u64| {
            root.path()
                .join(format!("toolhost-{}-worker-{n}", std::process::id()))
        };
        // Every number this test can reach is taken by a busy cgroup (a plain folder with a
        // file in it cannot be removed, as a cgroup with a process cannot).
        for n in 1..=2000 {
            fs::create_dir(name(n)).unwrap();
            fs::write(name(n).join("cgroup.procs"), "1").unwrap();
        }
        let err = fresh_dir(&base).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        for n in 1..=2000 {
            assert!(name(n).join("cgroup.procs").exists(), "{n} was taken over");
            fs::remove_file(name(n).join("cgroup.procs")).unwrap();
        }
        // Now they are empty leftovers: one is removed and made again.
        let dir = fresh_dir(&base).unwrap();
        assert!(dir.is_dir() && dir.starts_with(root.path()));
    }
}
