//! Bounding a worker: its memory and its processes (`[plugin.NAME]` `memory`, `processes`),
//! and its whole process tree ended with it.
//!
//! - **cgroup v2** where the host's cgroup is delegated to the user (`cgroup.rs`): a child
//!   cgroup per worker, `memory.max` (no swap, the whole group OOM-killed together) and
//!   `pids.max` when those controllers are available, `cgroup.kill` at the end.
//! - **rlimits** otherwise: `RLIMIT_DATA` bounds each process's private writable memory
//!   (heap, anonymous mappings, thread stacks; not shared mappings). `RLIMIT_AS` would also
//!   count address space merely reserved (allocator arenas, guard pages) and fail plugins far
//!   below the limit. Processes are not bounded without cgroups: `RLIMIT_NPROC` counts every
//!   process of the user, not the worker's. A `processes` the table sets is then refused.
//! - **The keeper** (`keeper.rs`) ends the tree in both cases: a subreaper between the host
//!   and the worker, which kills whatever the worker left when it ends, however it ends.

mod cgroup;
mod keeper;

use std::{ffi::OsString, fmt, io, path::PathBuf};

pub(crate) use keeper::end;
pub use keeper::KeeperArgs;
pub use keeper::Role;

use crate::config::{show_bytes, Bound, Limits};

/// Why a worker cannot be bounded as its settings ask.
#[derive(Debug, thiserror::Error)]
pub enum LimitsError {
    #[error(
        "processes = {limit}: bounding a worker's processes needs a cgroup v2 subtree delegated \
         to this user with the pids controller, and here {why}; remove the key or set it to \
         \"unlimited\""
    )]
    Processes { limit: u64, why: String },
    #[error("memory = \"{}\": this system cannot bound a worker's memory", show_bytes(*.limit))]
    Memory { limit: u64 },
    #[error("cannot create the worker's cgroup: {0}")]
    Cgroup(#[source] io::Error),
}

/// What enforces each bound of a worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    /// The worker's cgroup (`memory.max`, `pids.max`).
    Cgroup,
    /// `RLIMIT_DATA`, per process.
    Rlimit,
    /// Nothing on this system.
    Unbounded,
}

/// How a worker with given limits is bounded on this system (`toolhost doctor` shows it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enforcement {
    /// The delegated cgroup workers go beneath, or why there is none.
    pub cgroup: Result<PathBuf, String>,
    /// The memory limit in bytes and what enforces it.
    pub memory: Option<(u64, Mechanism)>,
    /// The limit on processes and threads and what enforces it.
    pub processes: Option<(u64, Mechanism)>,
}

impl fmt::Display for Enforcement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let by = |m: Mechanism, cgroup_file: &str| match m {
            Mechanism::Cgroup => format!("cgroup {cgroup_file}"),
            Mechanism::Rlimit => "RLIMIT_DATA per process".into(),
            Mechanism::Unbounded => "not enforced here".into(),
        };
        match self.memory {
            Some((n, m)) => write!(f, "memory {} ({})", show_bytes(n), by(m, "memory.max"))?,
            None => write!(f, "memory unlimited")?,
        }
        match self.processes {
            Some((n, Mechanism::Unbounded)) => write!(
                f,
                ", processes {n} not enforced (no cgroup with the pids controller)"
            )?,
            Some((n, m)) => write!(f, ", processes {n} ({})", by(m, "pids.max"))?,
            None => write!(f, ", processes unlimited")?,
        }
        match &self.cgroup {
            Ok(_) => write!(
                f,
                "; its process tree ends with it (cgroup.kill, subreaper)"
            ),
            Err(_) => write!(f, "; its process tree ends with it (subreaper)"),
        }
    }
}

/// How `limits` would be enforced for a worker started from this process, without changing
/// anything; `Err` for a bound the table sets that cannot be.
pub fn enforcement(limits: &Limits) -> Result<Enforcement, LimitsError> {
    #[cfg(target_os = "linux")]
    let base = cgroup::probe_at(std::path::Path::new("/"));
    #[cfg(not(target_os = "linux"))]
    let base: Result<cgroup::Base, String> = Err("not Linux".into());
    decide(base.as_ref().map_err(Clone::clone), limits)
}

