//! How workers are bounded here: the system's means (a delegated cgroup v2, or rlimits), and
//! for each plugin in a worker, what bounds it.

use serde_json::json;

use super::Check;
use crate::{
    config::{Limits, PluginSettings, SANDBOX_MEMORY, SANDBOX_PROCESSES},
    worker::{enforcement, Mechanism, PluginWorkerSettings},
};

const DELEGATE: &str = "run toolhost in a cgroup delegated to you: systemd-run --user --scope \
                        -p Delegate=yes toolhost chat";

/// What this system bounds a worker's memory, processes and process tree with.
pub(super) fn check() -> Check {
    let defaults = Limits::resolve(None, None, true);
    let e = match enforcement(&defaults) {
        Ok(e) => e,
        Err(e) => return Check::fail("limits", e.to_string(), DELEGATE),
    };
    let memory = matches!(e.memory, Some((_, Mechanism::Cgroup)));
    let processes = matches!(e.processes, Some((_, Mechanism::Cgroup)));
    let data = json!({
        "cgroup": e.cgroup.as_ref().ok(),
        "memory": if memory { "cgroup" } else { "rlimit" },
        "processes": if processes { "cgroup" } else { "none" },
    });
    let means = match (&e.cgroup, memory, processes) {
        (Ok(dir), true, true) => format!(
            "cgroup v2 delegated ({}): a worker's memory and processes are bounded by a cgroup \
             of its own",
            dir.display()
        ),
        (Ok(dir), _, _) => format!(
            "cgroup v2 delegated ({}) without {}: a worker's memory is bounded by {}; its \
             processes {}",
            dir.display(),
            match (memory, processes) {
                (false, false) => "the memory and pids controllers",
                (false, true) => "the memory controller",
                _ => "the pids controller",
            },
            if memory {
                "its cgroup"
            } else {
                "RLIMIT_DATA per process"
            },
            if processes {
                "by its cgroup"
            } else {
                "are not bounded"
            },
        ),
        (Err(why), _, _) => format!(
            "no cgroup for workers ({why}): a worker's memory is bounded by RLIMIT_DATA per \
             process, its processes and threads are not bounded"
        ),
    };
    Check::ok(
        "limits",
        format!(
            "{means}; its process tree ends with it; a sandboxed plugin gets {} and {} \
             processes unless its table says otherwise",
            crate::config::show_bytes(SANDBOX_MEMORY),
            SANDBOX_PROCESSES
        ),
    )
    .with_data(data)
}

/// The bounds of a plugin whose settings put it in a worker: `Err` (message, fix) when one
/// its table sets cannot be enforced here (its load is refused), else what bounds it, for
/// its check's line (`None` for a plugin in process).
pub(super) fn plugin(settings: &PluginSettings) -> Result<Option<String>, (String, String)> {
    let worker = PluginWorkerSettings::from_config(settings);
    if !(worker.isolate || worker.sandbox.is_some() || !worker.limits.is_empty()) {
        return Ok(None);
    }
    match enforcement(&worker.limits) {
        Ok(e) => Ok(Some(format!("in its worker: {e}"))),
        Err(e) => Err((
            e.to_string(),
            format!("{DELEGATE}; or remove `processes` from its table"),
        )),
    }
}
