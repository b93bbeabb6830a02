//! Memory an agent hands in (a dump argument, a call-trace buffer, a name), read and written
//! without faulting on a garbage pointer.
//!
//! The copies go through the kernel (`process_vm_readv`/`process_vm_writev` on the shim's own
//! process): an address that is not mapped, or not readable/writable, makes the system call
//! fail with `EFAULT` instead of raising SIGSEGV in the thread. Page protections are honoured
//! (a write into read-only memory fails too). Where the system call is not allowed (a seccomp
//! filter answering `EPERM`/`ENOSYS`), the copy is made directly, as before (one debug line).
//!
//! A system call costs as much as a whole JVMTI stack walk (0.5–4 µs where system calls are
//! traced), so the memory a hot call such as GetCallTrace hands in every time is checked
//! without one when that is certain to be safe:
//!
//! * the calling thread's own stack between the copy's caller and the stack's top (an agent's
//!   local `JVMPI_CallTrace` and frames): mapped and writable while the caller runs;
//! * the pages of an earlier successful checked copy of this thread (a buffer an agent
//!   allocates, frees and allocates again at the same address, or keeps): kept per thread, a
//!   few pages at a time, read-only pages apart from writable ones. Such a page stops being safe
//!   only if the agent unmaps it or takes away its access and then hands in a pointer to it
//!   again — memory it would itself fault on when it reads the result.

use std::cell::Cell;
use std::ffi::c_char;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// The module's one shared state (its per-thread state is [`Known`]): the system calls are
/// refused here, copy directly. Set once, by [`unavailable`], at the first refusal.
static DIRECT: AtomicBool = AtomicBool::new(false);

fn unavailable(errno: i32) -> bool {
    if errno == libc::ENOSYS || errno == libc::EPERM {
        if !DIRECT.swap(true, Relaxed) {
            log::debug!(
                "process_vm_readv/writev are not allowed here (errno {errno}): agent pointers are used unchecked"
            );
        }
        return true;
    }
    false
}

/// The granule of access checks: pages are at least this big, and access is per page.
const PAGE: usize = 4096;
/// How many page ranges each thread remembers.
const KNOWN: usize = 4;

/// A range of whole pages a checked copy of this thread succeeded on.
#[derive(Clone, Copy)]
struct Pages {
    start: usize,
    end: usize,
    writable: bool,
}

/// What this thread knows: its stack as (lowest, highest) address ((0, 0) not looked up yet,
/// (1, 1) unknown), the page ranges of its last checked copies, the next one to replace.
struct Known {
    stack: Cell<(usize, usize)>,
    pages: Cell<[Pages; KNOWN]>,
    next: Cell<usize>,
}

thread_local! {
    static KNOWN_HERE: Known = const {
        Known {
            stack: Cell::new((0, 0)),
            pages: Cell::new([Pages { start: 0, end: 0, writable: false }; KNOWN]),
            next: Cell::new(0),
        }
    };
}

fn stack_bounds(k: &Known) -> (usize, usize) {
    let b = k.stack.get();
    if b != (0, 0) {
        return b;
    }
    let mut attr = std::mem::MaybeUninit::<libc::pthread_attr_t>::uninit();
    let mut base: *mut libc::c_void = std::ptr::null_mut();
    let mut size: libc::size_t = 0;
    // `attr` is initialised by pthread_getattr_np before it is read, and destroyed only then.
    // SAFETY: pthread calls on this thread's own attributes; the out-pointers are our locals.
    let b = unsafe {
        if libc::pthread_getattr_np(libc::pthread_self(), attr.as_mut_ptr()) != 0 {
            (1, 1)
        } else {
            let ok = libc::pthread_attr_getstack(attr.as_ptr(), &mut base, &mut size) == 0;
            libc::pthread_attr_destroy(attr.as_mut_ptr());
            if ok && !base.is_null() {
                (base as usize, base as usize + size)
            } else {
                (1, 1)
            }
        }
    };
    k.stack.set(b);
    b
}

/// Whether `len` bytes at `p` are certainly accessible (`write`: writable too) without a check.
#[cfg(test)]
fn known_safe(p: usize, len: usize, write: bool) -> bool {
    checked(|c| c.known(p, len, write))
}

/// This thread's [`Known`], and an address in a frame below every frame of the callers of the
/// copies made through it: the memory one call of the agent's hands in, checked with a single
/// look at this thread's state (see [`checked`]).
pub struct Checked<'a> {
    k: &'a Known,
    here: usize,
}

