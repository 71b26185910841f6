//! The C ABI. Every function checks its pointers, then calls safe code.
//!
//! Contexts are `Arc<Ctx>` handed out with `Arc::into_raw`; messages are `Box<Mbuf>`
//! handed out with `Box::into_raw` and checked by a magic number on the way back in.
#![allow(clippy::missing_safety_doc)]

use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_uchar, c_void};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::consts::*;
use crate::context::Ctx;
use crate::frame::{self, TP_HDR_LEN};
use crate::log::{self, Level};
use crate::mbuf::Mbuf;

/// A counted reference to the context behind a handle for the duration of one call, so
/// an rmr_close racing with a blocked receive in another thread cannot free it under us.
unsafe fn ctx_ref(v: *mut c_void) -> Option<Arc<Ctx>> {
    if v.is_null() {
        None
    } else {
        Arc::increment_strong_count(v as *const Ctx);
        Some(Arc::from_raw(v as *const Ctx))
    }
}

unsafe fn mbuf_ref<'a>(m: *mut Mbuf) -> Option<&'a mut Mbuf> {
    if m.is_null() {
        return None;
    }
    let r = &mut *m;
    if r.is_valid() {
        Some(r)
    } else {
        None
    }
}

fn into_raw(m: Box<Mbuf>) -> *mut Mbuf {
    Box::into_raw(m)
}

/// malloc a NUL-terminated copy (callers release it with free()/rmr_free_consts).
fn malloc_cstr(s: &[u8]) -> *mut c_char {
    // SAFETY: we write s.len()+1 bytes into a fresh allocation of that size.
    unsafe {
        let p = libc::malloc(s.len() + 1) as *mut u8;
        if p.is_null() {
            return std::ptr::null_mut();
        }
        std::ptr::copy_nonoverlapping(s.as_ptr(), p, s.len());
        *p.add(s.len()) = 0;
        p as *mut c_char
    }
}

/// Copy a header string field out like RMR does: at most `cap` bytes (the field size), NUL
/// included when it fits, so a caller's field-sized buffer is never overrun.
unsafe fn copy_out(dest: *mut c_uchar, s: &[u8], cap: usize) -> *mut c_uchar {
    let n = s.len().min(cap);
    std::ptr::copy_nonoverlapping(s.as_ptr(), dest, n);
    if n < cap {
        *dest.add(n) = 0;
    }
    dest
}

