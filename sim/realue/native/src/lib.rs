//! The real-UE path's release thread (sim/realue/path.py).
//!
//! The simulator's engine decides each slot a little before its air time (as a gNB's MAC
//! does) and hands every packet the slot completes to this thread with the slot's end as its
//! due time (CLOCK_MONOTONIC, ns). The thread writes each packet into its UE's TUN when the
//! due time comes: it sleeps until shortly before (timer slack 1 µs), then spins the last
//! stretch, so the write lands within tens of µs of the slot's end. Python's event loop
//! cannot: its timers round up to 1 ms and it shares the GIL. A packet pushed after its due
//! time is written at once and its lateness is measured like any other's.
//!
//! With a priority (1-99) the thread runs under SCHED_FIFO, as a gNB's real-time threads do:
//! on a busy host an ordinary thread's wake-up waits behind other work for milliseconds.
//!
//! Every write's error (write time minus due time, ns) is kept for the caller to drain,
//! up to a bound; beyond it errors are counted but not kept (`errors_dropped`).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Sleep until this long before the due time, then spin.
const SPIN_NS: i64 = 100_000;
/// Errors kept until drained (about 100 s at 10 k packets/s).
const MAX_ERRORS: usize = 1 << 20;
/// Packets waiting at most (a bound on memory; a push beyond it is refused).
const MAX_PENDING: usize = 1 << 18;

pub fn monotonic_ns() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

struct Item {
    due: i64,
    seq: u64,
    fd: i32,
    data: Vec<u8>,
}

impl PartialEq for Item {
    fn eq(&self, o: &Self) -> bool {
        (self.due, self.seq) == (o.due, o.seq)
    }
}
impl Eq for Item {}
impl PartialOrd for Item {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Item {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.due, self.seq).cmp(&(o.due, o.seq))
    }
}

/// Counters, as the C ABI reports them.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct ReleaseStats {
    pub pushed: u64,
    pub refused: u64,
    pub written: u64,
    pub write_errors: u64,
    pub late_pushes: u64,
    pub errors_dropped: u64,
    pub pending: u64,
    /// SCHED_FIFO priority the thread runs at (0: ordinary scheduling).
    pub fifo_priority: u64,
}

#[derive(Default)]
struct State {
    heap: BinaryHeap<Reverse<Item>>,
    seq: u64,
    stop: bool,
    errors: Vec<i64>,
    stats: ReleaseStats,
}

