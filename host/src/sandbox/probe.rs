//! Whether this kernel can enforce a Landlock sandbox, and with which ABI version.
//!
//! Landlock (Linux 5.13+) lets an unprivileged process restrict its own file system and
//! network access. Each kernel release may add access rights; the ABI version says which.

/// Why Landlock cannot be used here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LandlockUnavailable {
    /// The kernel has no such system call (older than 5.13, or built without Landlock).
    #[error("this kernel has no Landlock (Linux 5.13 or later built with CONFIG_SECURITY_LANDLOCK is needed)")]
    NotInKernel,
    /// Built in but not enabled at boot.
    #[error("Landlock is built into this kernel but not enabled (add `landlock` to the `lsm=` boot parameter)")]
    Disabled,
    /// A seccomp filter (a container runtime's, typically) refuses the system call.
    #[error("the landlock_create_ruleset system call is blocked (a container's seccomp profile?)")]
    Blocked,
    /// Any other failure of the probe, with its errno.
    #[error("the landlock_create_ruleset system call failed with errno {0}")]
    Other(i32),
    /// Not Linux.
    #[error("Landlock exists only on Linux")]
    NotLinux,
}

/// `LANDLOCK_CREATE_RULESET_VERSION` from `<linux/landlock.h>`: asks for the ABI version
/// instead of creating a ruleset.
#[cfg(target_os = "linux")]
const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1 << 0;

/// The highest Landlock ABI version this kernel supports (1 or more).
#[cfg(target_os = "linux")]
pub fn landlock_abi() -> Result<u32, LandlockUnavailable> {
    // SAFETY: with a null attribute pointer, size 0 and the VERSION flag the kernel reads no
    // memory of ours and creates nothing; it returns the ABI version or -1 with errno set.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if ret >= 1 {
        return u32::try_from(ret).map_err(|_| LandlockUnavailable::Other(0));
    }
    let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
    Err(classify(errno))
}

/// Not Linux: no Landlock.
#[cfg(not(target_os = "linux"))]
pub fn landlock_abi() -> Result<u32, LandlockUnavailable> {
    Err(LandlockUnavailable::NotLinux)
}

#[cfg(target_os = "linux")]
fn classify(errno: i32) -> LandlockUnavailable {
    match errno {
        libc::ENOSYS => LandlockUnavailable::NotInKernel,
        libc::EOPNOTSUPP => LandlockUnavailable::Disabled,
        libc::EPERM => LandlockUnavailable::Blocked,
        e => LandlockUnavailable::Other(e),
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn errno_meanings() {
        assert_eq!(classify(libc::ENOSYS), LandlockUnavailable::NotInKernel);
        assert_eq!(classify(libc::EOPNOTSUPP), LandlockUnavailable::Disabled);
        assert_eq!(classify(libc::EPERM), LandlockUnavailable::Blocked);
        assert_eq!(
            classify(libc::EINVAL),
            LandlockUnavailable::Other(libc::EINVAL)
        );
    }

    /// The probe's answer agrees with what the kernel does when asked for a real ruleset.
    #[test]
    fn probe_agrees_with_creating_a_ruleset() {
        let probed = landlock_abi();
        // struct landlock_ruleset_attr { __u64 handled_access_fs; } with ABI v1's
        // LANDLOCK_ACCESS_FS_EXECUTE only.
        let attr: u64 = 1;
        // SAFETY: `attr` is a valid landlock_ruleset_attr of the size passed, alive for the
        // call; on success the returned descriptor is ours and closed below.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                &attr as *const u64,
                std::mem::size_of::<u64>(),
                0 as libc::c_uint,
            )
        };
        if fd >= 0 {
            // SAFETY: a descriptor the kernel just gave us, closed once.
            unsafe { libc::close(fd as libc::c_int) };
            let abi = probed.expect("a ruleset was created, so the probe should see Landlock");
            assert!(abi >= 1);
        } else {
            let errno = std::io::Error::last_os_error().raw_os_error().unwrap();
            assert_eq!(probed, Err(classify(errno)));
        }
        assert_eq!(landlock_abi(), probed, "the answer is stable");
    }
}