#[no_mangle]
pub unsafe extern "C" fn rmr_init(
    uproto_port: *const c_char,
    max_msg_size: c_int,
    flags: c_int,
) -> *mut c_void {
    let spec = if uproto_port.is_null() {
        "4560".to_string()
    } else {
        CStr::from_ptr(uproto_port).to_string_lossy().into_owned()
    };
    match Ctx::init(&spec, max_msg_size, flags) {
        Ok(ctx) => Arc::into_raw(ctx) as *mut c_void,
        Err(e) => {
            log::log(Level::Crit, &format!("rmr_init failed: {e}"));
            std::ptr::null_mut()
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn rmr_ready(vctx: *mut c_void) -> c_int {
    ctx_ref(vctx).map(|c| c.ready() as c_int).unwrap_or(0)
}

#[no_mangle]
pub unsafe extern "C" fn rmr_close(vctx: *mut c_void) {
    if vctx.is_null() {
        return;
    }
    let ctx = Arc::from_raw(vctx as *const Ctx);
    ctx.close();
    drop(ctx);
}

#[no_mangle]
pub unsafe extern "C" fn rmr_set_stimeout(vctx: *mut c_void, rloops: c_int) -> c_int {
    match ctx_ref(vctx) {
        Some(c) => {
            c.set_retries(rloops);
            0
        }
        None => -1,
    }
}

/// octoric's extension (docs/rmr.md): messages of type ``mtype`` are handed to ``cb`` in the
/// receive thread of the connection they arrive on, before the receive queue; when it returns 0
/// the message is taken (counted ``tapped``), otherwise queued as usual. ``cb`` NULL removes
/// the tap. ``user`` is passed to ``cb`` and must stay valid until the tap is removed and the
/// context closed. 0: done; -1: no context.
#[no_mangle]
pub unsafe extern "C" fn rmr_octo_set_tap(
    vctx: *mut c_void,
    mtype: c_int,
    cb: Option<crate::context::TapFn>,
    user: *mut c_void,
) -> c_int {
    match ctx_ref(vctx) {
        Some(c) => {
            c.set_tap(mtype, cb, user as usize);
            0
        }
        None => -1,
    }
}

/// RMR turns TCP_NODELAY on for later sessions (it is off unless asked); this library sets it
/// on every connection from the start, so there is nothing left to turn on.
#[no_mangle]
pub unsafe extern "C" fn rmr_set_low_latency(_vctx: *mut c_void) {}

/// TCP_QUICKACK on the connections established from now on (RMR's ``SI_TF_FASTACK``).
#[no_mangle]
pub unsafe extern "C" fn rmr_set_fack(vctx: *mut c_void) {
    if let Some(c) = ctx_ref(vctx) {
        c.set_fast_ack();
    }
}

/// A descriptor that polls readable while messages wait in the receive queue (the caller
/// must not read, write or close it): for epoll loops such as the Go xapp-frame's.
#[no_mangle]
pub unsafe extern "C" fn rmr_get_rcvfd(vctx: *mut c_void) -> c_int {
    ctx_ref(vctx).map_or(-1, |c| c.rcvfd())
}

/// As RMR's SI transport: receive timeouts cannot be set (use rmr_torcv_msg); returns 0.
#[no_mangle]
pub unsafe extern "C" fn rmr_set_rtimeout(_vctx: *mut c_void, _time: c_int) -> c_int {
    0
}

/// Deprecated in RMR's header for rmr_set_rtimeout (and not built into its SI library).
#[no_mangle]
pub unsafe extern "C" fn rmr_rcv_to(vctx: *mut c_void, time: c_int) -> c_int {
    rmr_set_rtimeout(vctx, time)
}

/// Deprecated in RMR's header for rmr_set_stimeout (and not built into its SI library).
#[no_mangle]
pub unsafe extern "C" fn rmr_send_to(vctx: *mut c_void, time: c_int) -> c_int {
    rmr_set_stimeout(vctx, time)
}

/// Receive until a message whose transaction ID starts with `expect` arrives, setting up
/// to `allow2queue` others aside (back at the front of the receive queue, in order); nil
/// with errno ETIMEDOUT once that many were set aside. A nil or empty `expect` is a plain
/// receive.
#[no_mangle]
pub unsafe extern "C" fn rmr_rcv_specific(
    vctx: *mut c_void,
    m: *mut Mbuf,
    expect: *const c_char,
    allow2queue: c_int,
) -> *mut Mbuf {
    let Some(ctx) = ctx_ref(vctx) else {
        if let Some(mb) = mbuf_ref(m) {
            mb.state = RMR_ERR_BADARG;
            mb.tp_state = libc::EINVAL;
        }
        set_errno(libc::EINVAL);
        return m;
    };
    set_errno(0);
    if expect.is_null() || *expect == 0 {
        return rmr_rcv_msg(vctx, m);
    }
    let want = CStr::from_ptr(expect).to_bytes();
    let want = &want[..want.len().min(frame::XID_LEN)];
    // set aside in order and put back in front afterwards: like RMR, the ones set aside are
    // not looked at again by this call, and later receive calls get them first
    let mut aside = Vec::new();
    while (aside.len() as c_int) < allow2queue {
        let Some(msg) = ctx.receive(None) else {
            if ctx.stopping() {
                break;
            }
            continue;
        };
        let off = frame::OFF_XID + TP_HDR_LEN;
        if msg.buf.len() >= off + want.len() && &msg.buf[off..off + want.len()] == want {
            ctx.requeue_front(aside);
            let target = if mbuf_ref(m).is_some() {
                m
            } else {
                into_raw(Mbuf::alloc(0))
            };
            (*target).load(msg);
            return target;
        }
        aside.push(msg);
    }
    ctx.requeue_front(aside);
    set_errno(libc::ETIMEDOUT);
    std::ptr::null_mut()
}

/// ``rmr_rx_debug_t``: messages queued and dropped since the last reset.
#[repr(C)]
pub struct RxDebug {
    pub drop: u64,
    pub enqueue: u64,
}

#[no_mangle]
pub unsafe extern "C" fn rmr_get_rx_debug_info(vctx: *mut c_void, out: *mut RxDebug) -> c_int {
    match ctx_ref(vctx) {
        Some(c) if !out.is_null() => {
            let (enq, drop) = c.rx_debug();
            (*out).enqueue = enq;
            (*out).drop = drop;
            0
        }
        _ => {
            set_errno(libc::EINVAL);
            libc::EINVAL
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn rmr_reset_rx_debug_count(vctx: *mut c_void) -> c_int {
    match ctx_ref(vctx) {
        Some(c) => {
            c.reset_rx_debug();
            0
        }
        None => {
            set_errno(libc::EINVAL);
            libc::EINVAL
        }
    }
}

fn set_errno(e: c_int) {
    // SAFETY: __errno_location points at this thread's errno.
    unsafe { *libc::__errno_location() = e };
}

// ---------------------------------------------------------------- transaction IDs, strings

/// The whole 32-byte transaction ID into `dest` (or a malloc'd buffer the caller frees).
#[no_mangle]
pub unsafe extern "C" fn rmr_get_xact(m: *mut Mbuf, dest: *mut c_uchar) -> *mut c_uchar {
    let Some(mb) = mbuf_ref(m) else {
        set_errno(libc::EINVAL);
        return std::ptr::null_mut();
    };
    let out = if dest.is_null() {
        libc::malloc(frame::XID_LEN) as *mut c_uchar
    } else {
        dest
    };
    if out.is_null() {
        set_errno(libc::ENOMEM);
        return out;
    }
    std::ptr::copy_nonoverlapping(mb.xid().as_ptr(), out, frame::XID_LEN);
    out
}

/// A NUL-terminated transaction ID (NUL included); RMR_ERR_OVERFLOW if it does not fit.
#[no_mangle]
pub unsafe extern "C" fn rmr_str2xact(m: *mut Mbuf, s: *const c_uchar) -> c_int {
    if s.is_null() || mbuf_ref(m).is_none() {
        set_errno(libc::EINVAL);
        return RMR_ERR_BADARG;
    }
    let n = CStr::from_ptr(s.cast()).to_bytes().len();
    if n > frame::XID_LEN - 1 {
        set_errno(libc::EOVERFLOW);
        return RMR_ERR_OVERFLOW;
    }
    rmr_bytes2xact(m, s, (n + 1) as c_int);
    RMR_OK
}

/// A NUL-terminated string into the payload, NUL included (``len`` = strlen + 1).
#[no_mangle]
pub unsafe extern "C" fn rmr_str2payload(m: *mut Mbuf, s: *const c_uchar) {
    if s.is_null() {
        return;
    }
    let n = CStr::from_ptr(s.cast()).to_bytes().len();
    rmr_bytes2payload(m, s, (n + 1) as c_int);
}

#[no_mangle]
pub unsafe extern "C" fn rmr_set_vlevel(new_level: c_int) {
    log::set_level(new_level);
}

#[no_mangle]
pub unsafe extern "C" fn rmr_alloc_msg(vctx: *mut c_void, size: c_int) -> *mut Mbuf {
    let cap = match ctx_ref(vctx) {
        Some(c) => {
            if size > 0 {
                size as usize
            } else {
                c.max_plen
            }
        }
        None => return std::ptr::null_mut(),
    };
    into_raw(Mbuf::alloc_traced(cap, trace_default(vctx)))
}

unsafe fn trace_default(vctx: *mut c_void) -> usize {
    ctx_ref(vctx).map_or(0, |c| c.trace_len.load(Ordering::Relaxed))
}

// ---------------------------------------------------------------- trace data (RMR's API)

/// The trace size of messages allocated from now on; 1 on success, 0 for a nil context.
#[no_mangle]
pub unsafe extern "C" fn rmr_init_trace(vctx: *mut c_void, tr_len: c_int) -> c_int {
    match ctx_ref(vctx) {
        Some(c) => {
            c.trace_len.store(tr_len.max(0) as usize, Ordering::Relaxed);
            1
        }
        None => 0,
    }
}

/// A message with `size` payload bytes and a `tr_size`-byte trace area holding `data`;
/// state RMR_ERR_INITFAILED when the trace could not be set.
#[no_mangle]
pub unsafe extern "C" fn rmr_tralloc_msg(
    vctx: *mut c_void,
    size: c_int,
    tr_size: c_int,
    data: *const c_uchar,
) -> *mut Mbuf {
    let Some(c) = ctx_ref(vctx) else {
        return std::ptr::null_mut();
    };
    let cap = if size > 0 { size as usize } else { c.max_plen };
    let m = into_raw(Mbuf::alloc_traced(cap, tr_size.max(0) as usize));
    if rmr_set_trace(m, data, tr_size) != tr_size {
        (*m).state = RMR_ERR_INITFAILED;
    }
    m
}

/// A new message (the old one stays valid: the caller frees both) with a `new_tr_size`-byte
/// trace area, the same header, d1/d2 and payload.
#[no_mangle]
pub unsafe extern "C" fn rmr_realloc_msg(m: *mut Mbuf, new_tr_size: c_int) -> *mut Mbuf {
    let Some(mb) = mbuf_ref(m) else {
        return std::ptr::null_mut();
    };
    let mut nm = mb.clone_with_cap(mb.payload_cap(), true);
    nm.set_trace_len(new_tr_size.max(0) as usize);
    into_raw(nm)
}

/// Copy `size` bytes of trace data into the message, resizing its trace area when it has
/// another size (the caller's pointer stays valid); returns the bytes copied.
#[no_mangle]
pub unsafe extern "C" fn rmr_set_trace(m: *mut Mbuf, data: *const c_uchar, size: c_int) -> c_int {
    let Some(mb) = mbuf_ref(m) else {
        return 0;
    };
    if size <= 0 || data.is_null() {
        return 0;
    }
    let n = size as usize;
    mb.set_trace_len(n);
    let bytes = std::slice::from_raw_parts(data, n).to_vec();
    mb.trace_mut().copy_from_slice(&bytes);
    size
}

/// Copy up to `size` bytes of the message's trace data into `dest`; returns the count.
#[no_mangle]
pub unsafe extern "C" fn rmr_get_trace(m: *mut Mbuf, dest: *mut c_uchar, size: c_int) -> c_int {
    let Some(mb) = mbuf_ref(m) else {
        return 0;
    };
    if size <= 0 || dest.is_null() {
        return 0;
    }
    let tr = mb.trace();
    let n = tr.len().min(size as usize);
    std::ptr::copy_nonoverlapping(tr.as_ptr(), dest, n);
    n as c_int
}

#[no_mangle]
pub unsafe extern "C" fn rmr_get_trlen(m: *mut Mbuf) -> c_int {
    mbuf_ref(m).map_or(0, |mb| mb.trace_len() as c_int)
}

/// A pointer to the trace data inside the message (read it, do not write it), its size in
/// `*sizeptr`; nil when there is none.
#[no_mangle]
pub unsafe extern "C" fn rmr_trace_ref(m: *mut Mbuf, sizeptr: *mut c_int) -> *mut c_void {
    if !sizeptr.is_null() {
        *sizeptr = 0;
    }
    let Some(mb) = mbuf_ref(m) else {
        return std::ptr::null_mut();
    };
    let n = mb.trace_len();
    if n == 0 {
        return std::ptr::null_mut();
    }
    if !sizeptr.is_null() {
        *sizeptr = n as c_int;
    }
    mb.trace_mut().as_mut_ptr().cast()
}

#[no_mangle]
pub unsafe extern "C" fn rmr_realloc_payload(
    m: *mut Mbuf,
    new_len: c_int,
    copy: c_int,
    clone: c_int,
) -> *mut Mbuf {
    let Some(mb) = mbuf_ref(m) else {
        return std::ptr::null_mut();
    };
    if new_len < 0 {
        return std::ptr::null_mut();
    }
    if clone != 0 {
        into_raw(mb.clone_with_cap(new_len as usize, copy != 0))
    } else {
        mb.grow(new_len as usize, copy != 0);
        if copy == 0 {
            mb.len = 0;
        }
        m
    }
}

#[no_mangle]
pub unsafe extern "C" fn rmr_free_msg(m: *mut Mbuf) {
    if let Some(mb) = mbuf_ref(m) {
        mb.invalidate();
        drop(Box::from_raw(m));
    }
}

#[no_mangle]
pub unsafe extern "C" fn rmr_payload_size(m: *mut Mbuf) -> c_int {
    match mbuf_ref(m) {
        Some(mb) => mb.payload_cap().min(i32::MAX as usize) as c_int,
        None => -1,
    }
}

#[no_mangle]
pub unsafe extern "C" fn rmr_send_msg(vctx: *mut c_void, m: *mut Mbuf) -> *mut Mbuf {
    let Some(mb) = mbuf_ref(m) else {
        return m;
    };
    let Some(ctx) = ctx_ref(vctx) else {
        mb.state = RMR_ERR_BADARG;
        mb.tp_state = libc::EINVAL;
        return m;
    };
    if ctx.send_routed(mb, None) {
        mb.reset_fresh();
    }
    m
}

#[no_mangle]
pub unsafe extern "C" fn rmr_mtosend_msg(
    vctx: *mut c_void,
    m: *mut Mbuf,
    max_to: c_int,
) -> *mut Mbuf {
    if let Some(c) = ctx_ref(vctx) {
        c.set_retries(max_to);
    }
    rmr_send_msg(vctx, m)
}

#[no_mangle]
pub unsafe extern "C" fn rmr_rts_msg(vctx: *mut c_void, m: *mut Mbuf) -> *mut Mbuf {
    let Some(mb) = mbuf_ref(m) else {
        return m;
    };
    let Some(ctx) = ctx_ref(vctx) else {
        mb.state = RMR_ERR_BADARG;
        mb.tp_state = libc::EINVAL;
        return m;
    };
    ctx.rts(mb);
    m
}

unsafe fn receive_into(vctx: *mut c_void, old: *mut Mbuf, timeout: Option<Duration>) -> *mut Mbuf {
    let target: *mut Mbuf = match mbuf_ref(old) {
        Some(_) => old,
        None => {
            if ctx_ref(vctx).is_none() {
                return std::ptr::null_mut();
            }
            into_raw(Mbuf::alloc(0))
        }
    };
    let mb = &mut *target;
    let Some(ctx) = ctx_ref(vctx) else {
        mb.state = RMR_ERR_BADARG;
        mb.tp_state = libc::EINVAL;
        return target;
    };
    let got = match timeout {
        Some(t) => ctx.receive(Some(t)),
        None => loop {
            if let Some(m) = ctx.receive(None) {
                break Some(m);
            }
            if ctx.stopping() {
                break None;
            }
        },
    };
    match got {
        Some(msg) => mb.load(msg),
        None => {
            mb.len = 0;
            if timeout.is_some() && !ctx.stopping() {
                mb.state = RMR_ERR_TIMEOUT;
                mb.tp_state = libc::EAGAIN;
            } else {
                mb.state = RMR_ERR_RCVFAILED;
                mb.tp_state = libc::ECANCELED;
            }
        }
    }
    target
}

#[no_mangle]
pub unsafe extern "C" fn rmr_rcv_msg(vctx: *mut c_void, old: *mut Mbuf) -> *mut Mbuf {
    receive_into(vctx, old, None)
}

#[no_mangle]
pub unsafe extern "C" fn rmr_torcv_msg(
    vctx: *mut c_void,
    old: *mut Mbuf,
    ms_to: c_int,
) -> *mut Mbuf {
    let t = if ms_to < 0 {
        None
    } else {
        Some(Duration::from_millis(ms_to as u64))
    };
    receive_into(vctx, old, t)
}

#[no_mangle]
pub unsafe extern "C" fn rmr_mt_rcv(
    vctx: *mut c_void,
    old: *mut Mbuf,
    max_wait: c_int,
) -> *mut Mbuf {
    rmr_torcv_msg(vctx, old, max_wait)
}

unsafe fn do_call(
    vctx: *mut c_void,
    m: *mut Mbuf,
    call_id: c_int,
    max_wait: c_int,
    wh: Option<i32>,
) -> *mut Mbuf {
    let Some(mb) = mbuf_ref(m) else {
        return m;
    };
    let Some(ctx) = ctx_ref(vctx) else {
        mb.state = RMR_ERR_BADARG;
        mb.tp_state = libc::EINVAL;
        return m;
    };
    if !(1..=255).contains(&call_id) {
        mb.state = RMR_ERR_BADARG;
        mb.tp_state = libc::EINVAL;
        return m;
    }
    let wait = Duration::from_millis(max_wait.max(0) as u64);
    ctx.call(mb, call_id as u8, wait, wh);
    m
}

#[no_mangle]
pub unsafe extern "C" fn rmr_call(vctx: *mut c_void, m: *mut Mbuf) -> *mut Mbuf {
    do_call(vctx, m, 1, 1000, None)
}

#[no_mangle]
pub unsafe extern "C" fn rmr_mt_call(
    vctx: *mut c_void,
    m: *mut Mbuf,
    call_id: c_int,
    max_wait: c_int,
) -> *mut Mbuf {
    do_call(vctx, m, call_id, max_wait, None)
}

#[no_mangle]
pub unsafe extern "C" fn rmr_bytes2meid(m: *mut Mbuf, src: *const c_uchar, len: c_int) -> c_int {
    let Some(mb) = mbuf_ref(m) else {
        return -1;
    };
    if src.is_null() || len < 0 {
        return -1;
    }
    let n = (len as usize).min(frame::MEID_LEN);
    let bytes = std::slice::from_raw_parts(src, n).to_vec();
    let h = mb.header_mut();
    h[frame::OFF_MEID..frame::OFF_MEID + frame::MEID_LEN].fill(0);
    h[frame::OFF_MEID..frame::OFF_MEID + n].copy_from_slice(&bytes);
    n as c_int
}

#[no_mangle]
pub unsafe extern "C" fn rmr_str2meid(m: *mut Mbuf, s: *const c_uchar) -> c_int {
    if s.is_null() {
        return RMR_ERR_BADARG;
    }
    let b = CStr::from_ptr(s as *const c_char).to_bytes();
    if b.len() >= frame::MEID_LEN {
        return RMR_ERR_OVERFLOW;
    }
    if rmr_bytes2meid(m, s, b.len() as c_int) < 0 {
        return RMR_ERR_BADARG;
    }
    RMR_OK
}

#[no_mangle]
pub unsafe extern "C" fn rmr_get_meid(m: *mut Mbuf, dest: *mut c_uchar) -> *mut c_uchar {
    let Some(mb) = mbuf_ref(m) else {
        return std::ptr::null_mut();
    };
    let meid = mb.meid().to_vec();
    if dest.is_null() {
        return malloc_cstr(&meid) as *mut c_uchar;
    }
    copy_out(dest, &meid, frame::MEID_LEN)
}

#[no_mangle]
pub unsafe extern "C" fn rmr_get_src(m: *mut Mbuf, dest: *mut c_uchar) -> *mut c_uchar {
    let Some(mb) = mbuf_ref(m) else {
        return std::ptr::null_mut();
    };
    if dest.is_null() {
        return std::ptr::null_mut();
    }
    copy_out(dest, mb.src(), frame::SRC_LEN)
}

#[no_mangle]
pub unsafe extern "C" fn rmr_get_srcip(m: *mut Mbuf, dest: *mut c_uchar) -> *mut c_uchar {
    let Some(mb) = mbuf_ref(m) else {
        return std::ptr::null_mut();
    };
    if dest.is_null() {
        return std::ptr::null_mut();
    }
    copy_out(dest, mb.srcip(), frame::SRCIP_LEN)
}

#[no_mangle]
pub unsafe extern "C" fn rmr_bytes2xact(m: *mut Mbuf, src: *const c_uchar, len: c_int) -> c_int {
    let Some(mb) = mbuf_ref(m) else {
        return -1;
    };
    if src.is_null() || len < 0 {
        return -1;
    }
    let n = (len as usize).min(frame::XID_LEN);
    let bytes = std::slice::from_raw_parts(src, n).to_vec();
    mb.header_mut()[frame::OFF_XID..frame::OFF_XID + n].copy_from_slice(&bytes);
    n as c_int
}

#[no_mangle]
pub unsafe extern "C" fn rmr_bytes2payload(m: *mut Mbuf, src: *const c_uchar, len: c_int) {
    let Some(mb) = mbuf_ref(m) else {
        return;
    };
    if src.is_null() || len < 0 {
        return;
    }
    let n = (len as usize).min(mb.payload_cap());
    let bytes = std::slice::from_raw_parts(src, n).to_vec();
    mb.payload_mut()[..n].copy_from_slice(&bytes);
    mb.len = n as c_int;
}

#[no_mangle]
pub unsafe extern "C" fn rmr_wh_open(vctx: *mut c_void, target: *const c_char) -> c_int {
    let Some(ctx) = ctx_ref(vctx) else {
        return -1;
    };
    if target.is_null() {
        return -1;
    }
    let t = CStr::from_ptr(target).to_string_lossy().into_owned();
    ctx.wh_open(&t)
}

#[no_mangle]
pub unsafe extern "C" fn rmr_wh_send_msg(
    vctx: *mut c_void,
    whid: c_int,
    m: *mut Mbuf,
) -> *mut Mbuf {
    let Some(mb) = mbuf_ref(m) else {
        return m;
    };
    let Some(ctx) = ctx_ref(vctx) else {
        mb.state = RMR_ERR_BADARG;
        return m;
    };
    if ctx.wh_send(whid, mb, None) {
        mb.reset_fresh();
    }
    m
}

#[no_mangle]
pub unsafe extern "C" fn rmr_wh_call(
    vctx: *mut c_void,
    whid: c_int,
    m: *mut Mbuf,
    call_id: c_int,
    max_wait: c_int,
) -> *mut Mbuf {
    do_call(vctx, m, call_id, max_wait, Some(whid))
}

#[no_mangle]
pub unsafe extern "C" fn rmr_wh_state(vctx: *mut c_void, whid: c_int) -> c_int {
    match ctx_ref(vctx) {
        Some(c) => c.wh_state(whid),
        None => RMR_ERR_BADARG,
    }
}

#[no_mangle]
pub unsafe extern "C" fn rmr_wh_close(vctx: *mut c_void, whid: c_int) {
    if let Some(c) = ctx_ref(vctx) {
        c.wh_close(whid);
    }
}

#[no_mangle]
pub unsafe extern "C" fn rmr_get_consts() -> *mut c_char {
    malloc_cstr(consts_json().as_bytes())
}

#[no_mangle]
pub unsafe extern "C" fn rmr_free_consts(p: *mut c_char) {
    if !p.is_null() {
        libc::free(p as *mut c_void);
    }
}

/// octoric extension: counters as JSON (free with rmr_free_consts).
#[no_mangle]
pub unsafe extern "C" fn octoric_rmr_stats(vctx: *mut c_void) -> *mut c_char {
    match ctx_ref(vctx) {
        Some(c) => malloc_cstr(c.stats.json().as_bytes()),
        None => std::ptr::null_mut(),
    }
}

/// octoric extension: the port the data listener is bound to (useful with port 0).
#[no_mangle]
pub unsafe extern "C" fn octoric_rmr_port(vctx: *mut c_void) -> c_int {
    ctx_ref(vctx).map(|c| c.port as c_int).unwrap_or(-1)
}