/// Runs `f` with this thread's [`Checked`]: for several copies in one call (GetCallTrace reads
/// the agent's `JVMPI_CallTrace`, writes its frames and their count), one thread-local lookup
/// instead of one per copy.
#[inline(never)]
pub fn checked<R>(f: impl FnOnce(&Checked) -> R) -> R {
    // This frame is below every frame of our callers: from here up the stack is in use (the
    // copies made in `f`, below, are of memory the callers hand in, never of `f`'s own).
    let mark = 0u8;
    let here = std::hint::black_box(&mark) as *const u8 as usize;
    KNOWN_HERE.with(|k| f(&Checked { k, here }))
}

impl Checked<'_> {
    /// Whether `len` bytes at `p` are certainly accessible (`write`: writable too) without a
    /// check: on this thread's stack above the caller of [`checked`], or in pages an earlier
    /// checked copy of this thread succeeded on.
    #[inline]
    pub fn known(&self, p: usize, len: usize, write: bool) -> bool {
        let Some(end) = p.checked_add(len) else { return false };
        let (lo, hi) = stack_bounds(self.k);
        (lo <= self.here && self.here < hi && self.here <= p && end <= hi)
            || self.k.pages.get().iter().any(|r| r.start <= p && end <= r.end && (r.writable || !write))
    }

    /// Remembers that the pages of `len` bytes at `p` passed a checked copy.
    fn remember(&self, p: usize, len: usize, writable: bool) {
        let start = p & !(PAGE - 1);
        let Some(end) = p.checked_add(len).and_then(|e| e.checked_next_multiple_of(PAGE)) else { return };
        let mut pages = self.k.pages.get();
        let i = self.k.next.get();
        self.k.next.set((i + 1) % KNOWN);
        pages[i] = Pages { start, end, writable };
        self.k.pages.set(pages);
    }

    /// One copy of `len` bytes between the caller's buffer at `local` and the agent's memory at
    /// `remote` (`write`: to it): the kernel's checked copy unless the memory is known
    /// accessible, else a plain copy. False if not all of it could be copied.
    fn copy(&self, remote: usize, local: *mut u8, len: usize, write: bool) -> bool {
        if len == 0 {
            return true;
        }
        if remote == 0 {
            return false;
        }
        if !DIRECT.load(Relaxed) && !self.known(remote, len, write) {
            let l = libc::iovec { iov_base: local as *mut _, iov_len: len };
            let r = libc::iovec { iov_base: remote as *mut _, iov_len: len };
            // SAFETY: `l` is the caller's own buffer of that length; the kernel checks `r`.
            let n = unsafe {
                if write {
                    libc::process_vm_writev(libc::getpid(), &l, 1, &r, 1, 0)
                } else {
                    libc::process_vm_readv(libc::getpid(), &l, 1, &r, 1, 0)
                }
            };
            if n >= 0 {
                if n as usize == len {
                    self.remember(remote, len, write);
                    return true;
                }
                return false;
            }
            if !unavailable(std::io::Error::last_os_error().raw_os_error().unwrap_or(0)) {
                return false;
            }
        }
        // Known accessible (see `known`), or the checked copy is not available here.
        // SAFETY: `remote` known accessible (or the agent's contract); `local` the caller's buffer.
        unsafe {
            if write {
                std::ptr::copy_nonoverlapping(local as *const u8, remote as *mut u8, len)
            } else {
                std::ptr::copy_nonoverlapping(remote as *const u8, local, len)
            }
        }
        true
    }

    /// Copies `out.len()` bytes from `src` into `out`; false if any of them is not readable.
    pub fn read_bytes(&self, src: *const u8, out: &mut [u8]) -> bool {
        self.copy(src as usize, out.as_mut_ptr(), out.len(), false)
    }

    /// Copies `data` to `dst`; false (nothing or part written) if `dst` is not writable.
    pub fn write_bytes(&self, dst: *mut u8, data: &[u8]) -> bool {
        // Only read from: the kernel's and the plain copy's source when `write` is set.
        self.copy(dst as usize, data.as_ptr() as *mut u8, data.len(), true)
    }

    /// Reads a `T` (a plain C struct or number) from `src`; None if it is not readable.
    pub fn read<T: Copy>(&self, src: *const T) -> Option<T> {
        let mut v = std::mem::MaybeUninit::<T>::zeroed();
        // SAFETY: the buffer is the `T`'s own bytes.
        let buf = unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, std::mem::size_of::<T>()) };
        // SAFETY: every byte was copied from a `T` the agent wrote (callers use plain C types).
        self.read_bytes(src as *const u8, buf).then(|| unsafe { v.assume_init() })
    }

    /// Writes `values` to `dst`; false if `dst` is not writable for all of them.
    pub fn write_slice<T: Copy>(&self, dst: *mut T, values: &[T]) -> bool {
        // SAFETY: the bytes of plain C values.
        let bytes = unsafe { std::slice::from_raw_parts(values.as_ptr() as *const u8, std::mem::size_of_val(values)) };
        self.write_bytes(dst as *mut u8, bytes)
    }

    /// Writes one `T` to `dst`; false if it is not writable.
    pub fn write<T: Copy>(&self, dst: *mut T, v: T) -> bool {
        self.write_slice(dst, std::slice::from_ref(&v))
    }
}