/// How one bound is enforced: by its cgroup controller where there is one, else by
/// `fallback`; with neither, a bound the table sets is refused (`refused`) and a default one
/// is reported as not enforced.
fn mechanism(
    bound: Option<Bound>,
    controller: bool,
    fallback: Option<Mechanism>,
    refused: impl FnOnce(u64) -> LimitsError,
) -> Result<Option<(u64, Mechanism)>, LimitsError> {
    let Some(b) = bound else { return Ok(None) };
    let by = match fallback {
        _ if controller => Mechanism::Cgroup,
        Some(fallback) => fallback,
        None if b.explicit => return Err(refused(b.value)),
        None => Mechanism::Unbounded,
    };
    Ok(Some((b.value, by)))
}

fn decide(
    base: Result<&cgroup::Base, String>,
    limits: &Limits,
) -> Result<Enforcement, LimitsError> {
    let linux = cfg!(target_os = "linux");
    let memory = mechanism(
        limits.memory,
        base.as_ref().is_ok_and(|b| b.memory),
        linux.then_some(Mechanism::Rlimit),
        |limit| LimitsError::Memory { limit },
    )?;
    let processes = mechanism(
        limits.processes,
        base.as_ref().is_ok_and(|b| b.pids),
        None,
        |limit| LimitsError::Processes {
            limit,
            why: match &base {
                Ok(base) => format!("{} has no pids controller", base.dir.display()),
                Err(why) => why.clone(),
            },
        },
    )?;
    Ok(Enforcement {
        cgroup: base.map(|b| b.dir.clone()),
        memory,
        processes,
    })
}

/// How one worker is started bounded: its cgroup (made now) and its rlimit. Dropped before
/// [`Placement::handed_over`], it removes the cgroup it made: a worker that never started
/// (refused environment, failed exec) leaves nothing behind.
pub(crate) struct Placement {
    cgroup: Option<PathBuf>,
    data_limit: Option<u64>,
}

impl Placement {
    /// Decides and prepares the bounds of a worker about to start: its cgroup where the host
    /// has a delegated one (made ready the first time), rlimits for the rest.
    pub(crate) fn new(limits: &Limits) -> Result<Placement, LimitsError> {
        #[cfg(target_os = "linux")]
        let base = cgroup::prepared();
        #[cfg(not(target_os = "linux"))]
        let base: Result<&cgroup::Base, String> = Err("not Linux".into());
        let plan = decide(base.clone(), limits)?;
        let bound = |b: Option<(u64, Mechanism)>| match b {
            Some((n, Mechanism::Cgroup)) => Some(n),
            _ => None,
        };
        let cgroup = match base {
            Ok(base) => Some(
                cgroup::create(base, bound(plan.memory), bound(plan.processes))
                    .map_err(LimitsError::Cgroup)?,
            ),
            Err(_) => None,
        };
        let data_limit = match plan.memory {
            Some((n, Mechanism::Rlimit)) => Some(n),
            _ => None,
        };
        Ok(Placement { cgroup, data_limit })
    }

    /// The worker's keeper is running and owns the cgroup now (it removes it at the end).
    pub(crate) fn handed_over(&mut self) {
        self.cgroup = None;
    }

    /// The keeper's arguments ([`KeeperArgs`]).
    pub(crate) fn args(&self) -> Vec<OsString> {
        let mut args = Vec::new();
        if let Some(dir) = &self.cgroup {
            args.extend(["--cgroup".into(), dir.into()]);
        }
        if let Some(n) = self.data_limit {
            args.extend(["--data-limit".into(), n.to_string().into()]);
        }
        args
    }
}

impl Drop for Placement {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        if let Some(dir) = &self.cgroup {
            if let Err(e) = cgroup::remove(dir) {
                tracing::debug!("cannot remove {}: {e}", dir.display());
            }
        }
    }
}

/// In the worker role, first thing: forks the worker from its keeper (see `keeper.rs`).
pub fn keep(args: &KeeperArgs) -> Role {
    keeper::keep(args.cgroup.as_deref())
}

/// In the worker, before its plugin loads: joins its cgroup and sets its rlimit. Nothing of
/// the plugin runs unbounded: an error ends the load.
pub fn apply(args: &KeeperArgs) -> Result<(), String> {
    if let Some(dir) = &args.cgroup {
        cgroup::join(dir).map_err(|e| format!("cannot join the cgroup {}: {e}", dir.display()))?;
    }
    if let Some(n) = args.data_limit {
        let limit = libc::rlimit {
            rlim_cur: n as libc::rlim_t,
            rlim_max: n as libc::rlim_t,
        };
        // SAFETY: setrlimit reads the struct; soft and hard alike, so the plugin cannot
        // raise it back.
        if unsafe { libc::setrlimit(libc::RLIMIT_DATA, &limit) } != 0 {
            return Err(format!(
                "cannot set RLIMIT_DATA: {}",
                io::Error::last_os_error()
            ));
        }
    }
    Ok(())
}

