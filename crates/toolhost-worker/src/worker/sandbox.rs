//! Confining a worker (Linux), the host's side: the settings, what the kernel supports (the
//! probe doctor reports) and the errors. The worker child applies it
//! (toolhost-worker-child's `sandbox`, the only crate linking landlock) before the plugin
//! library is opened, so no plugin code ever runs unconfined. A sandbox the kernel cannot
//! enforce is refused, never applied in part.

use std::path::PathBuf;

/// The settings, configuration data; applied by the worker child.
pub use crate::config::Sandbox;

/// Why a sandbox cannot be applied.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("this system cannot enforce a sandbox: {0}")]
    Unsupported(String),
    #[error("sandbox path {path}: {reason}")]
    Path { path: PathBuf, reason: String },
    #[error("cannot apply the sandbox: {0}")]
    Apply(String),
}

/// What the running kernel offers for sandboxes (`toolhost doctor` reports it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SandboxSupport {
    /// The Landlock ABI version, `None` when Landlock is absent or disabled.
    pub landlock_abi: Option<i32>,
    /// Whether seccomp filters can be installed.
    pub seccomp: bool,
}

/// Landlock ABI needed: 4 is the first with TCP rules, 6 the first that scopes signals and
/// abstract unix sockets (without it a plugin could kill or stop the host, or reach any
/// program listening on an abstract socket).
pub const LANDLOCK_ABI_NEEDED: i32 = 6;

impl SandboxSupport {
    /// Whether every part of a sandbox can be enforced here.
    pub fn enforceable(&self) -> Result<(), SandboxError> {
        match self.landlock_abi {
            None => Err(SandboxError::Unsupported(
                "Landlock is not available in this kernel (Linux 6.12 or later with Landlock \
                 enabled is needed)"
                    .into(),
            )),
            Some(v) if v < LANDLOCK_ABI_NEEDED => Err(SandboxError::Unsupported(format!(
                "the kernel's Landlock ABI is {v}, at least {LANDLOCK_ABI_NEEDED} is needed \
                 (Linux 6.12) to keep a plugin from signalling the host and from reaching \
                 abstract unix sockets"
            ))),
            Some(_) if !self.seccomp => Err(SandboxError::Unsupported(
                "seccomp filters are not available".into(),
            )),
            Some(_) => Ok(()),
        }
    }

    /// Whether Landlock keeps a sandboxed plugin from signalling processes outside its sandbox
    /// and from connecting to abstract unix sockets made outside it (ABI 6).
    pub fn scopes(&self) -> bool {
        self.landlock_abi.is_some_and(|v| v >= 6)
    }

    /// Whether Landlock can hold connections to socket files to the `unix` paths (ABI 9).
    pub fn unix_paths(&self) -> bool {
        self.landlock_abi.is_some_and(|v| v >= 9)
    }
}

/// Asks the kernel what it supports (no side effects).
pub fn probe() -> SandboxSupport {
    #[cfg(target_os = "linux")]
    {
        const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
        // SAFETY: landlock_create_ruleset with a null attribute, size 0 and the VERSION flag
        // only returns the ABI version (or -1); it creates nothing.
        let v = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<libc::c_void>(),
                0usize,
                LANDLOCK_CREATE_RULESET_VERSION,
            )
        };
        // SAFETY: PR_GET_SECCOMP only reads this process's seccomp mode.
        let mode = unsafe { libc::prctl(libc::PR_GET_SECCOMP) };
        SandboxSupport {
            landlock_abi: (v > 0).then_some(v as i32),
            // 2 (filter mode) still allows stacking more filters; 1 (strict) would have
            // killed us for calling prctl.
            seccomp: mode == 0 || mode == 2,
        }
    }
    #[cfg(not(target_os = "linux"))]
    SandboxSupport {
        landlock_abi: None,
        seccomp: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn support_is_judged_from_the_probe() {
        let support = |landlock_abi| SandboxSupport {
            landlock_abi,
            seccomp: true,
        };
        for (abi, expected) in [
            (None, "Landlock is not available"),
            (Some(3), "ABI is 3"),
            // TCP rules but no scopes: the plugin could still signal the host.
            (Some(5), "ABI is 5"),
        ] {
            let e = support(abi).enforceable().unwrap_err().to_string();
            assert!(e.contains(expected), "{abi:?}: {e}");
            assert!(!support(abi).scopes());
        }
        assert!(support(Some(6)).enforceable().is_ok() && support(Some(6)).scopes());
        assert!(support(Some(7)).enforceable().is_ok() && !support(Some(7)).unix_paths());
        assert!(support(Some(9)).unix_paths());
    }
}
