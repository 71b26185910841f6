//! `xapps/occ/feedback.py`'s `FeedbackSender` natively: registered flows, the send policy
//! (a 2 % move, a fallback flip, or `max_interval` since the last datagram), the JSON and
//! REMB+OCCF datagrams of `contracts/feedback.py` byte for byte, UDP sends.

use rustc_hash::FxHashMap;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::{SocketAddr, UdpSocket};
use std::time::Instant;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Format {
    Remb,
    Json,
}

/// A GUAMI as one integer: PLMN (24 bits) << 32 | region << 16 | set << 6 | pointer.
pub type Guami = u64;

pub fn pack_guami(plmn: [u8; 3], region: u16, set: u16, pointer: u16) -> Guami {
    ((plmn[0] as u64) << 48)
        | ((plmn[1] as u64) << 40)
        | ((plmn[2] as u64) << 32)
        | ((region as u64) << 16)
        | ((set as u64) << 6)
        | pointer as u64
}

/// `identity.guami_str`: `<PLMN hex>:<region>:<set>:<pointer>`.
pub fn guami_str(g: Guami) -> String {
    format!(
        "{:06x}:{}:{}:{}",
        g >> 32,
        (g >> 16) & 0xFFFF,
        (g >> 6) & 0x3FF,
        g & 0x3F
    )
}

pub struct Flow {
    pub ue: i64,
    pub addr: SocketAddr,
    pub format: Format,
    pub guami: Option<Guami>,
    pub ssrcs: Vec<u32>,
    pub sender_ssrc: u32,
}

#[derive(Clone, Copy, Debug)]
pub struct Target {
    pub bps: f64,
    pub fallback: bool,
    pub guami: Option<Guami>,
    pub t_ms: i64,
}

struct Sent {
    bps: f64,
    fallback: bool,
    at: f64,
}

pub struct Feedback {
    pub min_change: f64,
    pub max_interval_s: f64,
    flows: HashMap<String, Flow>,
    by_ue: FxHashMap<i64, Vec<String>>,
    targets: FxHashMap<i64, Target>,
    sent: HashMap<String, Sent>,
    pub counters: HashMap<String, u64>,
    sock4: Option<UdpSocket>,
    sock6: Option<UdpSocket>,
    epoch: Instant,
    buf: Vec<u8>,
    /// update_batch: the datagrams of one indication, sent together (sendmmsg) at its end
    batching: bool,
    queued: Vec<(SocketAddr, Vec<u8>, Format)>,
}

/// Python's `float.__repr__` of `round(x, 6)`, for the time stamps here (finite, 1e-4 <= |x| <
/// 1e16, where both print positional digits): `{:.6}` rounds correctly, half to even on exact
/// ties, as `round` does; Debug prints the shortest digits that read back the same, as repr.
pub fn py_round6_repr(x: f64) -> String {
    let r: f64 = format!("{x:.6}").parse().unwrap_or(x);
    format!("{r:?}")
}

/// Python's `round(x)` (half to even) of a finite float, printed as an int.
pub fn py_round_int(x: f64) -> String {
    let r = x.round_ties_even();
    if r == 0.0 {
        return "0".into();
    }
    format!("{r:.0}")
}

pub fn encode_json(out: &mut Vec<u8>, ue: i64, bps: f64, fallback: bool, stamp: f64, t_ms: i64) {
    out.clear();
    let mut s = String::with_capacity(96);
    let _ = write!(
        s,
        "{{\"ue\":{ue},\"target_bps\":{},\"fallback\":{},\"ts\":{},\"t_ms\":{t_ms}}}",
        py_round_int(bps),
        if fallback { "true" } else { "false" },
        py_round6_repr(stamp)
    );
    out.extend_from_slice(s.as_bytes());
}

const MANTISSA_BITS: u32 = 18;