pub struct Releaser {
    shared: Arc<(Mutex<State>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Releaser {
    /// A release thread; `fifo_priority` 1-99 asks for SCHED_FIFO (0: ordinary).
    pub fn new(fifo_priority: i32) -> Releaser {
        let shared = Arc::new((Mutex::new(State::default()), Condvar::new()));
        let s2 = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("octo-release".into())
            .spawn(move || run(&s2, fifo_priority))
            .expect("spawn the release thread");
        Releaser {
            shared,
            thread: Some(thread),
        }
    }

    /// Queue `data` for `fd` at `due` (monotonic ns); false when the queue is full.
    pub fn push(&self, due: i64, fd: i32, data: &[u8]) -> bool {
        let (m, cv) = &*self.shared;
        let mut st = m.lock().unwrap_or_else(|e| e.into_inner());
        if st.heap.len() >= MAX_PENDING {
            st.stats.refused += 1;
            return false;
        }
        st.stats.pushed += 1;
        if due <= monotonic_ns() {
            st.stats.late_pushes += 1;
        }
        st.seq += 1;
        let seq = st.seq;
        let earliest = st.heap.peek().map_or(i64::MAX, |r| r.0.due);
        st.heap.push(Reverse(Item {
            due,
            seq,
            fd,
            data: data.to_vec(),
        }));
        if due < earliest {
            cv.notify_one();
        }
        true
    }

    /// Move up to `out.len()` kept errors (ns) into `out`; returns how many.
    pub fn take_errors(&self, out: &mut [i64]) -> usize {
        let (m, _) = &*self.shared;
        let mut st = m.lock().unwrap_or_else(|e| e.into_inner());
        let n = out.len().min(st.errors.len());
        out[..n].copy_from_slice(&st.errors[..n]);
        st.errors.drain(..n);
        n
    }

    pub fn stats(&self) -> ReleaseStats {
        let (m, _) = &*self.shared;
        let st = m.lock().unwrap_or_else(|e| e.into_inner());
        let mut s = st.stats;
        s.pending = st.heap.len() as u64;
        s
    }
}

impl Default for Releaser {
    fn default() -> Self {
        Self::new(0)
    }
}

impl Drop for Releaser {
    fn drop(&mut self) {
        {
            let (m, cv) = &*self.shared;
            m.lock().unwrap_or_else(|e| e.into_inner()).stop = true;
            cv.notify_one();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn run(shared: &(Mutex<State>, Condvar), fifo_priority: i32) {
    // SAFETY: prctl on the calling thread; 1 ns slack makes its sleeps end on time.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1u64, 0u64, 0u64, 0u64) };
    let (m, cv) = shared;
    if (1..=99).contains(&fifo_priority) {
        let p = libc::sched_param {
            sched_priority: fifo_priority,
        };
        // SAFETY: pid 0 is the calling thread; refused without CAP_SYS_NICE (reported as 0).
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) } == 0 {
            m.lock()
                .unwrap_or_else(|e| e.into_inner())
                .stats
                .fifo_priority = fifo_priority as u64;
        }
    }
    let mut due_now: Vec<Item> = Vec::new();
    loop {
        let mut st = m.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if st.stop {
                return;
            }
            let Some(top) = st.heap.peek() else {
                st = cv.wait(st).unwrap_or_else(|e| e.into_inner());
                continue;
            };
            let wait = top.0.due - monotonic_ns();
            if wait <= SPIN_NS {
                break;
            }
            let d = Duration::from_nanos((wait - SPIN_NS) as u64);
            st = cv.wait_timeout(st, d).unwrap_or_else(|e| e.into_inner()).0;
        }
        let due = st.heap.peek().map_or(0, |r| r.0.due);
        drop(st);
        while monotonic_ns() < due {
            std::hint::spin_loop();
        }
        let mut st = m.lock().unwrap_or_else(|e| e.into_inner());
        let now = monotonic_ns();
        while st.heap.peek().is_some_and(|r| r.0.due <= now) {
            if let Some(Reverse(it)) = st.heap.pop() {
                due_now.push(it);
            }
        }
        drop(st);
        let mut errs: Vec<(bool, i64)> = Vec::with_capacity(due_now.len());
        for it in due_now.drain(..) {
            let t = monotonic_ns();
            // SAFETY: a write of our own buffer to a descriptor the caller owns.
            let n = unsafe { libc::write(it.fd, it.data.as_ptr().cast(), it.data.len()) };
            errs.push((n == it.data.len() as isize, t - it.due));
        }
        let mut st = m.lock().unwrap_or_else(|e| e.into_inner());
        for (ok, e) in errs {
            if ok {
                st.stats.written += 1;
                if st.errors.len() < MAX_ERRORS {
                    st.errors.push(e);
                } else {
                    st.stats.errors_dropped += 1;
                }
            } else {
                st.stats.write_errors += 1;
            }
        }
    }
}

// --- C ABI ---------------------------------------------------------------------------

/// A new release thread (`fifo_priority` 1-99: SCHED_FIFO if permitted; 0: ordinary); free it
/// with `octo_release_free`.
#[no_mangle]
pub extern "C" fn octo_release_new(fifo_priority: i32) -> *mut Releaser {
    Box::into_raw(Box::new(Releaser::new(fifo_priority)))
}

/// # Safety
/// `r` from `octo_release_new`; `data` points at `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn octo_release_push(
    r: *const Releaser,
    due_ns: i64,
    fd: i32,
    data: *const u8,
    len: usize,
) -> i32 {
    if r.is_null() || (data.is_null() && len > 0) {
        return -1;
    }
    let bytes = if len == 0 {
        &[][..]
    } else {
        std::slice::from_raw_parts(data, len)
    };
    if (*r).push(due_ns, fd, bytes) {
        0
    } else {
        -1
    }
}

/// # Safety
/// `r` from `octo_release_new`; `out` points at `cap` writable i64.
#[no_mangle]
pub unsafe extern "C" fn octo_release_take_errors(
    r: *const Releaser,
    out: *mut i64,
    cap: usize,
) -> usize {
    if r.is_null() || out.is_null() {
        return 0;
    }
    (*r).take_errors(std::slice::from_raw_parts_mut(out, cap))
}

/// # Safety
/// `r` from `octo_release_new`; `out` points at a writable `ReleaseStats`.
#[no_mangle]
pub unsafe extern "C" fn octo_release_stats(r: *const Releaser, out: *mut ReleaseStats) {
    if !r.is_null() && !out.is_null() {
        *out = (*r).stats();
    }
}

/// The monotonic clock the due times are on (CLOCK_MONOTONIC, ns), as Python's
/// time.monotonic_ns() reads it.
#[no_mangle]
pub extern "C" fn octo_release_now_ns() -> i64 {
    monotonic_ns()
}

/// The machine's floor for any sleeping thread: a thread like the release thread (SCHED_FIFO
/// at `fifo_priority` if permitted, 1 ns timer slack) sleeps to `n` absolute deadlines
/// `period_ns` apart and writes how late it woke each time (ns) into `out`; returns how
/// many. No packet, no lock: what is left is the kernel's and the hypervisor's wake-up.
///
/// # Safety
/// `out` points at `n` writable i64.
#[no_mangle]
pub unsafe extern "C" fn octo_release_timer_floor(
    n: usize,
    period_ns: i64,
    fifo_priority: i32,
    out: *mut i64,
) -> usize {
    if out.is_null() || period_ns <= 0 {
        return 0;
    }
    let out = std::slice::from_raw_parts_mut(out, n);
    std::thread::scope(|s| {
        s.spawn(|| {
            libc::prctl(libc::PR_SET_TIMERSLACK, 1u64, 0u64, 0u64, 0u64);
            if (1..=99).contains(&fifo_priority) {
                let p = libc::sched_param {
                    sched_priority: fifo_priority,
                };
                libc::sched_setscheduler(0, libc::SCHED_FIFO, &p);
            }
            let mut next = monotonic_ns() + period_ns;
            for slot in out.iter_mut() {
                let ts = libc::timespec {
                    tv_sec: next / 1_000_000_000,
                    tv_nsec: next % 1_000_000_000,
                };
                libc::clock_nanosleep(
                    libc::CLOCK_MONOTONIC,
                    libc::TIMER_ABSTIME,
                    &ts,
                    std::ptr::null_mut(),
                );
                *slot = monotonic_ns() - next;
                next += period_ns;
            }
        });
    });
    n
}

/// Stop the thread (packets still waiting are not written) and free it.
///
/// # Safety
/// `r` from `octo_release_new`, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn octo_release_free(r: *mut Releaser) {
    if !r.is_null() {
        drop(Box::from_raw(r));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pipe() -> (i32, i32) {
        let mut fds = [0i32; 2];
        // SAFETY: pipe2 fills the array.
        assert_eq!(
            unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK) },
            0
        );
        (fds[0], fds[1])
    }

    fn read_all(fd: i32) -> Vec<u8> {
        let mut buf = vec![0u8; 65536];
        // SAFETY: reading into our buffer.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        buf.truncate(n.max(0) as usize);
        buf
    }

    #[test]
    fn writes_in_due_order_not_push_order_and_not_before_due() {
        let (rd, wr) = pipe();
        let r = Releaser::new(0);
        let t0 = monotonic_ns() + 20_000_000;
        assert!(r.push(t0 + 2_000_000, wr, b"second"));
        assert!(r.push(t0, wr, b"first-"));
        std::thread::sleep(Duration::from_millis(10));
        assert!(
            read_all(rd).is_empty(),
            "nothing may leave before its due time"
        );
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(read_all(rd), b"first-second");
        let mut errs = [0i64; 8];
        let n = r.take_errors(&mut errs);
        assert_eq!(n, 2);
        for e in &errs[..n] {
            assert!(*e >= 0, "written {e} ns before its due time");
        }
        let s = r.stats();
        assert_eq!(
            (s.pushed, s.written, s.write_errors, s.pending),
            (2, 2, 0, 0)
        );
    }

    #[test]
    fn a_late_push_is_written_at_once_and_counted_late() {
        let (rd, wr) = pipe();
        let r = Releaser::new(0);
        assert!(r.push(monotonic_ns() - 1_000_000, wr, b"late"));
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(read_all(rd), b"late");
        let s = r.stats();
        assert_eq!((s.late_pushes, s.written), (1, 1));
        let mut errs = [0i64; 1];
        assert_eq!(r.take_errors(&mut errs), 1);
        assert!(errs[0] >= 1_000_000);
    }

    #[test]
    fn a_failed_write_is_counted_not_kept_as_an_error() {
        let r = Releaser::new(0);
        assert!(r.push(monotonic_ns(), -1, b"x"));
        std::thread::sleep(Duration::from_millis(20));
        let s = r.stats();
        assert_eq!((s.written, s.write_errors), (0, 1));
        assert_eq!(r.take_errors(&mut [0i64; 4]), 0);
    }

    #[test]
    fn the_timer_floor_never_wakes_early() {
        let mut out = [0i64; 20];
        // SAFETY: 20 writable slots.
        let n = unsafe { octo_release_timer_floor(20, 200_000, 0, out.as_mut_ptr()) };
        assert_eq!(n, 20);
        assert!(out.iter().all(|e| *e >= 0), "{out:?}");
    }

    #[test]
    fn c_abi_round_trip() {
        let (rd, wr) = pipe();
        let r = octo_release_new(0);
        // SAFETY: a live releaser and our own buffers.
        unsafe {
            assert_eq!(
                octo_release_push(r, octo_release_now_ns(), wr, b"abc".as_ptr(), 3),
                0
            );
            assert_eq!(
                octo_release_push(std::ptr::null(), 0, wr, b"abc".as_ptr(), 3),
                -1
            );
            std::thread::sleep(Duration::from_millis(20));
            let mut s = ReleaseStats::default();
            octo_release_stats(r, &mut s);
            assert_eq!(s.written, 1);
            octo_release_free(r);
        }
        assert_eq!(read_all(rd), b"abc");
    }
}
