//! C ABI of the native path. A handle is one xApp's state (`fast::Fast`) behind a mutex: the
//! RMR receive thread (`occ_rmr_tap`) and the Python threads (every other call; ctypes drops
//! the GIL for each) take turns. Every entry point catches a panic and answers an error.

use crate::engine::{Engine, Out};
use crate::fast::{Config, Fast, ReportSent};
use crate::feedback::{Feedback, Flow, Format, Target};
use crate::kernel as K;
use octo_rmr_client::{AllocFn, FreeFn, MeidFn, Outcome, Retry, SendFn, Sender};
use std::ffi::{c_char, c_int, c_void, CStr};
use std::net::{IpAddr, SocketAddr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, MutexGuard};

pub struct Handle(Mutex<Fast>);

fn lock(h: *const Handle) -> MutexGuard<'static, Fast> {
    // SAFETY: the caller passes a handle from occ_new, not yet freed
    let h = unsafe { &*h };
    h.0.lock().unwrap_or_else(|e| e.into_inner())
}

unsafe fn cstr<'a>(p: *const c_char) -> &'a str {
    if p.is_null() {
        return "";
    }
    CStr::from_ptr(p).to_str().unwrap_or("")
}

fn guard<T>(err: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(err)
}

/// A new handle. `names`: `metrics.BLOCK_ROWS` then `kpm_input.SHOWN`, newline-separated, the
/// first `n_block` of them the block's rows.
///
/// # Safety
/// `params` must hold `n_params` doubles; the strings must be NUL-terminated.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn occ_new(
    params: *const f64,
    n_params: usize,
    hist: usize,
    lw: usize,
    expire_ms: i64,
    prb_total: f64,
    ran_function: u16,
    granularity_ms: i64,
    max_clock_ahead_ms: f64,
    max_time_overlap_ms: i64,
    publish_reports: c_int,
    names: *const c_char,
    n_block: usize,
    schema: *const c_char,
    version: i64,
    min_change: f64,
    max_interval_s: f64,
) -> *mut Handle {
    guard(std::ptr::null_mut(), || {
        if params.is_null() || n_params != K::N_P || hist == 0 || lw == 0 || n_block != K::N_ROWS {
            return std::ptr::null_mut();
        }
        let p = std::slice::from_raw_parts(params, n_params);
        let all: Vec<String> = cstr(names)
            .split('\n')
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect();
        if all.len() < n_block {
            return std::ptr::null_mut();
        }
        let cfg = Config {
            ran_function,
            granularity_ms,
            max_clock_ahead_ms,
            max_time_overlap_ms,
            publish_reports: publish_reports != 0,
            block_names: all[..n_block].to_vec(),
            shown: all[n_block..].to_vec(),
            schema: cstr(schema).to_string(),
            version,
        };
        let engine = Engine::new(p, hist, lw, expire_ms, prb_total);
        let fast = Fast::new(cfg, engine, Feedback::new(min_change, max_interval_s));
        Box::into_raw(Box::new(Handle(Mutex::new(fast))))
    })
}

/// # Safety
/// `h` from occ_new, not used after.
#[no_mangle]
pub unsafe extern "C" fn occ_free(h: *mut Handle) {
    if !h.is_null() {
        drop(Box::from_raw(h));
    }
}

/// A fresh engine with new parameters (a descriptor that changes them): flows, node clocks
/// and counters stay. 0: done; 2: bad arguments.
///
/// # Safety
/// `params` must hold `n_params` doubles.
#[no_mangle]
pub unsafe extern "C" fn occ_reset_engine(
    h: *const Handle,
    params: *const f64,
    n_params: usize,
    hist: usize,
    lw: usize,
    expire_ms: i64,
    prb_total: f64,
) -> c_int {
    guard(2, || {
        if params.is_null() || n_params != K::N_P || hist == 0 || lw == 0 {
            return 2;
        }
        let p = std::slice::from_raw_parts(params, n_params);
        let mut f = lock(h);
        f.engine = Engine::new(p, hist, lw, expire_ms, prb_total);
        f.latest.clear();
        0
    })
}

