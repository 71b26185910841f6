//! `octoric bench loop`'s gNB side natively (issue #44): the scripted gNBs set up E2 and the
//! subscriptions in Python (`e2sm/node_session.py`), then their sockets are handed here and the
//! pre-encoded indications are replayed on schedule with only the sequence number and the time
//! stamp patched, so at 10 k indications/s the sender costs a few percent of a core and is
//! never the bottleneck it was in Python (0.25 core at 5 k/s, asyncio).

use std::ffi::c_int;

pub use octo_rmr_client::monotonic_ns;

fn sleep_until(t_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (t_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (t_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: a valid timespec; EINTR just ends the sleep early (the loop checks the time)
    unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    };
}

/// Write all of `buf` to a (maybe non-blocking) socket; false on an error.
fn write_all(fd: c_int, mut buf: &[u8]) -> bool {
    while !buf.is_empty() {
        // SAFETY: buf is readable for its length
        let n = unsafe { libc::write(fd, buf.as_ptr() as *const libc::c_void, buf.len()) };
        if n > 0 {
            buf = &buf[n as usize..];
            continue;
        }
        let err = std::io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EINTR) => {
                let mut p = libc::pollfd {
                    fd,
                    events: libc::POLLOUT,
                    revents: 0,
                };
                // SAFETY: one valid pollfd
                unsafe { libc::poll(&mut p, 1, 1000) };
            }
            _ => return false,
        }
    }
    true
}

/// Replay indications: at `start_ns + k * period_ns` (k < `count`; plus `i * period_ns /
/// n_nodes` when `spread` is not 0) every node `i` sends its template `k % n_tpl` as one E2 TCP
/// frame (4-octet length, then the PDU), with the 2-octet
/// SN at `sn_off[t]` set to `sn0[i] + k` and the 8-octet time stamp at `ts_off[t]` set to
/// `ts[k]`. `sent_ns[i * count + k]` gets the CLOCK_MONOTONIC time just before the write (0: not
/// sent). Returns how many were sent; -1 on bad arguments.
///
/// # Safety
/// `fds` n_nodes; `tpl`/`tpl_len` n_nodes * n_tpl (node-major) buffers of those lengths;
/// `sn_off`/`ts_off` n_nodes * n_tpl; `sn0` n_nodes; `ts` count * 8; `sent_ns` n_nodes * count.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn loadgen_blast(
    n_nodes: usize,
    fds: *const c_int,
    n_tpl: usize,
    tpl: *const *const u8,
    tpl_len: *const usize,
    sn_off: *const usize,
    ts_off: *const usize,
    sn0: *const u16,
    ts: *const u8,
    count: usize,
    start_ns: u64,
    period_ns: u64,
    spread: c_int,
    sent_ns: *mut u64,
) -> i64 {
    if n_nodes == 0 || n_tpl == 0 || fds.is_null() || tpl.is_null() {
        return -1;
    }
    let fds = std::slice::from_raw_parts(fds, n_nodes);
    let lens = std::slice::from_raw_parts(tpl_len, n_nodes * n_tpl);
    let sn_off = std::slice::from_raw_parts(sn_off, n_nodes * n_tpl);
    let ts_off = std::slice::from_raw_parts(ts_off, n_nodes * n_tpl);
    let sn0 = std::slice::from_raw_parts(sn0, n_nodes);
    let ts = std::slice::from_raw_parts(ts, count * 8);
    let sent = std::slice::from_raw_parts_mut(sent_ns, n_nodes * count);
    // each template as a frame, patched in place per send
    let mut frames: Vec<Vec<u8>> = Vec::with_capacity(n_nodes * n_tpl);
    for j in 0..n_nodes * n_tpl {
        let pdu = std::slice::from_raw_parts(*tpl.add(j), lens[j]);
        if sn_off[j] + 2 > pdu.len() || ts_off[j] + 8 > pdu.len() {
            return -1;
        }
        let mut f = (lens[j] as u32).to_be_bytes().to_vec();
        f.extend_from_slice(pdu);
        frames.push(f);
    }
    sent.fill(0);
    let mut n_sent = 0i64;
    let mut dead = vec![false; n_nodes];
    for k in 0..count {
        sleep_until(start_ns + k as u64 * period_ns);
        for i in 0..n_nodes {
            if dead[i] {
                continue;
            }
            if spread != 0 {
                // each node's report timer at its own phase, as gNBs subscribed at different
                // moments run them; otherwise all at once, as gNBs on one clock do
                sleep_until(
                    start_ns + k as u64 * period_ns + i as u64 * period_ns / n_nodes as u64,
                );
            }
            let j = i * n_tpl + k % n_tpl;
            let f = &mut frames[j];
            let sn = sn0[i].wrapping_add(k as u16);
            f[4 + sn_off[j]..4 + sn_off[j] + 2].copy_from_slice(&sn.to_be_bytes());
            f[4 + ts_off[j]..4 + ts_off[j] + 8].copy_from_slice(&ts[k * 8..k * 8 + 8]);
            sent[i * count + k] = monotonic_ns();
            if write_all(fds[i], f) {
                n_sent += 1;
            } else {
                sent[i * count + k] = 0;
                dead[i] = true;
            }
        }
    }
    n_sent
}
