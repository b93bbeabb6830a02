//! The calling thread's CPU time, at a fraction of a system call's cost.
//!
//! What is here: `thread_cpu_time`, the answer to JVMPI `GetCurrentThreadCpuTime` — what JVMTI's
//! `GetCurrentThreadCpuTime` and HotSpot 1.5 answered (`clock_gettime(CLOCK_THREAD_CPUTIME_ID)`,
//! user + system time of the OS thread), without a system call on most calls. HPROF `cpu=times`
//! asks for it at every METHOD_ENTRY and METHOD_EXIT; on this kind of virtual machine the system
//! call costs about 750 ns, two of them more than the rest of a method event.
//!
//! How: between two moments the thread was not descheduled, its CPU time grows as the wall
//! clock does. Each thread keeps a base — its CPU time from `clock_gettime` and the time-stamp
//! counter (TSC) read just before — and answers `base + TSC elapsed` while that holds. Whether
//! it holds is read from a perf event of the thread's own (a software "dummy" event that counts
//! nothing): the kernel bumps the sequence word of the event's shared page whenever it schedules
//! the thread back in, so an unchanged word means no deschedule since the base was taken. A
//! new base is taken when the word changed, after `WINDOW` of wall time, and on the first call.
//!
//! What is not here: any fallback cleverness. Without an invariant TSC (`constant_tsc` and
//! `nonstop_tsc`), without `perf_event_open` (a seccomp profile, `perf_event_paranoid` 3), before
//! the TSC's rate is known (the first `CALIBRATION` of the process), on another architecture, or
//! for a thread whose event could not be opened (no file descriptor left), every call is the
//! system call. Each thread that asks holds one file descriptor and one mapped page, released
//! when the thread ends.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;
use std::time::Duration;

/// Wall time after which a base is renewed even if the thread was never descheduled (bounds
/// the error of the TSC rate: at 1e-4 relative, 0.1 µs).
const WINDOW: Duration = Duration::from_millis(1);
/// How long the TSC is watched against CLOCK_MONOTONIC before its rate is used.
const CALIBRATION: Duration = Duration::from_millis(20);

/// The calling thread's CPU time in nanoseconds (user + system), as `clock_gettime` gives it.
pub fn thread_cpu_time() -> i64 {
    #[cfg(target_arch = "x86_64")]
    if let Some(t) = fast::now() {
        return t;
    }
    syscall_thread_cpu_time()
}

/// `clock_gettime(CLOCK_THREAD_CPUTIME_ID)`; 0 if the clock cannot be read.
pub fn syscall_thread_cpu_time() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid out-pointer for clock_gettime.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0 {
        ts.tv_sec * 1_000_000_000 + ts.tv_nsec
    } else {
        0
    }
}

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid out-pointer for clock_gettime.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(target_arch = "x86_64")]
mod fast {
    use super::*;

    fn rdtsc() -> u64 {
        // SAFETY: RDTSC has no preconditions on x86_64.
        unsafe { core::arch::x86_64::_rdtsc() }
    }

    /// The TSC's rate, learnt once against CLOCK_MONOTONIC: nanoseconds per tick in 32.32 fixed
    /// point, 0 while unknown. `None` when the TSC is not invariant.
    struct Rate {
        origin_tsc: u64,
        origin_ns: u64,
        ns_per_tick_q32: AtomicU64,
        /// `WINDOW` in TSC ticks, set with the rate.
        window_ticks: AtomicU64,
    }

    /// The fast clock's state, shared by every thread: one `static`, each field what it holds
    /// and who writes it (a field costs what a separate `static` cost: [`now`] reads them
    /// directly).
    struct FastState {
        /// The TSC's rate, its origin taken by the first [`rate`] (`None`: the TSC is not
        /// invariant), the rate itself stored by the first call once calibrated.
        rate: OnceLock<Option<Rate>>,
        /// Non-zero once `perf_event_open` was refused (set by [`Event::open`]): every call is
        /// a system call.
        unavailable: AtomicU64,
    }