/// Whether a line of the worker's stderr says it ran out of memory: Rust's allocation
/// failure (an rlimit refused the memory), or the keeper's word that the cgroup killed it.
pub(crate) fn says_out_of_memory(line: &str) -> bool {
    (line.starts_with("memory allocation of ") && line.ends_with(" failed"))
        || line.starts_with(keeper::OOM_MARKER)
}

/// The cause of a worker's death, with its memory limit when it ran out of memory.
pub(crate) fn cause_with_memory(cause: String, out_of_memory: bool, limits: &Limits) -> String {
    match (out_of_memory, limits.memory) {
        (false, _) => cause,
        (true, Some(b)) => format!("past its memory limit of {}, {cause}", show_bytes(b.value)),
        (true, None) => format!("out of memory, {cause}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Bound, Limits};

    fn limits(memory: Option<(u64, bool)>, processes: Option<(u64, bool)>) -> Limits {
        let b = |x: Option<(u64, bool)>| x.map(|(value, explicit)| Bound { value, explicit });
        Limits {
            memory: b(memory),
            processes: b(processes),
        }
    }

    #[test]
    fn each_bound_is_enforced_by_what_the_system_offers() {
        let full = cgroup::Base {
            dir: "/sys/fs/cgroup/me".into(),
            memory: true,
            pids: true,
        };
        let l = limits(Some((64 << 20, true)), Some((100, true)));
        let e = decide(Ok(&full), &l).unwrap();
        assert_eq!(e.memory, Some((64 << 20, Mechanism::Cgroup)));
        assert_eq!(e.processes, Some((100, Mechanism::Cgroup)));
        assert_eq!(
            e.to_string(),
            "memory 64 MiB (cgroup memory.max), processes 100 (cgroup pids.max); its process \
             tree ends with it (cgroup.kill, subreaper)"
        );

        // Without the controllers: memory by rlimit; processes only if nobody asked for them.
        let bare = cgroup::Base {
            memory: false,
            pids: false,
            ..full
        };
        let e = decide(Ok(&bare), &l).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("processes = 100: bounding a worker's processes needs a cgroup v2"),
            "{e}"
        );
        assert!(e.to_string().contains("has no pids controller"), "{e}");
        let defaults = limits(Some((1 << 30, false)), Some((512, false)));
        let none: Result<&cgroup::Base, String> = Err("not delegated".into());
        let e = decide(none, &defaults).unwrap();
        assert_eq!(
            e.to_string(),
            "memory 1 GiB (RLIMIT_DATA per process), processes 512 not enforced (no cgroup with \
             the pids controller); its process tree ends with it (subreaper)"
        );
        assert_eq!(
            decide(Err("x".into()), &Limits::default())
                .unwrap()
                .to_string(),
            "memory unlimited, processes unlimited; its process tree ends with it (subreaper)"
        );
    }

    #[test]
    fn running_out_of_memory_is_recognised_and_named() {
        assert!(says_out_of_memory(
            "memory allocation of 268435456 bytes failed"
        ));
        assert!(says_out_of_memory(keeper::OOM_MARKER));
        assert!(!says_out_of_memory("allocation failed"));
        let l = limits(Some((64 << 20, true)), None);
        assert_eq!(
            cause_with_memory("SIGABRT".into(), true, &l),
            "past its memory limit of 64 MiB, SIGABRT"
        );
        assert_eq!(cause_with_memory("SIGABRT".into(), false, &l), "SIGABRT");
        assert_eq!(
            cause_with_memory("SIGKILL".into(), true, &Limits::default()),
            "out of memory, SIGKILL"
        );
    }

    /// A worker that never started (its environment refused, its exec failed) leaves no
    /// cgroup behind; one whose keeper started leaves it to the keeper.
    #[test]
    fn a_placement_removes_its_cgroup_unless_a_keeper_took_it() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("worker");
        std::fs::create_dir(&dir).unwrap();
        drop(Placement {
            cgroup: Some(dir.clone()),
            data_limit: None,
        });
        assert!(!dir.exists());
        std::fs::create_dir(&dir).unwrap();
        let mut kept = Placement {
            cgroup: Some(dir.clone()),
            data_limit: None,
        };
        kept.handed_over();
        drop(kept);
        assert!(dir.exists());
    }
}
