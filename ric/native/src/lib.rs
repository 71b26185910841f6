//! e2term's hot path natively (issue #44): once an E2 node (TCP framing) is set up, a thread
//! reads its socket; each RIC indication goes to RMR as e2term's Python path sends it
//! (RIC_INDICATION, sub_id = the RIC instance ID, meid = the node), waiting out a full peer
//! (RMR_ERR_RETRY) up to the same patience, so a slow xApp slows the node (TCP backpressure)
//! instead of losing indications. Every other PDU, and how the connection ended, goes to
//! e2term's Python loop through a socket pair, framed as on the wire (a length of 0xFFFFFFFF
//! and one reason octet at the end), so setup, subscriptions, errors and node loss stay where
//! they are. Python measured ~100 us per relayed indication (asyncio reads + ctypes send);
//! at 5 k indications/s e2term was the loop's bottleneck (`octoric bench loop`, docs/occ.md).

use std::ffi::{c_char, c_int, c_void, CStr};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

pub use octo_rmr_client::monotonic_ns;
use octo_rmr_client::{AllocFn, FreeFn, MeidFn, Outcome, Retry, SendFn, Sender};

const MAX_PDU: usize = 1 << 20; // e2sm/transport.py MAX_PDU
pub const END_EOF: u8 = 0;
pub const END_FRAMING: u8 = 1;
pub const END_TIMEOUT: u8 = 2;
pub const END_IO: u8 = 3;
/// RMR on e2term's context, and how long a full xApp is waited out.
struct Rmr {
    sender: Sender,
    mtype: c_int,
    patience: std::time::Duration,
}

/// Counters of one relayed connection (read by Python).
#[derive(Default)]
pub struct Stats {
    pub indications: AtomicU64,
    pub to_python: AtomicU64,
    pub sent: AtomicU64,
    pub send_failures: AtomicU64,
    pub waited: AtomicU64,
    pub gave_up: AtomicU64,
    pub last_rx_ns: AtomicU64,
    pub running: AtomicBool,
    pub ended: AtomicU64, // END_* + 1 once it ended
    /// forwarding latencies (ns) not yet taken by Python
    pub latencies: Mutex<Vec<u64>>,
}

pub struct Conn {
    fd: c_int,
    pub stats: Arc<Stats>,
    thread: Option<std::thread::JoinHandle<()>>,
}

pub struct Relay {
    rmr: Arc<Rmr>,
    conns: Mutex<Vec<Option<Conn>>>,
}

/// Read exactly `buf.len()` octets from a (maybe non-blocking) socket; `first`: the octets
/// the Python side had read already. Err(END_*) when the connection ends; a frame started and
/// not complete within `timeout_ms` is END_TIMEOUT.
fn read_exact(
    fd: c_int,
    buf: &mut [u8],
    pre: &mut Vec<u8>,
    started: bool,
    timeout_ms: c_int,
) -> Result<(), u8> {
    let mut got = 0;
    if !pre.is_empty() {
        let n = pre.len().min(buf.len());
        buf[..n].copy_from_slice(&pre[..n]);
        pre.drain(..n);
        got = n;
    }
    let deadline = monotonic_ns() + timeout_ms as u64 * 1_000_000;
    while got < buf.len() {
        // SAFETY: the rest of buf is writable
        let n = unsafe { libc::read(fd, buf[got..].as_mut_ptr() as *mut c_void, buf.len() - got) };
        if n > 0 {
            got += n as usize;
            continue;
        }
        if n == 0 {
            return Err(if got == 0 && !started {
                END_EOF
            } else {
                END_IO
            });
        }
        let e = std::io::Error::last_os_error().raw_os_error();
        if e == Some(libc::EINTR) {
            continue;
        }
        if e != Some(libc::EAGAIN) {
            return Err(END_IO);
        }
        let mid = started || got > 0;
        let wait = if mid {
            let left = deadline.saturating_sub(monotonic_ns()) / 1_000_000;
            if left == 0 {
                return Err(END_TIMEOUT);
            }
            left.min(c_int::MAX as u64) as c_int
        } else {
            -1
        };
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd
        unsafe { libc::poll(&mut p, 1, wait) };
    }
    Ok(())
}

fn write_all(fd: c_int, mut buf: &[u8]) -> bool {
    while !buf.is_empty() {
        // SAFETY: buf is readable
        let n = unsafe { libc::write(fd, buf.as_ptr() as *const c_void, buf.len()) };
        if n > 0 {
            buf = &buf[n as usize..];
            continue;
        }
        let e = std::io::Error::last_os_error().raw_os_error();
        if e == Some(libc::EAGAIN) || e == Some(libc::EINTR) {
            let mut p = libc::pollfd {
                fd,
                events: libc::POLLOUT,
                revents: 0,
            };
            // SAFETY: one valid pollfd
            unsafe { libc::poll(&mut p, 1, 1000) };
            continue;
        }
        return false;
    }
    true
}