    static STATE: FastState = FastState { rate: OnceLock::new(), unavailable: AtomicU64::new(0) };

    fn invariant_tsc() -> bool {
        std::fs::read_to_string("/proc/cpuinfo")
            .map(|s| {
                let flags = s.lines().find(|l| l.starts_with("flags")).unwrap_or("");
                let has = |f: &str| flags.split_whitespace().any(|w| w == f);
                has("constant_tsc") && has("nonstop_tsc")
            })
            .unwrap_or(false)
    }

    /// Nanoseconds per TSC tick (32.32) and `WINDOW` in ticks, once `CALIBRATION` has passed
    /// since the first call.
    fn rate() -> Option<(u64, u64)> {
        let r = STATE
            .rate
            .get_or_init(|| {
                invariant_tsc().then(|| Rate {
                    origin_tsc: rdtsc(),
                    origin_ns: monotonic_ns(),
                    ns_per_tick_q32: AtomicU64::new(0),
                    window_ticks: AtomicU64::new(0),
                })
            })
            .as_ref()?;
        let q = r.ns_per_tick_q32.load(Relaxed);
        if q != 0 {
            return Some((q, r.window_ticks.load(Relaxed)));
        }
        let (ns, tsc) = (monotonic_ns(), rdtsc());
        let (dns, dtsc) = (ns.saturating_sub(r.origin_ns), tsc.saturating_sub(r.origin_tsc));
        if dns < CALIBRATION.as_nanos() as u64 || dtsc == 0 {
            return None;
        }
        let q = ((dns as u128) << 32) / dtsc as u128;
        let q = u64::try_from(q).ok().filter(|&q| q != 0)?;
        let window = u64::try_from((WINDOW.as_nanos() << 32) / q as u128).unwrap_or(u64::MAX);
        r.window_ticks.store(window, Relaxed);
        r.ns_per_tick_q32.store(q, Relaxed);
        Some((q, window))
    }

    /// The thread's perf event: its file descriptor and the shared page's sequence word.
    struct Event {
        fd: i32,
        page: *mut libc::c_void,
        page_len: usize,
    }

    impl Event {
        fn open() -> Option<Event> {
            // perf_event_attr (linux/perf_event.h): type, size, config, ... flags at offset 40.
            let mut attr = [0u64; 16];
            const PERF_TYPE_SOFTWARE: u64 = 1;
            const PERF_COUNT_SW_DUMMY: u64 = 9;
            const SIZE: u64 = 128;
            const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;
            attr[0] = PERF_TYPE_SOFTWARE | (SIZE << 32);
            attr[1] = PERF_COUNT_SW_DUMMY;
            // flags: exclude_kernel (bit 5), exclude_hv (bit 6): allowed at perf_event_paranoid 2.
            attr[5] = (1 << 5) | (1 << 6);
            // pid 0, cpu -1: this thread on any CPU; no group.
            // SAFETY: `attr` is a zeroed perf_event_attr of the size it declares.
            let fd = unsafe {
                libc::syscall(
                    libc::SYS_perf_event_open,
                    attr.as_ptr(),
                    0 as libc::pid_t,
                    -1i32,
                    -1i32,
                    PERF_FLAG_FD_CLOEXEC,
                )
            } as i32;
            if fd < 0 {
                let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
                if matches!(
                    e,
                    libc::EACCES | libc::EPERM | libc::ENOSYS | libc::ENOENT | libc::EINVAL | libc::EOPNOTSUPP
                ) {
                    STATE.unavailable.store(1, Relaxed);
                    log::debug!("GetCurrentThreadCpuTime: perf_event_open refused ({e}); every call is clock_gettime");
                }
                return None;
            }
            // SAFETY: sysconf has no preconditions.
            let page_len = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
            // SAFETY: maps the event's first (metadata) page read-only; `fd` is the event just opened.
            let page = unsafe { libc::mmap(std::ptr::null_mut(), page_len, libc::PROT_READ, libc::MAP_SHARED, fd, 0) };
            if page == libc::MAP_FAILED {
                // SAFETY: `fd` is ours and closed once.
                unsafe { libc::close(fd) };
                return None;
            }
            Some(Event { fd, page, page_len })
        }

