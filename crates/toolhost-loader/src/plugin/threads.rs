//! Which threads may still run a library's code: asked before a plugin library is unmapped,
//! so that a thread the plugin started (a raw `pthread_create`, as C libraries such as OpenMP
//! do, or a `std::thread`) never finds its code gone (issue #14 item 1).
//!
//! The rule: a thread may run the library's code if it was started at a function inside the
//! library (its start routine, as glibc's thread descriptor records it: a raw pthread's
//! function, or the library's own copy of `std::thread`'s entry) or is executing inside it
//! right now (the program counter saved when it was interrupted). Each thread is asked by a
//! signal whose async-signal-safe handler reads both for itself. A thread that cannot be
//! asked (it blocks the signal or does not answer in time) counts as possibly running it.
//! Not covered: a thread started by a *dependency* of the plugin (say libgomp's workers) on
//! the dependency's own function; those libraries are shared and usually stay loaded.
//!
//! The offset of the start routine in glibc's (private) thread descriptor is found once, by
//! starting a thread with a known function and argument and looking for that pair in its
//! descriptor; if it is not found, the check is off (and says so in the debug log).

use std::ops::Range;

/// A thread that may still run a library's code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Runner {
    pub tid: i32,
    /// Its name (`/proc/self/task/<tid>/comm`).
    pub name: String,
    /// Why it counts: "runs code of the library" or why it could not be asked.
    pub why: &'static str,
}

impl std::fmt::Display for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "thread {} ({:?}) {}", self.tid, self.name, self.why)
    }
}

/// The address range the file at `path` is mapped at in this process (Linux), if it is.
pub fn mapped_range(path: &std::path::Path) -> Option<Range<usize>> {
    #[cfg(target_os = "linux")]
    {
        let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
        let needle = path.to_string_lossy();
        let mut range: Option<Range<usize>> = None;
        for line in maps.lines() {
            let Some((head, p)) = line.split_once('/') else {
                continue;
            };
            let p = format!("/{p}");
            if p != *needle && p.strip_suffix(" (deleted)") != Some(&*needle) {
                continue;
            }
            let addrs = head.split_whitespace().next()?;
            let (lo, hi) = addrs.split_once('-')?;
            let (lo, hi) = (
                usize::from_str_radix(lo, 16).ok()?,
                usize::from_str_radix(hi, 16).ok()?,
            );
            range = Some(match range {
                None => lo..hi,
                Some(r) => r.start.min(lo)..r.end.max(hi),
            });
        }
        range
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = path;
        None
    }
}

/// The end of the mapping holding `addr` (Linux).
#[cfg(target_os = "linux")]
fn mapping_end(addr: usize) -> Option<usize> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines().find_map(|l| {
        let (lo, hi) = l.split_whitespace().next()?.split_once('-')?;
        let (lo, hi) = (
            usize::from_str_radix(lo, 16).ok()?,
            usize::from_str_radix(hi, 16).ok()?,
        );
        (lo..hi).contains(&addr).then_some(hi)
    })
}