/// Settings that may change with the descriptor (the engine's are fixed per handle).
///
/// # Safety
/// `h` from occ_new.
#[no_mangle]
pub unsafe extern "C" fn occ_configure(
    h: *const Handle,
    granularity_ms: i64,
    max_clock_ahead_ms: f64,
    max_time_overlap_ms: i64,
    publish_reports: c_int,
    min_change: f64,
    max_interval_s: f64,
) {
    guard((), || {
        let mut f = lock(h);
        f.cfg.granularity_ms = granularity_ms;
        f.cfg.max_clock_ahead_ms = max_clock_ahead_ms;
        f.cfg.max_time_overlap_ms = max_time_overlap_ms;
        f.cfg.publish_reports = publish_reports != 0;
        f.fb.min_change = min_change;
        f.fb.max_interval_s = max_interval_s;
    })
}

// ---- RMR: the receive thread's tap and the 30500 sends --------------------------------------

/// The 30500 reports go out through RMR's C API on `ctx` (the xApp's own context): the
/// functions of the library the xApp loaded, passed by address.
///
/// # Safety
/// `h` from occ_new; the functions RMR's, `ctx` a live context of that library.
#[no_mangle]
pub unsafe extern "C" fn occ_set_reporter(
    h: *const Handle,
    ctx: *mut c_void,
    alloc: AllocFn,
    send: SendFn,
    free: FreeFn,
    bytes2meid: MeidFn,
    mtype: c_int,
    retries: c_int,
) {
    guard((), || {
        let sender = Sender::new(ctx, alloc, send, free, bytes2meid);
        let retry = Retry::Times(retries.max(0) as u32);
        lock(h).reporter = Some(Box::new(move |payload: &[u8], meid: &str, _sub: i32| {
            let mut waited = 0;
            // one-way publication: sub_id -1, no transaction ID (as the Python path)
            match sender.send(payload, mtype, -1, meid.as_bytes(), retry, &mut waited) {
                Outcome::Sent => ReportSent::Ok,
                Outcome::NoRoute => ReportSent::NoRoute,
                Outcome::Failed | Outcome::GaveUp => ReportSent::Failed,
            }
        }));
    })
}

/// Tests: keep the 30500 reports instead of sending them; `occ_captured_report` hands them out.
///
/// # Safety
/// `h` from occ_new.
#[no_mangle]
pub unsafe extern "C" fn occ_capture_reports(h: *const Handle) {
    guard((), || lock(h).captured = Some(Vec::new()))
}

/// The oldest captured report (removed): its length, written when it fits in `cap`; 0: none.
///
/// # Safety
/// `buf` cap bytes.
#[no_mangle]
pub unsafe extern "C" fn occ_captured_report(h: *const Handle, buf: *mut u8, cap: usize) -> usize {
    guard(0, || {
        let mut f = lock(h);
        let Some(c) = f.captured.as_mut() else {
            return 0;
        };
        let Some(first) = c.first() else {
            return 0;
        };
        let n = first.len();
        if n <= cap {
            std::ptr::copy_nonoverlapping(first.as_ptr(), buf, n);
            c.remove(0);
        }
        n
    })
}

/// The tap RMR calls for each received message of the type it was set for (in its receive
/// thread): 0 when handled here, 1 when the message should be queued for the xApp's Python
/// receive loop as usual.
///
/// # Safety
/// `user` a handle from occ_new; `payload` `len` bytes, `meid` `meid_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn occ_rmr_tap(
    user: *mut c_void,
    payload: *const u8,
    len: c_int,
    meid: *const u8,
    meid_len: c_int,
    sub_id: c_int,
) -> c_int {
    let t_in = crate::trace::monotonic_ns();
    guard(1, || {
        if user.is_null() || payload.is_null() || len <= 0 {
            return 1;
        }
        let data = std::slice::from_raw_parts(payload, len as usize);
        let m = if meid.is_null() || meid_len <= 0 {
            &[][..]
        } else {
            std::slice::from_raw_parts(meid, meid_len as usize)
        };
        let Ok(m) = std::str::from_utf8(m) else {
            return 1;
        };
        let mut f = lock(user as *const Handle);
        if f.handle(data, m, sub_id, t_in) {
            0
        } else {
            1
        }
    })
}

/// The tap's function, by address (for `rmr_octo_set_tap`).
#[no_mangle]
pub extern "C" fn occ_rmr_tap_fn() -> *const c_void {
    occ_rmr_tap as *const c_void
}