/// Copies `out.len()` bytes from `src` into `out`; false if any of them is not readable.
pub fn read_bytes(src: *const u8, out: &mut [u8]) -> bool {
    checked(|c| c.read_bytes(src, out))
}

/// Reads a `T` (a plain C struct or number) from `src`; None if it is not readable.
pub fn read<T: Copy>(src: *const T) -> Option<T> {
    checked(|c| c.read(src))
}

/// Writes `values` to `dst`; false if `dst` is not writable for all of them.
pub fn write_slice<T: Copy>(dst: *mut T, values: &[T]) -> bool {
    checked(|c| c.write_slice(dst, values))
}

/// The longest agent string read.
const MAX_STR: usize = 1 << 16;

/// A NUL-terminated string the agent handed in: Ok(None) for NULL, Err if it is not readable
/// up to its NUL (or longer than 64 KiB).
pub fn c_str(p: *const c_char) -> Result<Option<String>, String> {
    if p.is_null() {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    let mut at = p as usize;
    let mut chunk = [0u8; 256];
    while bytes.len() < MAX_STR {
        // Never across a page boundary: the next page may be unmapped though the string ends before it.
        let n = (4096 - at % 4096).min(chunk.len());
        if !read_bytes(at as *const u8, &mut chunk[..n]) {
            return Err(format!("the string at {p:p} is not readable"));
        }
        if let Some(z) = chunk[..n].iter().position(|&b| b == 0) {
            bytes.extend_from_slice(&chunk[..z]);
            return Ok(Some(String::from_utf8_lossy(&bytes).into_owned()));
        }
        bytes.extend_from_slice(&chunk[..n]);
        at += n;
    }
    Err(format!("the string at {p:p} has no end within {MAX_STR} bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_bytes(dst: *mut u8, data: &[u8]) -> bool {
        checked(|c| c.write_bytes(dst, data))
    }

    #[test]
    fn garbage_is_refused_and_good_memory_copied() {
        assert_eq!(read::<i32>(0xdeadbeef as *const i32), None);
        assert_eq!(read::<i32>(&7), Some(7));
        let mut x = 0u64;
        assert!(write_slice(&mut x as *mut u64, &[5]));
        assert_eq!(x, 5);
        assert!(!write_slice(0xdeadbeef as *mut u64, &[5]));
        // Read-only memory: a string literal.
        let lit = b"read only\0";
        assert!(!write_bytes(lit.as_ptr() as *mut u8, b"x"));
        assert_eq!(c_str(lit.as_ptr() as *const c_char), Ok(Some("read only".into())));
        assert!(c_str(0xdeadbeef as *const c_char).is_err());
        assert_eq!(c_str(std::ptr::null()), Ok(None));
    }

    #[test]
    fn checked_pages_and_the_callers_stack_need_no_check_and_garbage_still_fails() {
        // The caller's own stack is certain.
        let local = [0u8; 16];
        assert!(known_safe(local.as_ptr() as usize, local.len(), true));
        // A heap buffer: checked once, then remembered (with the rest of its pages).
        let mut v = vec![0u8; 64];
        let p = v.as_mut_ptr();
        assert!(!known_safe(p as usize, 64, true));
        assert!(write_bytes(p, &[7; 64]));
        assert!(known_safe(p as usize, 64, true) && known_safe(p as usize, 64, false));
        assert!(write_bytes(p, &[8; 64]) && v.iter().all(|&b| b == 8));
        // Read-only memory read once is remembered as readable only: writes still fail.
        let lit = b"read only, for good\0";
        assert!(read::<u8>(lit.as_ptr()).is_some());
        assert!(known_safe(lit.as_ptr() as usize, 1, false) && !known_safe(lit.as_ptr() as usize, 1, true));
        assert!(!write_bytes(lit.as_ptr() as *mut u8, b"x"));
        // Garbage is never remembered.
        assert!(!write_bytes(0xdead_beef as *mut u8, b"x"));
        assert!(!known_safe(0xdead_beef, 1, false));
        assert_eq!(read::<i32>(0xdead_beef as *const i32), None);
    }
}