/// `remb_fields`: (exponent, mantissa) with mantissa < 2^18 and mantissa * 2^exp <= bitrate.
pub fn remb_fields(bps: f64) -> (u32, u32) {
    let br: u128 = if bps.is_finite() && bps > 0.0 {
        if bps >= 2f64.powi(127) {
            return (63, (1 << MANTISSA_BITS) - 1);
        }
        bps.trunc() as u128
    } else {
        0
    };
    let bitlen = 128 - br.leading_zeros();
    let exp = bitlen.saturating_sub(MANTISSA_BITS);
    if exp > 63 {
        return (63, (1 << MANTISSA_BITS) - 1);
    }
    (exp, (br >> exp) as u32)
}

pub fn encode_remb(out: &mut Vec<u8>, sender: u32, bps: f64, fallback: bool, ssrcs: &[u32]) {
    out.clear();
    let (exp, mant) = remb_fields(bps);
    let words = 4 + ssrcs.len() as u16;
    out.extend_from_slice(&[0x80 | 15, 206]);
    out.extend_from_slice(&words.to_be_bytes());
    out.extend_from_slice(&sender.to_be_bytes());
    out.extend_from_slice(&0u32.to_be_bytes());
    out.extend_from_slice(b"REMB");
    out.extend_from_slice(&(((ssrcs.len() as u32) << 24) | (exp << 18) | mant).to_be_bytes());
    for s in ssrcs {
        out.extend_from_slice(&s.to_be_bytes());
    }
    // the OCCF APP packet: the fallback flag
    out.extend_from_slice(&[0x80, 204]);
    out.extend_from_slice(&3u16.to_be_bytes());
    out.extend_from_slice(&sender.to_be_bytes());
    out.extend_from_slice(b"OCCF");
    out.extend_from_slice(&(if fallback { 1u32 << 24 } else { 0 }).to_be_bytes());
}