/// `occ_rmr_tap` without RMR (tests, the differential check): 0 handled, 1 declined.
///
/// # Safety
/// As `occ_rmr_tap`; `meid` NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn occ_handle(
    h: *const Handle,
    payload: *const u8,
    len: usize,
    meid: *const c_char,
    sub_id: c_int,
) -> c_int {
    let m = cstr(meid);
    occ_rmr_tap(
        h as *mut c_void,
        payload,
        len as c_int,
        m.as_ptr(),
        m.len() as c_int,
        sub_id,
    )
}

/// An engine result into the caller's arrays (n UEs, g granules: target/b/cp n*g, last
/// n*N_O, state/ho/outage/fallback n).
#[allow(clippy::too_many_arguments)]
unsafe fn copy_out(
    out: &Out,
    target: *mut f64,
    b: *mut f64,
    cp: *mut f64,
    last: *mut f64,
    state: *mut i8,
    ho: *mut u8,
    outage: *mut u8,
    fallback: *mut u8,
) {
    let (n, g) = (out.n, out.g);
    std::ptr::copy_nonoverlapping(out.target.as_ptr(), target, n * g);
    std::ptr::copy_nonoverlapping(out.b.as_ptr(), b, n * g);
    std::ptr::copy_nonoverlapping(out.cp.as_ptr(), cp, n * g);
    std::ptr::copy_nonoverlapping(out.last.as_ptr(), last, n * K::N_O);
    for i in 0..n {
        *state.add(i) = out.state[i];
        *ho.add(i) = out.ho[i] as u8;
        *outage.add(i) = out.outage[i] as u8;
        *fallback.add(i) = out.fallback[i] as u8;
    }
}

// ---- the engine, for the Python path -----------------------------------------------------------

/// `OccEngine.ingest` of a checked block ((7, n, g) doubles). 0: done, outputs written; 1:
/// refused for time (`bad` gets up to `bad_cap` UE ids, `n_bad` how many); 2: bad arguments.
///
/// # Safety
/// Arrays of the sizes named: ids n, blk 7*n*g, target/b/cp n*g, last n*6, state/ho/outage/
/// fallback n, bad bad_cap.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn occ_ingest(
    h: *const Handle,
    ids: *const i64,
    n: usize,
    t0: i64,
    blk: *const f64,
    g: usize,
    target: *mut f64,
    b: *mut f64,
    cp: *mut f64,
    last: *mut f64,
    state: *mut i8,
    ho: *mut u8,
    outage: *mut u8,
    fallback: *mut u8,
    bad: *mut i64,
    bad_cap: usize,
    n_bad: *mut usize,
) -> c_int {
    guard(2, || {
        if n == 0 || g == 0 {
            return 2;
        }
        let ids = std::slice::from_raw_parts(ids, n);
        let blk = std::slice::from_raw_parts(blk, K::N_ROWS * n * g);
        let mut out = Out::default();
        let mut f = lock(h);
        match f.engine.ingest(ids, t0, blk, g, &mut out) {
            Ok(()) => {
                copy_out(&out, target, b, cp, last, state, ho, outage, fallback);
                0
            }
            Err(r) => {
                *n_bad = r.bad.len();
                for (i, u) in r.bad.iter().take(bad_cap).enumerate() {
                    *bad.add(i) = *u;
                }
                1
            }
        }
    })
}

/// # Safety
/// `h` from occ_new.
#[no_mangle]
pub unsafe extern "C" fn occ_handover(
    h: *const Handle,
    ue: i64,
    start: c_int,
    t_ms: i64,
    has_t: c_int,
) {
    guard((), || {
        lock(h)
            .engine
            .on_handover(ue, start != 0, (has_t != 0).then_some(t_ms))
    })
}

/// # Safety
/// `out` 2 doubles.
#[no_mangle]
pub unsafe extern "C" fn occ_latest(h: *const Handle, ue: i64, out: *mut f64) -> c_int {
    guard(0, || match lock(h).engine.latest(ue) {
        Some((t, fb)) => {
            *out = t;
            *out.add(1) = if fb { 1.0 } else { 0.0 };
            1
        }
        None => 0,
    })
}