impl Rmr {
    /// Send one indication, waiting out a full peer up to the patience (send_patiently).
    fn send(&self, pdu: &[u8], sub_id: c_int, meid: &[u8], st: &Stats) -> bool {
        let mut waited = 0;
        let out = self.sender.send(
            pdu,
            self.mtype,
            sub_id,
            meid,
            Retry::For(self.patience),
            &mut waited,
        );
        st.waited.fetch_add(waited, Ordering::Relaxed);
        match out {
            Outcome::Sent => {
                st.sent.fetch_add(1, Ordering::Relaxed);
                true
            }
            Outcome::GaveUp => {
                st.gave_up.fetch_add(1, Ordering::Relaxed);
                st.send_failures.fetch_add(1, Ordering::Relaxed);
                false
            }
            Outcome::NoRoute | Outcome::Failed => {
                st.send_failures.fetch_add(1, Ordering::Relaxed);
                false
            }
        }
    }
}

struct Trace(std::fs::File);

impl Trace {
    fn from_env() -> Option<Trace> {
        let dir = std::env::var_os("OCTORIC_LATENCY_TRACE")?;
        if dir.is_empty() {
            return None;
        }
        let dir = std::path::PathBuf::from(dir);
        std::fs::create_dir_all(&dir).ok()?;
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join(format!("e2term_in-{}-relay.trace", std::process::id())))
            .ok()?;
        Some(Trace(f))
    }
}

#[allow(clippy::too_many_arguments)]
fn run(
    fd: c_int,
    out: c_int,
    meid: Vec<u8>,
    mut pre: Vec<u8>,
    timeout_ms: c_int,
    rmr: Arc<Rmr>,
    st: Arc<Stats>,
) {
    let mut trace = Trace::from_env();
    let mut head = [0u8; 4];
    let mut pdu = Vec::with_capacity(64 << 10);
    let end = loop {
        if let Err(e) = read_exact(fd, &mut head, &mut pre, false, timeout_ms) {
            break e;
        }
        let n = u32::from_be_bytes(head) as usize;
        if n == 0 || n > MAX_PDU {
            break END_FRAMING;
        }
        pdu.resize(n, 0);
        if let Err(e) = read_exact(fd, &mut pdu, &mut pre, true, timeout_ms) {
            break e;
        }
        let arrived = monotonic_ns();
        st.last_rx_ns.store(arrived, Ordering::Relaxed);
        match octo_e2sm::ricind::request_id(&pdu) {
            Ok((_, instance)) => {
                st.indications.fetch_add(1, Ordering::Relaxed);
                rmr.send(&pdu, instance as c_int, &meid, &st);
                let done = monotonic_ns();
                if let Ok(mut l) = st.latencies.lock() {
                    if l.len() < 1 << 20 {
                        l.push(done - arrived);
                    }
                }
                if let Some(t) = trace.as_mut() {
                    let line = format!(
                        "e2term_in {arrived} {:08x}:{}\n",
                        crc32fast::hash(&pdu),
                        pdu.len()
                    );
                    let _ = t.0.write_all(line.as_bytes());
                }
            }
            Err(_) => {
                st.to_python.fetch_add(1, Ordering::Relaxed);
                if !(write_all(out, &head) && write_all(out, &pdu)) {
                    break END_IO;
                }
            }
        }
    };
    let _ = write_all(out, &[0xFF, 0xFF, 0xFF, 0xFF, end]);
    st.ended.store(end as u64 + 1, Ordering::Release);
    st.running.store(false, Ordering::Release);
    // SAFETY: `out` is this thread's (handed over by e2relay_add); `fd` is closed by
    // e2relay_close after the join, so its number is not reused while it may be shut down
    unsafe { libc::close(out) };
}

unsafe fn cstr<'a>(p: *const c_char) -> &'a [u8] {
    if p.is_null() {
        &[]
    } else {
        CStr::from_ptr(p).to_bytes()
    }
}

/// A relay on RMR context `ctx` (its functions passed by address), sending as `mtype`.
///
/// # Safety
/// RMR's functions and a live context of that library.
#[no_mangle]
pub unsafe extern "C" fn e2relay_new(
    ctx: *mut c_void,
    alloc: AllocFn,
    send: SendFn,
    free: FreeFn,
    meid: MeidFn,
    mtype: c_int,
    patience_ms: u64,
) -> *mut Relay {
    let rmr = Rmr {
        sender: Sender::new(ctx, alloc, send, free, meid),
        mtype,
        patience: std::time::Duration::from_millis(patience_ms),
    };
    Box::into_raw(Box::new(Relay {
        rmr: Arc::new(rmr),
        conns: Mutex::new(Vec::new()),
    }))
}