        /// The page's sequence word (`perf_event_mmap_page.lock`, after `version` and
        /// `compat_version`: offset 8).
        fn seq(&self) -> u32 {
            // The kernel writes the word concurrently, hence the volatile read.
            // SAFETY: the page is mapped for the life of `self`; the word is 4-aligned.
            unsafe { std::ptr::read_volatile((self.page as *const u8).add(8) as *const u32) }
        }
    }

    impl Drop for Event {
        fn drop(&mut self) {
            // SAFETY: the mapping and the descriptor are ours, released once, here.
            unsafe {
                libc::munmap(self.page, self.page_len);
                libc::close(self.fd);
            }
        }
    }

    /// This thread's part of the fast clock, in one thread-local (its perf event makes it one
    /// with a destructor: the event is closed when the thread ends).
    struct Base {
        /// The thread's perf event, whose sequence word tells whether it was descheduled.
        event: Option<Event>,
        /// The event was tried (opened or refused) in this thread.
        tried: bool,
        /// The sequence word when the base was taken.
        seq: u32,
        /// The TSC when the base was taken.
        tsc: u64,
        /// The thread's CPU time (the system call's) when the base was taken.
        ns: i64,
        /// The last answer: a new base never makes the time go back (the TSC's rate is known
        /// to about 1e-4, the answers within a base may run a few nanoseconds ahead).
        last: i64,
    }

    thread_local! {
        static BASE: RefCell<Base> = const { RefCell::new(Base { event: None, tried: false, seq: 0, tsc: 0, ns: 0, last: 0 }) };
    }

    pub(super) fn now() -> Option<i64> {
        if STATE.unavailable.load(Relaxed) != 0 {
            return None;
        }
        let (q, window) = rate()?;
        BASE.try_with(|b| {
            let mut b = b.try_borrow_mut().ok()?;
            if !b.tried {
                b.tried = true;
                b.event = Event::open();
                b.seq = b.event.as_ref()?.seq().wrapping_add(1);
            }
            let seq = b.event.as_ref()?.seq();
            let tsc = rdtsc();
            if seq == b.seq && tsc >= b.tsc && tsc - b.tsc < window {
                let ns = ((tsc - b.tsc) as u128 * q as u128) >> 32;
                b.last = b.last.max(b.ns + ns as i64);
                return Some(b.last);
            }
            // A new base: the word first, so that a deschedule after it shows at the next call.
            b.seq = seq;
            std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
            b.tsc = rdtsc();
            b.ns = syscall_thread_cpu_time();
            b.last = b.last.max(b.ns);
            Some(b.last)
        })
        .ok()
        .flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast answer follows the system call's, busy or sleeping, within a few microseconds.
    #[test]
    fn follows_the_system_clock() {
        std::thread::sleep(CALIBRATION * 2);
        let _ = thread_cpu_time();
        let (f0, c0) = (thread_cpu_time(), syscall_thread_cpu_time());
        let mut x = 0u64;
        let mut worst = 0i64;
        for r in 0..400 {
            for i in 0..20_000u64 {
                x = x.wrapping_add(i * i);
            }
            std::hint::black_box(x);
            if r % 50 == 0 {
                std::thread::sleep(Duration::from_micros(200));
            }
            let (f, c) = (thread_cpu_time(), syscall_thread_cpu_time());
            assert!(f >= f0, "CPU time went backwards");
            worst = worst.max(((f - f0) - (c - c0)).abs());
        }
        assert!(worst < 200_000, "fast CPU time off by {worst} ns");
    }
}