/// # Safety
/// `h` from occ_new.
#[no_mangle]
pub unsafe extern "C" fn occ_last_r(h: *const Handle, ue: i64) -> f64 {
    guard(0.0, || lock(h).engine.last_r(ue))
}

/// Expire; writes up to `cap` ids, returns how many expired.
///
/// # Safety
/// `out` cap i64.
#[no_mangle]
pub unsafe extern "C" fn occ_expire(
    h: *const Handle,
    now: i64,
    out: *mut i64,
    cap: usize,
) -> usize {
    guard(0, || {
        let gone = lock(h).engine.expire(now);
        for (i, u) in gone.iter().take(cap).enumerate() {
            *out.add(i) = *u;
        }
        gone.len()
    })
}

/// The UEs with state: writes up to `cap`, returns how many there are.
///
/// # Safety
/// `out` cap i64.
#[no_mangle]
pub unsafe extern "C" fn occ_ue_ids(h: *const Handle, out: *mut i64, cap: usize) -> usize {
    guard(0, || {
        let ids = lock(h).engine.ue_ids();
        for (i, u) in ids.iter().take(cap).enumerate() {
            *out.add(i) = *u;
        }
        ids.len()
    })
}

/// [batches, ue_samples, ues_created, ues_expired, handover_events, hist, lw].
///
/// # Safety
/// `out` 7 u64.
#[no_mangle]
pub unsafe extern "C" fn occ_stats(h: *const Handle, out: *mut u64) {
    guard((), || {
        let f = lock(h);
        let s = f.engine.stats;
        let v = [
            s.batches,
            s.ue_samples,
            s.ues_created,
            s.ues_expired,
            s.handover_events,
            f.engine.hist() as u64,
            f.engine.lw() as u64,
        ];
        std::slice::from_raw_parts_mut(out, 7).copy_from_slice(&v);
    })
}

/// The state of the `n` UEs `ids` into row-major arrays (per UE: ist N_I, fst N_F,
/// ring_u/ring_a/ring_c hist, dq_t/dq_v 3*lw, flags 2, last_out 2); `found[i]` 1 when UE
/// `ids[i]` is known (its row written), 0 when not. Returns how many were found. The caller
/// exports a few UEs per call: the indication path waits for this lock, so a checkpoint of
/// every UE at once held it for 3-9 ms at 300 UEs (the arrays' first touch included).
///
/// # Safety
/// `ids` and `found` `n` elements; the arrays sized for `n` UEs as above.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn occ_export_ues(
    h: *const Handle,
    n: usize,
    ids: *const i64,
    found: *mut u8,
    ist: *mut i64,
    fst: *mut f64,
    ring_u: *mut f64,
    ring_a: *mut f64,
    ring_c: *mut i64,
    dq_t: *mut i64,
    dq_v: *mut f64,
    flags: *mut i64,
    last_out: *mut f64,
) -> usize {
    guard(0, || {
        if n == 0 {
            return 0;
        }
        let ids = std::slice::from_raw_parts(ids, n);
        let f = lock(h);
        let e = &f.engine;
        let (hh, lw) = (e.hist(), e.lw());
        let sl = |p: *mut f64, i: usize, w: usize| std::slice::from_raw_parts_mut(p.add(i * w), w);
        let si = |p: *mut i64, i: usize, w: usize| std::slice::from_raw_parts_mut(p.add(i * w), w);
        let mut k = 0;
        for (i, &u) in ids.iter().enumerate() {
            let ok = e.export_ue(
                u,
                si(ist, i, K::N_I),
                sl(fst, i, K::N_F),
                sl(ring_u, i, hh),
                sl(ring_a, i, hh),
                si(ring_c, i, hh),
                si(dq_t, i, 3 * lw),
                sl(dq_v, i, 3 * lw),
                si(flags, i, 2),
                sl(last_out, i, 2),
            );
            *found.add(i) = u8::from(ok);
            k += usize::from(ok);
        }
        k
    })
}