/// A socket address as the kernel reads it.
fn sockaddr(a: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: a zeroed sockaddr_storage is valid, and large enough for either family
    let mut st: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match a {
        SocketAddr::V4(v) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: v.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(v.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_in fits in sockaddr_storage
            unsafe { std::ptr::write(&mut st as *mut _ as *mut libc::sockaddr_in, sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(v) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: v.port().to_be(),
                sin6_flowinfo: v.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: v.ip().octets(),
                },
                sin6_scope_id: v.scope_id(),
            };
            // SAFETY: sockaddr_in6 fits in sockaddr_storage
            unsafe { std::ptr::write(&mut st as *mut _ as *mut libc::sockaddr_in6, sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (st, len as libc::socklen_t)
}

fn error_name(e: &std::io::Error) -> &'static str {
    use std::io::ErrorKind as E;
    match e.kind() {
        E::ConnectionRefused => "ConnectionRefusedError",
        E::PermissionDenied => "PermissionError",
        E::WouldBlock => "BlockingIOError",
        E::ConnectionReset => "ConnectionResetError",
        _ => "OSError",
    }
}

pub fn wall_s() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

impl Default for Feedback {
    fn default() -> Self {
        Feedback::new(0.02, 0.05)
    }
}

impl Feedback {
    pub fn new(min_change: f64, max_interval_s: f64) -> Feedback {
        Feedback {
            min_change,
            max_interval_s,
            flows: HashMap::new(),
            by_ue: FxHashMap::default(),
            targets: FxHashMap::default(),
            sent: HashMap::new(),
            counters: HashMap::new(),
            sock4: None,
            sock6: None,
            epoch: Instant::now(),
            buf: Vec::with_capacity(256),
            batching: false,
            queued: Vec::new(),
        }
    }

    pub fn now(&self) -> f64 {
        self.epoch.elapsed().as_secs_f64()
    }

    pub fn has_flows(&self) -> bool {
        !self.by_ue.is_empty()
    }

    fn count(&mut self, key: &str) {
        *self.counters.entry(key.to_string()).or_insert(0) += 1;
    }

    /// Register (or replace) a flow; it hears the UE's current target at once, its own
    /// (`known`, the xApp's record) when this sender holds none.
    pub fn add(&mut self, id: String, flow: Flow, known: Option<Target>) {
        if let Some(old) = self.flows.remove(&id) {
            if let Some(v) = self.by_ue.get_mut(&old.ue) {
                v.retain(|f| *f != id);
            }
        }
        let ue = flow.ue;
        self.flows.insert(id.clone(), flow);
        self.by_ue.entry(ue).or_default().push(id.clone());
        self.sent.remove(&id);
        let t = match self.targets.get(&ue) {
            Some(t) => Some(*t),
            None => match known {
                Some(k) if k.bps.is_finite() => {
                    self.targets.insert(ue, k);
                    Some(k)
                }
                _ => None,
            },
        };
        if let Some(t) = t {
            let now = self.now();
            self.send(&id, t, now, None);
        }
    }

    pub fn remove(&mut self, id: &str) -> bool {
        let Some(flow) = self.flows.remove(id) else {
            return false;
        };
        if let Some(v) = self.by_ue.get_mut(&flow.ue) {
            v.retain(|f| f != id);
            if v.is_empty() {
                self.by_ue.remove(&flow.ue);
            }
        }
        self.sent.remove(id);
        true
    }

    pub fn forget(&mut self, ue: i64) {
        self.targets.remove(&ue);
    }

    pub fn update(&mut self, ue: i64, t: Target) {
        if !t.bps.is_finite() {
            return;
        }
        let now = self.now();
        self.offer(ue, t, now, None);
    }

    /// `update` for each row of one ingested batch (one clock reading, one wall stamp).
    pub fn update_batch(
        &mut self,
        ues: &[i64],
        bps: impl Fn(usize) -> f64,
        fallback: &[bool],
        guamis: &[Option<Guami>],
        t_ms: i64,
    ) {
        if self.by_ue.is_empty() {
            return;
        }
        let mut now = -1.0;
        let mut stamp = 0.0;
        for (i, &u) in ues.iter().enumerate() {
            if !self.by_ue.contains_key(&u) {
                continue;
            }
            let b = bps(i);
            if !b.is_finite() {
                continue;
            }
            if now < 0.0 {
                now = self.now();
                stamp = wall_s();
            }
            let t = Target {
                bps: b,
                fallback: fallback[i],
                guami: guamis[i],
                t_ms,
            };
            if !self.batching {
                self.batching = true;
            }
            self.offer(u, t, now, Some(stamp));
        }
        if self.batching {
            self.batching = false;
            self.flush();
        }
    }

    /// Send the queued datagrams: one sendmmsg per address family (a syscall per indication,
    /// not per flow), the ones it did not take one by one (their errors counted by kind).
    fn flush(&mut self) {
        let mut queued = std::mem::take(&mut self.queued);
        for v4 in [true, false] {
            let idx: Vec<usize> = (0..queued.len())
                .filter(|&i| queued[i].0.is_ipv4() == v4)
                .collect();
            if idx.is_empty() {
                continue;
            }
            let Some(fd) = self.socket(v4) else {
                for _ in &idx {
                    self.count("send_error_OSError");
                }
                continue;
            };
            let names: Vec<(libc::sockaddr_storage, libc::socklen_t)> =
                idx.iter().map(|&i| sockaddr(&queued[i].0)).collect();
            let mut iov: Vec<libc::iovec> = idx
                .iter()
                .map(|&i| libc::iovec {
                    iov_base: queued[i].1.as_mut_ptr() as *mut libc::c_void,
                    iov_len: queued[i].1.len(),
                })
                .collect();
            let mut hdrs: Vec<libc::mmsghdr> = (0..idx.len())
                .map(|k| {
                    // SAFETY: a zeroed mmsghdr is valid; the pointers set below outlive the call
                    let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
                    h.msg_hdr.msg_name = &names[k].0 as *const _ as *mut libc::c_void;
                    h.msg_hdr.msg_namelen = names[k].1;
                    h.msg_hdr.msg_iov = &mut iov[k];
                    h.msg_hdr.msg_iovlen = 1;
                    h
                })
                .collect();
            // SAFETY: hdrs describe live buffers and addresses
            let n = unsafe { libc::sendmmsg(fd, hdrs.as_mut_ptr(), hdrs.len() as u32, 0) };
            let done = n.max(0) as usize;
            for &i in &idx[..done] {
                self.count(if queued[i].2 == Format::Json {
                    "sent_json"
                } else {
                    "sent_remb"
                });
            }
            for &i in &idx[done..] {
                let (addr, data, fmt) = &queued[i];
                self.send_now(*addr, data, *fmt);
            }
        }
        queued.clear();
        self.queued = queued;
    }

    fn socket(&mut self, v4: bool) -> Option<i32> {
        let sock = if v4 { &mut self.sock4 } else { &mut self.sock6 };
        if sock.is_none() {
            *sock = UdpSocket::bind(if v4 { "0.0.0.0:0" } else { "[::]:0" }).ok();
        }
        sock.as_ref().map(std::os::fd::AsRawFd::as_raw_fd)
    }

    fn send_now(&mut self, addr: SocketAddr, data: &[u8], fmt: Format) {
        let _ = self.socket(addr.is_ipv4());
        let sock = if addr.is_ipv4() {
            &self.sock4
        } else {
            &self.sock6
        };
        let res = match sock {
            Some(s) => s.send_to(data, addr).map(|_| ()),
            None => Err(std::io::Error::other("no socket")),
        };
        match res {
            Ok(()) => self.count(if fmt == Format::Json {
                "sent_json"
            } else {
                "sent_remb"
            }),
            Err(e) => {
                let k = format!("send_error_{}", error_name(&e));
                self.count(&k);
            }
        }
    }

    fn offer(&mut self, ue: i64, t: Target, now: f64, stamp: Option<f64>) {
        self.targets.insert(ue, t);
        let Some(ids) = self.by_ue.get(&ue) else {
            return;
        };
        let due: Vec<String> = ids
            .iter()
            .filter(|fid| match self.sent.get(*fid) {
                None => true,
                Some(last) => self.due(last, &t, now),
            })
            .cloned()
            .collect();
        for fid in due {
            self.send(&fid, t, now, stamp);
        }
    }

    fn due(&self, last: &Sent, t: &Target, now: f64) -> bool {
        if last.fallback != t.fallback || now - last.at >= self.max_interval_s {
            return true;
        }
        let base = last.bps.max(1.0);
        (t.bps - last.bps).abs() / base > self.min_change
    }

    /// Refresh every flow whose last datagram is `max_interval_s` old; seconds to the next.
    pub fn tick(&mut self) -> f64 {
        let now = self.now();
        let mut nxt = now + self.max_interval_s;
        let mut due = Vec::new();
        for (fid, flow) in &self.flows {
            let Some(t) = self.targets.get(&flow.ue) else {
                continue;
            };
            match self.sent.get(fid) {
                Some(last) if now - last.at < self.max_interval_s => {
                    nxt = nxt.min(last.at + self.max_interval_s)
                }
                _ => due.push((fid.clone(), *t)),
            }
        }
        for (fid, t) in due {
            self.send(&fid, t, now, None);
        }
        (nxt - now).max(0.0)
    }

    fn send(&mut self, fid: &str, t: Target, now: f64, stamp: Option<f64>) {
        let Some(flow) = self.flows.get(fid) else {
            return;
        };
        if let (Some(a), Some(b)) = (flow.guami, t.guami) {
            if a != b {
                self.count("guami_mismatch");
                return;
            }
        }
        let mut buf = std::mem::take(&mut self.buf);
        match flow.format {
            Format::Remb => encode_remb(&mut buf, flow.sender_ssrc, t.bps, t.fallback, &flow.ssrcs),
            Format::Json => encode_json(
                &mut buf,
                flow.ue,
                t.bps,
                t.fallback,
                stamp.unwrap_or_else(wall_s),
                t.t_ms,
            ),
        }
        let addr = flow.addr;
        let fmt = flow.format;
        if self.batching {
            self.queued.push((addr, buf.clone(), fmt));
        } else {
            self.send_now(addr, &buf, fmt);
        }
        self.buf = buf;
        self.sent.insert(
            fid.to_string(),
            Sent {
                bps: t.bps,
                fallback: t.fallback,
                at: now,
            },
        );
    }
}
