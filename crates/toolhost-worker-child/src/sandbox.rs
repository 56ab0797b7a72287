//! Applying a plugin's sandbox to the worker child itself: Landlock for files, TCP ports and
//! scopes, seccomp for the socket kinds Landlock does not cover, the capabilities dropped.
//! Only this crate links `landlock`; the host's side (toolhost-worker) keeps the settings'
//! type and the probe doctor reports.

use std::path::Path;

use toolhost_worker::worker::sandbox::{probe, Sandbox, SandboxError};

/// Read-only places every plugin needs: the system's libraries, the dynamic loader's and the
/// C library's configuration (locale, time zones, TLS certificates, name resolution).
const SYSTEM_READ: &[&str] = &[
    "/lib",
    "/lib32",
    "/lib64",
    "/usr",
    "/etc",
    "/opt",
    "/proc",
    "/sys/devices/system/cpu",
];

/// Devices a plugin may read and write.
const SYSTEM_DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/urandom", "/dev/random"];

// Free functions rather than methods: `Sandbox` is the settings' type (toolhost-base's
// `config`), applying it is the worker child's business and needs landlock.
/// Restricts this process (and its future threads and children) to the sandbox. `library`
/// is the plugin file as the worker opens it, which stays readable. Call it before any
/// other thread exists: Landlock applies to the calling thread and those it starts.
#[cfg(target_os = "linux")]
pub fn apply(sandbox: &Sandbox, library: &Path) -> Result<(), SandboxError> {
    use landlock::RulesetStatus;
    let support = probe();
    support.enforceable()?;
    drop_capabilities()?;
    // Connecting to socket files, where the kernel can govern it (socket() itself is
    // seccomp's when `unix` is empty).
    let resolve_unix = !sandbox.net && support.unix_paths();
    if !resolve_unix && !sandbox.net && !sandbox.unix.is_empty() {
        tracing::warn!(
            "sandbox: the kernel's Landlock ABI is {}, 9 (Linux 7.1) is needed to hold \
             connections to the `unix` paths: this plugin may connect to any socket file \
             it can name",
            support.landlock_abi.unwrap_or_default()
        );
    }
    let mut created = ruleset(sandbox, resolve_unix)?;
    for (path, access, required) in rules(sandbox, library, resolve_unix)? {
        created = add_rule(created, path, access, required)?;
    }
    let status = created.restrict_self().map_err(apply_err)?;
    if status.ruleset != RulesetStatus::FullyEnforced {
        return Err(SandboxError::Unsupported(format!(
            "Landlock enforced the sandbox only partly ({:?})",
            status.ruleset
        )));
    }
    if !sandbox.net {
        deny_other_sockets(!sandbox.unix.is_empty())?;
    }
    Ok(())
}

/// The Landlock ruleset: every filesystem right handled, every scope (signals and abstract
/// unix sockets reach only processes in this sandbox: not the host, whatever `net` says),
/// and TCP handled unless `net`.
#[cfg(target_os = "linux")]
fn ruleset(
    sandbox: &Sandbox,
    resolve_unix: bool,
) -> Result<landlock::RulesetCreated, SandboxError> {
    use landlock::{
        Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr, Scope,
    };
    let mut ruleset = Ruleset::default()
        // Nothing is silently left out: a feature the kernel lacks is an error.
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI))
        .map_err(apply_err)?
        .scope(Scope::from_all(ABI))
        .map_err(apply_err)?;
    if !sandbox.net {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(ABI))
            .map_err(apply_err)?;
    }
    if resolve_unix {
        ruleset = ruleset
            .handle_access(AccessFs::ResolveUnix)
            .map_err(apply_err)?;
    }
    ruleset.create().map_err(apply_err)
}