/// One UE's state from `occ_export_ues` rows (`OccEngine.import_ue`; the caller checked shapes).
///
/// # Safety
/// Arrays of one UE's sizes (see occ_export_ues).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn occ_import(
    h: *const Handle,
    ue: i64,
    ist: *const i64,
    fst: *const f64,
    ring_u: *const f64,
    ring_a: *const f64,
    ring_c: *const i64,
    dq_t: *const i64,
    dq_v: *const f64,
    flags: *const i64,
    last_out: *const f64,
) {
    guard((), || {
        let mut f = lock(h);
        let (hh, lw) = (f.engine.hist(), f.engine.lw());
        let r = |p: *const f64, w: usize| std::slice::from_raw_parts(p, w);
        let ri = |p: *const i64, w: usize| std::slice::from_raw_parts(p, w);
        f.engine.import_ue(
            ue,
            ri(ist, K::N_I),
            r(fst, K::N_F),
            r(ring_u, hh),
            r(ring_a, hh),
            ri(ring_c, hh),
            ri(dq_t, 3 * lw),
            r(dq_v, 3 * lw),
            ri(flags, 2),
            r(last_out, 2),
        );
    })
}

// ---- the node clock continuation, and nodes the native path leaves to Python -------------------

/// `_continue_small_overlap` for the Python path: the start to use (`shifted` set when it
/// moved), and the node's next start recorded.
///
/// # Safety
/// `meid` NUL-terminated; `shifted` one int.
#[no_mangle]
pub unsafe extern "C" fn occ_continue(
    h: *const Handle,
    meid: *const c_char,
    t0: i64,
    span_ms: i64,
    shifted: *mut c_int,
) -> i64 {
    guard(t0, || {
        let m = cstr(meid);
        let mut f = lock(h);
        let (t, s) = f.continued(m, t0);
        *shifted = s as c_int;
        f.next_t0.insert(m.to_string(), t + span_ms);
        t
    })
}

/// The node's next start (`_next_t0`); 0 when none (then `*found` is 0).
///
/// # Safety
/// `meid` NUL-terminated; `found` one int.
#[no_mangle]
pub unsafe extern "C" fn occ_next_t0(
    h: *const Handle,
    meid: *const c_char,
    found: *mut c_int,
) -> i64 {
    guard(0, || {
        let f = lock(h);
        let v = f.next_t0.get(cstr(meid)).copied();
        *found = v.is_some() as c_int;
        v.unwrap_or(0)
    })
}

/// A node that announces E2SM-KPM v02.03 (`whole` 1): its whole-second stamps continue the
/// node's previous report (`_whole_second_start`).
///
/// # Safety
/// `meid` NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn occ_set_whole_second(h: *const Handle, meid: *const c_char, whole: c_int) {
    guard((), || {
        let m = cstr(meid).to_string();
        let mut f = lock(h);
        if whole != 0 {
            f.whole_second_nodes.insert(m);
        } else {
            f.whole_second_nodes.remove(&m);
        }
    })
}

// ---- feedback -----------------------------------------------------------------------------------

fn target(bps: f64, fb: c_int, has_g: c_int, g: u64, t_ms: i64) -> Target {
    Target {
        bps,
        fallback: fb != 0,
        guami: (has_g != 0).then_some(g),
        t_ms,
    }
}

/// Register a flow (`FeedbackSender.add`): `ip` a numeric IPv4/IPv6 address; `known` the
/// xApp's record of the UE's target (has_known 0: none). 0: done; 2: bad address.
///
/// # Safety
/// Strings NUL-terminated; `ssrcs` n_ssrcs u32.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn occ_fb_add(
    h: *const Handle,
    id: *const c_char,
    ue: i64,
    ip: *const c_char,
    port: u16,
    remb: c_int,
    has_guami: c_int,
    guami: u64,
    ssrcs: *const u32,
    n_ssrcs: usize,
    sender_ssrc: u32,
    has_known: c_int,
    known_bps: f64,
    known_fb: c_int,
    known_has_guami: c_int,
    known_guami: u64,
    known_t_ms: i64,
) -> c_int {
    guard(2, || {
        let Ok(addr) = cstr(ip).parse::<IpAddr>() else {
            return 2;
        };
        let ss = if n_ssrcs == 0 {
            Vec::new()
        } else {
            std::slice::from_raw_parts(ssrcs, n_ssrcs).to_vec()
        };
        let flow = Flow {
            ue,
            addr: SocketAddr::new(addr, port),
            format: if remb != 0 {
                Format::Remb
            } else {
                Format::Json
            },
            guami: (has_guami != 0).then_some(guami),
            ssrcs: ss,
            sender_ssrc,
        };
        let known = (has_known != 0).then(|| {
            target(
                known_bps,
                known_fb,
                known_has_guami,
                known_guami,
                known_t_ms,
            )
        });
        lock(h).fb.add(cstr(id).to_string(), flow, known);
        0
    })
}