/// Relay node socket `fd` (this call takes it: a dup the caller made) for node `meid`; frames
/// for Python go to `out` (taken too); `pre`: octets Python read past the last whole frame.
/// Returns the connection's index (for the other calls), -1 on bad arguments.
///
/// # Safety
/// `r` from e2relay_new; `meid` NUL-terminated; `pre` `pre_len` octets.
#[no_mangle]
pub unsafe extern "C" fn e2relay_add(
    r: *const Relay,
    fd: c_int,
    out: c_int,
    meid: *const c_char,
    pre: *const u8,
    pre_len: usize,
    timeout_ms: c_int,
) -> i64 {
    if r.is_null() || fd < 0 || out < 0 {
        return -1;
    }
    let r = &*r;
    let meid = cstr(meid).to_vec();
    let pre = if pre.is_null() {
        Vec::new()
    } else {
        std::slice::from_raw_parts(pre, pre_len).to_vec()
    };
    let st = Arc::new(Stats::default());
    st.running.store(true, Ordering::Release);
    st.last_rx_ns.store(monotonic_ns(), Ordering::Relaxed);
    let (rmr, st2) = (r.rmr.clone(), st.clone());
    let th = std::thread::Builder::new()
        .name("e2relay".into())
        .spawn(move || run(fd, out, meid, pre, timeout_ms, rmr, st2));
    let Ok(th) = th else {
        libc::close(fd);
        libc::close(out);
        return -1;
    };
    let mut conns = r.conns.lock().unwrap_or_else(|e| e.into_inner());
    conns.push(Some(Conn {
        fd,
        stats: st,
        thread: Some(th),
    }));
    conns.len() as i64 - 1
}

/// [indications, to_python, sent, send_failures, waited, gave_up, last_rx_ns, running,
/// ended (END_* + 1; 0 while running)] of connection `id`; the latencies (ns) since the last
/// call into `lat` (up to `cap`; returns how many).
///
/// # Safety
/// `out` 9 u64, `lat` cap u64.
#[no_mangle]
pub unsafe extern "C" fn e2relay_stats(
    r: *const Relay,
    id: i64,
    out: *mut u64,
    lat: *mut u64,
    cap: usize,
) -> usize {
    let r = &*r;
    let conns = r.conns.lock().unwrap_or_else(|e| e.into_inner());
    let Some(Some(c)) = conns.get(id as usize) else {
        return 0;
    };
    let s = &c.stats;
    let v = [
        s.indications.load(Ordering::Relaxed),
        s.to_python.load(Ordering::Relaxed),
        s.sent.load(Ordering::Relaxed),
        s.send_failures.load(Ordering::Relaxed),
        s.waited.load(Ordering::Relaxed),
        s.gave_up.load(Ordering::Relaxed),
        s.last_rx_ns.load(Ordering::Relaxed),
        s.running.load(Ordering::Acquire) as u64,
        s.ended.load(Ordering::Acquire),
    ];
    std::slice::from_raw_parts_mut(out, 9).copy_from_slice(&v);
    let mut l = s.latencies.lock().unwrap_or_else(|e| e.into_inner());
    let k = l.len().min(cap);
    std::ptr::copy_nonoverlapping(l.as_ptr(), lat, k);
    l.drain(..k);
    k
}

/// End connection `id`: its socket is shut down (the thread ends, Python's side sees the
/// end); the thread is joined, and the socket closed, in the background (a send waiting out
/// a full peer may take up to the patience), so the caller's event loop never waits.
///
/// # Safety
/// `r` from e2relay_new.
#[no_mangle]
pub unsafe extern "C" fn e2relay_close(r: *const Relay, id: i64) {
    let r = &*r;
    let c = {
        let mut conns = r.conns.lock().unwrap_or_else(|e| e.into_inner());
        conns.get_mut(id as usize).and_then(Option::take)
    };
    if let Some(mut c) = c {
        libc::shutdown(c.fd, libc::SHUT_RDWR);
        let (fd, th) = (c.fd, c.thread.take());
        let _ = std::thread::Builder::new()
            .name("e2relay-end".into())
            .spawn(move || {
                if let Some(t) = th {
                    let _ = t.join();
                }
                // SAFETY: the relay thread is gone; the descriptor is ours to close
                unsafe { libc::close(fd) };
            });
    }
}