/// What the plugin may reach, as (path, access, must exist).
#[cfg(target_os = "linux")]
fn rules<'a>(
    sandbox: &'a Sandbox,
    library: &'a Path,
    resolve_unix: bool,
) -> Result<Vec<Rule<'a>>, SandboxError> {
    use landlock::{Access, AccessFs};
    let read = AccessFs::from_read(ABI);
    // Write paths give no right to connect to sockets beneath them: only `unix` does.
    let everything = AccessFs::from_all(ABI);
    let mut rules: Vec<Rule<'a>> = Vec::new();
    rules.extend(SYSTEM_READ.iter().map(|p| (Path::new(p), read, false)));
    rules.extend(
        SYSTEM_DEVICES
            .iter()
            .map(|p| (Path::new(p), read | AccessFs::WriteFile, false)),
    );
    rules.push((library, read, true));
    rules.extend(sandbox.read.iter().map(|p| (p.as_path(), read, true)));
    rules.extend(
        sandbox
            .write
            .iter()
            .map(|p| (p.as_path(), everything, true)),
    );
    if resolve_unix {
        rules.extend(
            sandbox
                .unix
                .iter()
                .map(|p| (p.as_path(), AccessFs::ResolveUnix.into(), true)),
        );
    } else if let Some(missing) = sandbox.unix.iter().find(|p| p.symlink_metadata().is_err()) {
        // The same rule as where Landlock checks them.
        return Err(SandboxError::Path {
            path: missing.clone(),
            reason: "no such file or folder".into(),
        });
    }
    Ok(rules)
}

#[cfg(not(target_os = "linux"))]
pub fn apply(sandbox: &Sandbox, _library: &Path) -> Result<(), SandboxError> {
    Err(SandboxError::Unsupported(
        "sandboxes need Linux (Landlock)".into(),
    ))
}

/// A path the plugin may reach: (path, access, must exist).
#[cfg(target_os = "linux")]
type Rule<'a> = (&'a Path, landlock::BitFlags<landlock::AccessFs>, bool);

/// The Landlock ABI every kernel that passes [`SandboxSupport::enforceable`] has.
#[cfg(target_os = "linux")]
const ABI: landlock::ABI = landlock::ABI::V6;

#[cfg(target_os = "linux")]
fn apply_err(e: landlock::RulesetError) -> SandboxError {
    SandboxError::Apply(e.to_string())
}

/// Adds the rule giving `access` beneath `path` (skipped when it does not exist and is not
/// `required`).
#[cfg(target_os = "linux")]
fn add_rule(
    created: landlock::RulesetCreated,
    path: &Path,
    access: landlock::BitFlags<landlock::AccessFs>,
    required: bool,
) -> Result<landlock::RulesetCreated, SandboxError> {
    use landlock::{AccessFs, PathBeneath, PathFd, RulesetCreatedAttr, ABI};
    let fd = match PathFd::new(path) {
        Ok(fd) => fd,
        Err(_) if !required => return Ok(created),
        Err(e) => {
            return Err(SandboxError::Path {
                path: path.to_path_buf(),
                reason: e.to_string(),
            })
        }
    };
    // File rights only on a file: directory rights on it are an error. (ABI 9's file rights:
    // ResolveUnix is one, and handled only where the kernel has it.)
    let access = if path.is_dir() {
        access
    } else {
        access & AccessFs::from_file(ABI::V9)
    };
    created
        .add_rule(PathBeneath::new(fd, access))
        .map_err(|e| SandboxError::Path {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })
}

/// Gives up every capability. A worker of a toolhost run as root would otherwise keep them all,
/// and some reach past Landlock (reading the host's `/proc/PID/environ` and `maps`, rebooting,
/// loading kernel modules). `no_new_privs` (which Landlock sets next) keeps an exec from
/// granting them again. Capabilities are per thread: call it before any other thread exists.
#[cfg(target_os = "linux")]
fn drop_capabilities() -> Result<(), SandboxError> {
    let failed = |what: &str| {
        SandboxError::Apply(format!(
            "cannot drop capabilities ({what}): {}",
            std::io::Error::last_os_error()
        ))
    };
    // The bounding set: lowering it needs CAP_SETPCAP, and a process without it has nothing
    // there to fear (the capabilities below are the ones it could use).
    for cap in 0..64 {
        // SAFETY: PR_CAPBSET_DROP changes only this thread's bounding set.
        if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) } != 0 {
            match std::io::Error::last_os_error().raw_os_error() {
                // Past the kernel's last capability, or not ours to lower.
                Some(libc::EINVAL) | Some(libc::EPERM) => break,
                _ => return Err(failed("bounding set")),
            }
        }
    }
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    let header = Header {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let none = [Data {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: capset reads a version-3 header and two data structs, alive for the call; empty
    // sets only lower this thread's capabilities (and the ambient set with them).
    if unsafe { libc::syscall(libc::SYS_capset, &header, none.as_ptr()) } != 0 {
        return Err(failed("capset"));
    }
    Ok(())
}

/// Installs a seccomp filter that makes `socket()` fail with EACCES for everything but TCP
/// (which Landlock governs) and, when `allow_unix`, unix sockets; refuses io_uring (a way
/// around `socket()`); and kills the process for a syscall of another ABI (another
/// architecture, or x32 on x86_64), whose numbers the filter would misread. UDP, raw, netlink
/// and unix sockets are what Landlock's network rules do not see. The worker's own channel
/// was made before, by the host; `socketpair` stays allowed (it reaches nobody else).
#[cfg(target_os = "linux")]
fn deny_other_sockets(allow_unix: bool) -> Result<(), SandboxError> {
    #[cfg(target_arch = "x86_64")]
    const ARCH: u32 = 0xC000_003E; // AUDIT_ARCH_X86_64
    #[cfg(target_arch = "aarch64")]
    const ARCH: u32 = 0xC000_00B7; // AUDIT_ARCH_AARCH64
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    return Err(SandboxError::Unsupported(
        "the seccomp filter is written for x86_64 and aarch64 only".into(),
    ));

    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    {
        let prog = socket_filter(ARCH, allow_unix);
        let prog = libc::sock_fprog {
            len: prog.len() as u16,
            filter: prog.as_ptr() as *mut libc::sock_filter,
        };
        // SAFETY: `prog` points to the filter, alive for the call; the kernel copies it.
        // Landlock's `restrict_self` already set no_new_privs, which an unprivileged filter
        // requires.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0,
                &prog as *const libc::sock_fprog,
            )
        };
        if rc != 0 {
            return Err(SandboxError::Apply(format!(
                "seccomp: {}",
                std::io::Error::last_os_error()
            )));
        }
        Ok(())
    }
}