/// # Safety
/// `id` NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn occ_fb_remove(h: *const Handle, id: *const c_char) -> c_int {
    guard(0, || lock(h).fb.remove(cstr(id)) as c_int)
}

/// # Safety
/// `h` from occ_new.
#[no_mangle]
pub unsafe extern "C" fn occ_fb_forget(h: *const Handle, ue: i64) {
    guard((), || lock(h).fb.forget(ue))
}

/// # Safety
/// `h` from occ_new.
#[no_mangle]
pub unsafe extern "C" fn occ_fb_update(
    h: *const Handle,
    ue: i64,
    bps: f64,
    fb: c_int,
    has_g: c_int,
    g: u64,
    t_ms: i64,
) {
    guard((), || {
        lock(h).fb.update(ue, target(bps, fb, has_g, g, t_ms))
    })
}

/// # Safety
/// Arrays of `n`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn occ_fb_update_batch(
    h: *const Handle,
    ues: *const i64,
    n: usize,
    bps: *const f64,
    fb: *const u8,
    has_g: *const u8,
    g: *const u64,
    t_ms: i64,
) {
    guard((), || {
        if n == 0 {
            return;
        }
        let ues = std::slice::from_raw_parts(ues, n);
        let bps = std::slice::from_raw_parts(bps, n);
        let fbs: Vec<bool> = std::slice::from_raw_parts(fb, n)
            .iter()
            .map(|&x| x != 0)
            .collect();
        let hg = std::slice::from_raw_parts(has_g, n);
        let gs = std::slice::from_raw_parts(g, n);
        let guamis: Vec<Option<u64>> = (0..n).map(|i| (hg[i] != 0).then_some(gs[i])).collect();
        lock(h)
            .fb
            .update_batch(ues, |i| bps[i], &fbs, &guamis, t_ms);
    })
}

/// `FeedbackSender.tick`: the seconds until the next flow falls due.
///
/// # Safety
/// `h` from occ_new.
#[no_mangle]
pub unsafe extern "C" fn occ_fb_tick(h: *const Handle) -> f64 {
    guard(0.01, || lock(h).fb.tick())
}

fn put(buf: *mut c_char, cap: usize, s: &str) -> usize {
    if s.len() < cap {
        // SAFETY: the caller's buffer holds cap bytes
        unsafe {
            std::ptr::copy_nonoverlapping(s.as_ptr(), buf as *mut u8, s.len());
            *buf.add(s.len()) = 0;
        }
    }
    s.len()
}

/// The feedback counters as JSON (`{"sent_json": 12, ...}`); returns the length (written
/// only when it fits in `cap` with its NUL).
///
/// # Safety
/// `buf` cap bytes.
#[no_mangle]
pub unsafe extern "C" fn occ_fb_counters(h: *const Handle, buf: *mut c_char, cap: usize) -> usize {
    guard(0, || {
        let f = lock(h);
        let body: Vec<String> =
            f.fb.counters
                .iter()
                .map(|(k, v)| format!("\"{k}\":{v}"))
                .collect();
        put(buf, cap, &format!("{{{}}}", body.join(",")))
    })
}

// ---- what the native path did, for Python's counters, records and KPIs --------------------------

