//! RMR's C API from octoric's native code (the OCC xApp's 30500 reports, e2term's relay): the
//! public prefix of `rmr_mbuf_t` (RMR 4.9; `rmr/src/mbuf.rs` is the library's own), the
//! functions by address (the library the process loaded, passed from Python), and one send
//! with RMR's retry semantics. Also the clock every process of `octoric bench loop` marks with.

use std::ffi::{c_int, c_void};
use std::sync::Mutex;
use std::time::Duration;

/// RMR 4.9's public message buffer, the fields these callers touch.
#[repr(C)]
pub struct RmrMbuf {
    pub state: c_int,
    pub mtype: c_int,
    pub len: c_int,
    pub payload: *mut u8,
    pub xaction: *mut u8,
    pub sub_id: c_int,
    pub tp_state: c_int,
}

pub type AllocFn = unsafe extern "C" fn(*mut c_void, c_int) -> *mut RmrMbuf;
pub type SendFn = unsafe extern "C" fn(*mut c_void, *mut RmrMbuf) -> *mut RmrMbuf;
pub type FreeFn = unsafe extern "C" fn(*mut RmrMbuf);
pub type MeidFn = unsafe extern "C" fn(*mut RmrMbuf, *const u8, c_int) -> c_int;

pub const RMR_OK: c_int = 0;
pub const RMR_ERR_NOENDPT: c_int = 2;
pub const RMR_ERR_RETRY: c_int = 10;

/// How long a full peer (RMR_ERR_RETRY) is waited out, a millisecond at a time.
#[derive(Clone, Copy)]
pub enum Retry {
    Times(u32),
    For(Duration),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Outcome {
    Sent,
    NoRoute,
    Failed,
    GaveUp, // still RMR_ERR_RETRY when the retries ran out
}

/// Sends on one RMR context, one at a time (as RmrEndpoint's `_send_lock`).
pub struct Sender {
    ctx: *mut c_void,
    alloc: AllocFn,
    send: SendFn,
    free: FreeFn,
    meid: MeidFn,
    lock: Mutex<()>,
}

// SAFETY: RMR's context is made for several threads; this one's sends are serialized
unsafe impl Send for Sender {}
unsafe impl Sync for Sender {}

impl Sender {
    /// # Safety
    /// The functions must be RMR's and `ctx` a live context of that library, for as long as
    /// the sender is used.
    pub unsafe fn new(
        ctx: *mut c_void,
        alloc: AllocFn,
        send: SendFn,
        free: FreeFn,
        meid: MeidFn,
    ) -> Sender {
        Sender {
            ctx,
            alloc,
            send,
            free,
            meid,
            lock: Mutex::new(()),
        }
    }

    /// Send `payload` as `mtype` (`sub_id`, `meid`) by route table; `waited` counts the
    /// retries a full peer cost.
    pub fn send(
        &self,
        payload: &[u8],
        mtype: c_int,
        sub_id: c_int,
        meid: &[u8],
        retry: Retry,
        waited: &mut u64,
    ) -> Outcome {
        let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let deadline = match retry {
            Retry::For(d) => Some(monotonic_ns() + d.as_nanos() as u64),
            Retry::Times(_) => None,
        };
        let mut attempt = 0u32;
        // SAFETY: RMR's own functions on its context and buffers (Sender::new)
        unsafe {
            loop {
                let m = (self.alloc)(self.ctx, payload.len().max(1) as c_int);
                if m.is_null() {
                    return Outcome::Failed;
                }
                std::ptr::copy_nonoverlapping(payload.as_ptr(), (*m).payload, payload.len());
                (*m).len = payload.len() as c_int;
                (*m).mtype = mtype;
                (*m).sub_id = sub_id;
                (self.meid)(m, meid.as_ptr(), meid.len() as c_int);
                let m = (self.send)(self.ctx, m);
                let state = if m.is_null() { -1 } else { (*m).state };
                if !m.is_null() {
                    (self.free)(m);
                }
                match state {
                    RMR_OK => return Outcome::Sent,
                    RMR_ERR_NOENDPT => return Outcome::NoRoute,
                    RMR_ERR_RETRY => {}
                    _ => return Outcome::Failed,
                }
                attempt += 1;
                let more = match (retry, deadline) {
                    (Retry::Times(n), _) => attempt <= n,
                    (_, Some(d)) => monotonic_ns() <= d,
                    _ => false,
                };
                if !more {
                    return Outcome::GaveUp;
                }
                *waited += 1;
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
}

/// CLOCK_MONOTONIC in ns: Python's `time.monotonic_ns()`, one clock for every process of a
/// host, so the marks of two processes subtract.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