/// The classic BPF program of [`deny_other_sockets`] for audit architecture `arch`.
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
fn socket_filter(arch: u32, allow_unix: bool) -> Vec<libc::sock_filter> {
    use libc::sock_filter;
    const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    const AND_K: u16 = (libc::BPF_ALU | libc::BPF_AND | libc::BPF_K) as u16;
    const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
    // struct seccomp_data: nr, arch, instruction_pointer, args[6] (the low halves, on these
    // little-endian architectures).
    const NR: u32 = 0;
    const ARCH_OFF: u32 = 4;
    const ARG0: u32 = 16;
    const ARG1: u32 = 24;
    const ARG2: u32 = 32;
    let allow = libc::SECCOMP_RET_ALLOW;
    let deny = libc::SECCOMP_RET_ERRNO | (libc::EACCES as u32 & libc::SECCOMP_RET_DATA);
    let kill = libc::SECCOMP_RET_KILL_PROCESS;
    let st = |code: u16, k: u32| sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    };
    let jeq = |k: u32, jt: u8, jf: u8| sock_filter {
        code: JEQ_K,
        jt,
        jf,
        k,
    };
    let mut filter = vec![
        // Another architecture: the syscall numbers below would mean something else.
        st(LD_W_ABS, ARCH_OFF),
        jeq(arch, 1, 0),
        st(RET_K, kill),
        st(LD_W_ABS, NR),
    ];
    // x32 syscalls share x86_64's audit architecture, their numbers offset by this bit.
    #[cfg(target_arch = "x86_64")]
    {
        const X32_SYSCALL_BIT: u32 = 0x4000_0000;
        const JSET_K: u16 = (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16;
        filter.extend([
            sock_filter {
                code: JSET_K,
                jt: 0,
                jf: 1,
                k: X32_SYSCALL_BIT,
            },
            st(RET_K, kill),
        ]);
    }
    filter.extend([
        jeq(libc::SYS_io_uring_setup as u32, 0, 1),
        st(RET_K, deny),
        jeq(libc::SYS_socket as u32, 1, 0),
        st(RET_K, allow),
        // socket(domain, type, protocol)
        st(LD_W_ABS, ARG0),
        jeq(libc::AF_UNIX as u32, 0, 1),
        st(RET_K, if allow_unix { allow } else { deny }),
        jeq(libc::AF_INET as u32, 1, 0),
        jeq(libc::AF_INET6 as u32, 0, 7),
        // An internet socket: only TCP, which Landlock governs.
        st(LD_W_ABS, ARG1),
        st(AND_K, 0xf),
        jeq(libc::SOCK_STREAM as u32, 0, 4),
        st(LD_W_ABS, ARG2),
        jeq(0, 1, 0),
        jeq(libc::IPPROTO_TCP as u32, 0, 1),
        st(RET_K, allow),
        st(RET_K, deny),
    ]);
    filter
}