/// The counters since the last take, as JSON, and the latencies (ns, up to `lat_cap`; the
/// rest dropped and counted in `latency_dropped`). Returns the JSON's length (written when it
/// fits in `cap`; nothing is taken otherwise).
///
/// # Safety
/// `buf` cap bytes, `lat` lat_cap u64, `n_lat` one usize.
#[no_mangle]
pub unsafe extern "C" fn occ_take(
    h: *const Handle,
    buf: *mut c_char,
    cap: usize,
    lat: *mut u64,
    lat_cap: usize,
    n_lat: *mut usize,
) -> usize {
    guard(0, || {
        let mut f = lock(h);
        let t = &f.taken;
        let inst: Vec<String> = t
            .by_instance
            .iter()
            .map(|(k, v)| format!("\"{k}\":{v}"))
            .collect();
        let fresh: Vec<String> = f
            .latest
            .iter()
            .filter(|(_, l)| l.fresh)
            .map(|(m, _)| serde_str(m))
            .collect();
        let dropped = t.latency_ns.len().saturating_sub(lat_cap);
        let why: Vec<String> = t
            .declined_by
            .iter()
            .map(|(k, v)| format!("\"{k}\":{v}"))
            .collect();
        let s = format!(
            "{{\"indications\":{},\"ue_samples\":{},\"time_overlap_shifted\":{},\"reports_sent\":{},\
             \"reports_unsent\":{},\"reports_skipped_no_route\":{},\"declined\":{},\
             \"latency_dropped\":{dropped},\"declined_by\":{{{}}},\"by_instance\":{{{}}},\
             \"fresh\":[{}]}}",
            t.indications, t.ue_samples, t.time_overlap_shifted, t.reports_sent, t.reports_unsent,
            t.reports_skipped_no_route, t.declined, why.join(","), inst.join(","), fresh.join(",")
        );
        let len = put(buf, cap, &s);
        if len >= cap {
            return len;
        }
        let k = t.latency_ns.len().min(lat_cap);
        std::ptr::copy_nonoverlapping(t.latency_ns.as_ptr(), lat, k);
        *n_lat = k;
        f.taken = Default::default();
        len
    })
}

fn serde_str(s: &str) -> String {
    let mut o = String::new();
    crate::fast::json_escape(&mut o, s);
    o
}

/// The sizes of node `meid`'s latest handled indication: [found, n, g, n_metrics]; its metric
/// names newline-separated into `names` (cap bytes).
///
/// # Safety
/// `meid` NUL-terminated; `out` 4 u64; `names` cap bytes.
#[no_mangle]
pub unsafe extern "C" fn occ_latest_sizes(
    h: *const Handle,
    meid: *const c_char,
    out: *mut u64,
    names: *mut c_char,
    cap: usize,
) {
    guard((), || {
        let f = lock(h);
        let o = std::slice::from_raw_parts_mut(out, 4);
        o.fill(0);
        if let Some(l) = f.latest.get(cstr(meid)) {
            o.copy_from_slice(&[1, l.out.n as u64, l.out.g as u64, l.names.len() as u64]);
            put(names, cap, &l.names.join("\n"));
        }
    })
}

/// Node `meid`'s latest handled indication, sized by occ_latest_sizes (n UEs, g granules, m
/// metrics): ues n, guami n (has_g n), target/b/cp n*g, last n*6, state/ho/outage/fallback
/// n, metrics m*n*g, info [t_ms, t0_ms, sn (-1: none)], at (wall s). Marks it taken.
/// 0: done; 1: its shape changed since the sizes were read (read them again).
///
/// # Safety
/// Arrays as sized.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn occ_latest_fetch(
    h: *const Handle,
    meid: *const c_char,
    n: usize,
    g: usize,
    m: usize,
    ues: *mut i64,
    guami: *mut u64,
    has_g: *mut u8,
    target: *mut f64,
    b: *mut f64,
    cp: *mut f64,
    last: *mut f64,
    state: *mut i8,
    ho: *mut u8,
    outage: *mut u8,
    fallback: *mut u8,
    metrics: *mut f64,
    info: *mut i64,
    at: *mut f64,
) -> c_int {
    guard(1, || {
        let mut f = lock(h);
        let Some(l) = f.latest.get_mut(cstr(meid)) else {
            return 1;
        };
        if l.out.n != n || l.out.g != g || l.names.len() != m {
            return 1;
        }
        std::ptr::copy_nonoverlapping(l.ues.as_ptr(), ues, n);
        for i in 0..n {
            *guami.add(i) = l.guamis[i].unwrap_or(0);
            *has_g.add(i) = l.guamis[i].is_some() as u8;
        }
        copy_out(&l.out, target, b, cp, last, state, ho, outage, fallback);
        std::ptr::copy_nonoverlapping(l.metrics.as_ptr(), metrics, m * n * g);
        *info = l.out.t_ms;
        *info.add(1) = l.t0_ms;
        *info.add(2) = l.sn.map_or(-1, |s| s as i64);
        *at = l.at;
        l.fresh = false;
        0
    })
}