/// The threads other than the caller that may run code in `range` (see the module docs).
/// `None` when this platform or process gives no way to tell.
pub fn runners(range: Range<usize>) -> Option<Vec<Runner>> {
    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    return linux::runners(range);
    #[cfg(not(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    )))]
    {
        let _ = range;
        None
    }
}

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod linux {
    use std::{
        ops::Range,
        sync::{
            atomic::{AtomicI32, AtomicU8, AtomicUsize, Ordering::SeqCst},
            Mutex, OnceLock,
        },
        time::{Duration, Instant},
    };

    use super::Runner;

    // One probe at a time: the request and the reply live in these statics, which is all an
    // async-signal-safe handler may touch.
    static PROBE: Mutex<()> = Mutex::new(());
    static REQ_TID: AtomicI32 = AtomicI32::new(0);
    static REQ_LO: AtomicUsize = AtomicUsize::new(0);
    static REQ_HI: AtomicUsize = AtomicUsize::new(0);
    static REPLY: AtomicU8 = AtomicU8::new(NONE);
    const NONE: u8 = 0;
    const CLEAN: u8 = 1;
    const FOUND: u8 = 2;
    /// How long a thread that blocks the probe signal gets to answer (it may unblock it).
    const ANSWER_WITHIN: Duration = Duration::from_millis(500);
    /// How long a thread that does not block it gets: the signal is pending, the thread only
    /// has to be scheduled (on a loaded machine that can take a while).
    const SCHEDULED_WITHIN: Duration = Duration::from_secs(10);

    /// Whether thread `tid` blocks signal `sig` (from `/proc`; unknown counts as blocked).
    fn blocks(tid: i32, sig: libc::c_int) -> bool {
        let Ok(status) = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")) else {
            return true;
        };
        status
            .lines()
            .find_map(|l| l.strip_prefix("SigBlk:"))
            .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
            .is_none_or(|mask| mask & (1u64 << (sig - 1)) != 0)
    }

    fn gettid() -> i32 {
        // SAFETY: gettid has no preconditions and cannot fail.
        unsafe { libc::syscall(libc::SYS_gettid) as i32 }
    }

    /// The interrupted program counter saved in the signal frame.
    ///
    /// # Safety
    /// `ctx` is the `ucontext_t` the kernel passed to an `SA_SIGINFO` handler.
    #[cfg(target_arch = "x86_64")]
    unsafe fn interrupted_pc(ctx: *mut libc::c_void) -> usize {
        let uc = &*(ctx as *const libc::ucontext_t);
        uc.uc_mcontext.gregs[libc::REG_RIP as usize] as usize
    }

    /// See the x86_64 version.
    #[cfg(target_arch = "aarch64")]
    unsafe fn interrupted_pc(ctx: *mut libc::c_void) -> usize {
        let uc = &*(ctx as *const libc::ucontext_t);
        uc.uc_mcontext.pc as usize
    }

    /// Offset of `start_routine` (followed by `arg`) in glibc's `struct pthread`.
    static START_OFFSET: AtomicUsize = AtomicUsize::new(usize::MAX);

    /// How far into the descriptor the calibration looks (glibc's is about 2.3 KiB).
    const DESCRIPTOR_SEARCH: usize = 4096;

    extern "C" fn calibrate(arg: *mut libc::c_void) -> *mut libc::c_void {
        // SAFETY: pthread_self only reads the thread pointer.
        let me = unsafe { libc::pthread_self() } as usize;
        // Stay inside the mapping holding the descriptor (the top of this thread's stack).
        let end = super::mapping_end(me).unwrap_or(me);
        let limit = end.min(me + DESCRIPTOR_SEARCH);
        let start = calibrate as *const () as usize;
        let mut off = 0;
        while me + off + 2 * std::mem::size_of::<usize>() <= limit {
            // SAFETY: [me, limit) lies inside the mapping that holds this thread's own
            // descriptor, readable for as long as the thread runs.
            let (a, b) = unsafe {
                (
                    std::ptr::read_volatile((me + off) as *const usize),
                    std::ptr::read_volatile((me + off + 8) as *const usize),
                )
            };
            if a == start && b == arg as usize {
                return (off + 1) as *mut libc::c_void;
            }
            off += std::mem::size_of::<usize>();
        }
        std::ptr::null_mut()
    }

    /// Finds [`START_OFFSET`] once; false if this libc does not look like glibc.
    fn start_offset() -> Option<usize> {
        static DONE: OnceLock<Option<usize>> = OnceLock::new();
        *DONE.get_or_init(|| {
            let mut t: libc::pthread_t = 0;
            // An argument nobody else would pass.
            let arg = 0x5eed_7001_usize as *mut libc::c_void;
            // SAFETY: `calibrate` has the signature pthread_create expects; the thread is
            // joined right after, and its result is only compared, never dereferenced.
            let found = unsafe {
                if libc::pthread_create(&mut t, std::ptr::null(), calibrate, arg) != 0 {
                    return None;
                }
                let mut out: *mut libc::c_void = std::ptr::null_mut();
                libc::pthread_join(t, &mut out);
                out as usize
            };
            let off = found.checked_sub(1)?;
            START_OFFSET.store(off, SeqCst);
            Some(off)
        })
    }

    extern "C" fn on_probe(_: libc::c_int, _: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
        // Only atomics, gettid, pthread_self and reads of this thread's own descriptor and
        // signal frame: all async-signal-safe.
        if gettid() != REQ_TID.load(SeqCst) {
            return;
        }
        let range = REQ_LO.load(SeqCst)..REQ_HI.load(SeqCst);
        // SAFETY: this is an SA_SIGINFO handler: `ctx` is the kernel's ucontext_t.
        let pc = unsafe { interrupted_pc(ctx) };
        let off = START_OFFSET.load(SeqCst);
        // SAFETY: pthread_self points to this thread's glibc descriptor, and `off` was found
        // inside such a descriptor by `start_offset` (set before any probe is sent).
        let start = unsafe {
            std::ptr::read_volatile((libc::pthread_self() as usize + off) as *const usize)
        };
        let found = range.contains(&pc) || range.contains(&start);
        REPLY.store(if found { FOUND } else { CLEAN }, SeqCst);
    }

    /// The signal probes use, once its handler is installed; `None` if it is taken.
    fn probe_signal() -> Option<libc::c_int> {
        static SIGNAL: OnceLock<Option<libc::c_int>> = OnceLock::new();
        *SIGNAL.get_or_init(|| {
            let sig = libc::SIGRTMAX() - 5;
            // SAFETY: sigaction with valid pointers; the previous disposition is read first so
            // a signal someone else uses is left alone. SA_RESTART keeps interrupted system
            // calls going; the handler is async-signal-safe (see `on_probe`).
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, std::ptr::null(), &mut old) != 0
                    || old.sa_sigaction != libc::SIG_DFL
                {
                    tracing::debug!(
                        "signal {sig} is in use: cannot tell which threads run a plugin"
                    );
                    return None;
                }
                let mut act: libc::sigaction = std::mem::zeroed();
                act.sa_sigaction = on_probe as *const () as usize;
                act.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
                libc::sigemptyset(&mut act.sa_mask);
                if libc::sigaction(sig, &act, std::ptr::null_mut()) != 0 {
                    return None;
                }
            }
            Some(sig)
        })
    }

    fn name_of(tid: i32) -> String {
        std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
            .map(|s| s.trim_end().to_string())
            .unwrap_or_default()
    }

    pub(super) fn runners(range: Range<usize>) -> Option<Vec<Runner>> {
        if start_offset().is_none() {
            tracing::debug!("cannot find glibc's thread start routines: threads are not checked");
            return None;
        }
        let sig = probe_signal()?;
        let _one = crate::sync::lock(&PROBE);
        let me = gettid();
        // SAFETY: getpid has no preconditions.
        let pid = unsafe { libc::getpid() };
        let tids: Vec<i32> = std::fs::read_dir("/proc/self/task")
            .ok()?
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .filter(|&t| t != me)
            .collect();
        REQ_LO.store(range.start, SeqCst);
        REQ_HI.store(range.end, SeqCst);
        let mut out = Vec::new();
        for tid in tids {
            REPLY.store(NONE, SeqCst);
            REQ_TID.store(tid, SeqCst);
            // SAFETY: tgkill with this process's id; at worst the thread is gone (ESRCH).
            let rc = unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, sig) };
            if rc != 0 {
                continue;
            }
            let asked = Instant::now();
            let reply = loop {
                let r = REPLY.load(SeqCst);
                if r != NONE {
                    break r;
                }
                if !std::path::Path::new(&format!("/proc/self/task/{tid}")).exists() {
                    break CLEAN;
                }
                let waited = asked.elapsed();
                if waited > SCHEDULED_WITHIN || (waited > ANSWER_WITHIN && blocks(tid, sig)) {
                    break NONE;
                }
                std::thread::sleep(Duration::from_micros(50));
            };
            let why = match reply {
                CLEAN => continue,
                FOUND => "runs code of the library",
                _ => "did not answer (it may block signals)",
            };
            out.push(Runner {
                tid,
                name: name_of(tid),
                why,
            });
        }
        REQ_TID.store(0, SeqCst);
        Some(out)
    }
}
