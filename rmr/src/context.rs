//! One RMR context: listener and reader threads, the bounded receive queue, call chutes,
//! the connection cache, route tables (static file and route-manager pushes), wormholes.

use std::collections::{HashMap, VecDeque};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::consts::*;
use crate::frame::{self, FrameInfo};
use crate::log::{self, Level};
use crate::mbuf::{Mbuf, Msg};
use crate::peer::{self, Peer, PeerPolicy, SenderCheck};
use crate::route::{Builder, Entry, Event, Table};
use crate::transport::{self, Conn, Kind, LimitError, Limits, SendError};

/// Receive queue bound (RMR's default ring is of this order); overflow drops and counts.
pub const QUEUE_CAP: usize = 4096;
/// After a connect that failed slowly (timeout, unreachable host), sends to that endpoint fail
/// fast for this long: a dead remote host must not stall every send for CONNECT_TIMEOUT.
const CONNECT_BACKOFF: Duration = Duration::from_millis(100);
/// After a refused connect (nothing listens; the answer is immediate) only this long: a peer
/// that restarts gets messages within a millisecond of listening again, while a flood of sends
/// to a dead port still costs at most ~1000 connect attempts a second.
const REFUSED_BACKOFF: Duration = Duration::from_millis(1);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Debug, Default)]
pub struct Stats {
    pub received: AtomicU64,
    pub sent: AtomicU64,
    pub send_failures: AtomicU64,
    pub dropped_overflow: AtomicU64,
    pub dropped_bad_frame: AtomicU64,
    pub dropped_bad_stream: AtomicU64,
    pub connections_accepted: AtomicU64,
    pub connections_made: AtomicU64,
    pub rt_installed: AtomicU64,
    pub rt_errors: AtomicU64,
    /// Issue #43: connections refused for who they come from (a local user not allowed, a
    /// remote peer when remote peers are denied), frames whose sender field the connection's
    /// peer is not, route tables with an old, equal or missing generation, connections over a
    /// listener's cap, frames not whole within the deadline, frames over the per-connection
    /// bound.
    pub peers_rejected: AtomicU64,
    pub forged_senders: AtomicU64,
    pub rt_replayed: AtomicU64,
    pub conns_over_cap: AtomicU64,
    pub frames_timed_out: AtomicU64,
    pub frames_too_big: AtomicU64,
    /// Messages a native tap took in the receive thread (``rmr_octo_set_tap``).
    pub tapped: AtomicU64,
}

impl Stats {
    pub fn json(&self) -> String {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        format!(
            "{{\"received\": {}, \"sent\": {}, \"send_failures\": {}, \"dropped_overflow\": {}, \
             \"dropped_bad_frame\": {}, \"dropped_bad_stream\": {}, \"connections_accepted\": {}, \
             \"connections_made\": {}, \"rt_installed\": {}, \"rt_errors\": {}, \
             \"peers_rejected\": {}, \"forged_senders\": {}, \"rt_replayed\": {}, \
             \"conns_over_cap\": {}, \"frames_timed_out\": {}, \"frames_too_big\": {}, \
             \"tapped\": {}}}",
            g(&self.received),
            g(&self.sent),
            g(&self.send_failures),
            g(&self.dropped_overflow),
            g(&self.dropped_bad_frame),
            g(&self.dropped_bad_stream),
            g(&self.connections_accepted),
            g(&self.connections_made),
            g(&self.rt_installed),
            g(&self.rt_errors),
            g(&self.peers_rejected),
            g(&self.forged_senders),
            g(&self.rt_replayed),
            g(&self.conns_over_cap),
            g(&self.frames_timed_out),
            g(&self.frames_too_big),
            g(&self.tapped),
        )
    }
}

/// The receive queue and how many receivers are blocked on it (a notify is a syscall;
/// skip it when nobody waits).
#[derive(Debug, Default)]
struct Queue {
    msgs: VecDeque<Msg>,
    waiters: usize,
}

#[derive(Debug, Default)]
struct OutSlot {
    conn: Option<Arc<Conn>>,
    /// When the last connect failed, and how long sends fail fast after it.
    failed_at: Option<(Instant, Duration)>,
}

/// OCTORIC_RMR_RT_KEY (hex): route-table pushes must be signed with it (octoric's route
/// manager signs them); unset, every push is accepted, as RMR 4.9 does. A value that is not
/// hex is used as the key's bytes.
fn route_key() -> Option<Vec<u8>> {
    let v = std::env::var("OCTORIC_RMR_RT_KEY").ok()?;
    let v = v.trim();
    if v.is_empty() {
        return None;
    }
    Some(crate::route::unhex(v).unwrap_or_else(|| v.as_bytes().to_vec()))
}

/// Where route tables come from (RMR_SEED_RT / RMR_RTG_SVC / RMR_CTL_PORT).
#[derive(Debug, Clone)]
pub struct RtConfig {
    pub seed: Option<PathBuf>,
    pub static_only: bool,
    pub ctl_port: Option<u16>,
    pub rtg_addr: Option<String>,
}

impl RtConfig {
    pub fn from_env() -> RtConfig {
        let seed = std::env::var("RMR_SEED_RT")
            .ok()
            .filter(|s| !s.is_empty())
            .map(PathBuf::from);
        let ctl_default = std::env::var("RMR_CTL_PORT")
            .ok()
            .and_then(|p| p.trim().parse::<u16>().ok())
            .unwrap_or(4561);
        let svc = std::env::var("RMR_RTG_SVC").unwrap_or_default();
        let svc = svc.trim();
        if let Ok(n) = svc.parse::<i64>() {
            if n < 0 {
                return RtConfig {
                    seed,
                    static_only: true,
                    ctl_port: None,
                    rtg_addr: None,
                };
            }
            return RtConfig {
                seed,
                static_only: false,
                ctl_port: u16::try_from(n).ok(),
                rtg_addr: None,
            };
        }
        RtConfig {
            seed,
            static_only: false,
            ctl_port: Some(ctl_default),
            rtg_addr: if svc.contains(':') {
                Some(svc.to_string())
            } else {
                None
            },
        }
    }
}

/// Listener bounds (issue #43): RMR_MAX_CONNS per listener, RMR_FRAME_DEADLINE_MS,
/// RMR_MAX_CONN_BYTES (what one connection can make us buffer: its largest frame).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListenLimits {
    pub max_conns: usize,
    pub frame: Limits,
}

/// Default connection cap per listener: an RMR endpoint has a few dozen peers.
pub const MAX_CONNS: usize = 256;

impl Default for ListenLimits {
    fn default() -> Self {
        ListenLimits {
            max_conns: MAX_CONNS,
            frame: Limits::default(),
        }
    }
}

impl ListenLimits {
    pub fn from_env() -> ListenLimits {
        let num = |k: &str| {
            std::env::var(k)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .filter(|n| *n > 0)
        };
        let mut l = ListenLimits::default();
        if let Some(n) = num("RMR_MAX_CONNS") {
            l.max_conns = n as usize;
        }
        if let Some(n) = num("RMR_FRAME_DEADLINE_MS") {
            l.frame.frame_deadline = Duration::from_millis(n);
        }
        if let Some(n) = num("RMR_MAX_CONN_BYTES") {
            l.frame.max_frame = n as usize;
        }
        l
    }
}

/// Everything rmr_init takes from the environment.
#[derive(Debug, Clone)]
pub struct Config {
    pub bind_if: Option<String>,
    pub src_id: Option<String>,
    pub name_only: bool,
    pub rt: RtConfig,
    pub peers: PeerPolicy,
    pub limits: ListenLimits,
}

impl Config {
    pub fn from_env() -> Config {
        let get = |k: &str| std::env::var(k).ok().filter(|s| !s.is_empty());
        Config {
            bind_if: get("RMR_BIND_IF"),
            src_id: get("RMR_SRC_ID"),
            name_only: env_flag("RMR_SRC_NAMEONLY"),
            rt: RtConfig::from_env(),
            peers: PeerPolicy::from_env(),
            limits: ListenLimits::from_env(),
        }
    }
}

/// Log a kind of refusal once per context (then it is only counted).
#[derive(Debug, Default)]
struct Once {
    peer: AtomicBool,
    peer_out: AtomicBool,
    forged: AtomicBool,
    cap: AtomicBool,
    limit: AtomicBool,
    replay: AtomicBool,
}

fn once(flag: &AtomicBool, msg: &str) {
    if !flag.swap(true, Ordering::Relaxed) {
        log::log(
            Level::Err,
            &format!("{msg} (logged once; counted in octoric_rmr_stats)"),
        );
    }
}

/// A native handler of one message type, called in the connection's receive thread with the
/// payload, the MEID and the subscription ID; 0: it took the message (not queued).
pub type TapFn =
    unsafe extern "C" fn(*mut std::ffi::c_void, *const u8, i32, *const u8, i32, i32) -> i32;

struct Tap {
    mtype: i32,
    cb: TapFn,
    user: usize,
}

pub struct Ctx {
    pub port: u16,
    pub max_plen: usize,
    pub src: Vec<u8>,
    pub srcip: Vec<u8>,
    names: Vec<String>,
    table: RwLock<Option<Arc<Table>>>,
    builder: Mutex<Builder>,
    rt_from_rtm: AtomicBool,
    queue: Mutex<Queue>,
    qcv: Condvar,
    chutes: Mutex<HashMap<u8, Msg>>,
    ccv: Condvar,
    /// ``rmr_octo_set_tap``: message types a native handler takes in the receive thread.
    taps: RwLock<Vec<Tap>>,
    conns: Mutex<HashMap<u64, Arc<Conn>>>,
    out: Mutex<HashMap<String, OutSlot>>,
    whs: Mutex<Vec<Option<String>>>,
    retries: AtomicI32,
    fast_ack: AtomicBool,
    /// Trace bytes every newly allocated message carries (``rmr_init_trace``).
    pub trace_len: AtomicUsize,
    /// Readable while the receive queue holds messages (an eventfd in semaphore mode: one
    /// count per queued message), for ``rmr_get_rcvfd``; -1 if it could not be made.
    rcvfd: i32,
    /// Counted only once someone asked for the descriptor: no syscalls per message for the
    /// receivers that never poll it (every ricxappframe xApp). Changed under the queue lock.
    rcvfd_on: AtomicBool,
    /// ``rmr_get_rx_debug_info``: queued and dropped since the last reset.
    rx_enqueued: AtomicU64,
    rx_dropped: AtomicU64,
    next_id: AtomicU64,
    pub stats: Stats,
    stop: AtomicBool,
    stop_lock: Mutex<bool>,
    stop_cv: Condvar,
    threads: Mutex<Vec<JoinHandle<()>>>,
    listeners: Mutex<Vec<TcpListener>>,
    rt_cfg: RtConfig,
    peers: PeerPolicy,
    limits: ListenLimits,
    logged: Once,
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: buf is valid for its length; gethostname NUL-terminates or truncates.
    let r = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if r != 0 {
        return "localhost".into();
    }
    let n = buf.iter().position(|&c| c == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

fn env_flag(name: &str) -> bool {
    std::env::var(name)
        .map(|v| !v.is_empty() && v != "0")
        .unwrap_or(false)
}

/// Split "tcp:4560", "4560", "host:4560" into (bind host, port).
pub fn parse_port_spec(spec: &str) -> Option<(Option<String>, u16)> {
    let s = spec.trim();
    let s = s.strip_prefix("tcp:").unwrap_or(s);
    match s.rsplit_once(':') {
        Some((h, p)) => {
            let port = p.parse::<u16>().ok()?;
            let h = h.trim_start_matches('[').trim_end_matches(']');
            Some((if h.is_empty() { None } else { Some(h.into()) }, port))
        }
        None => Some((None, s.parse::<u16>().ok()?)),
    }
}

fn bind(host: &str, port: u16) -> std::io::Result<TcpListener> {
    let addr = format!("{host}:{port}");
    let addr = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        addr
    };
    TcpListener::bind(addr)
}

impl Ctx {
    /// rmr_init: configuration from the environment (RMR_* variables).
    pub fn init(spec: &str, max_plen: i32, flags: i32) -> Result<Arc<Ctx>, String> {
        Ctx::init_with(spec, max_plen, flags, Config::from_env())
    }

    /// Bind the data port, load the seed table, start the threads.
    pub fn init_with(
        spec: &str,
        max_plen: i32,
        flags: i32,
        cfg: Config,
    ) -> Result<Arc<Ctx>, String> {
        let (spec_host, port) =
            parse_port_spec(spec).ok_or_else(|| format!("bad port spec {spec:?}"))?;
        let bind_host = cfg
            .bind_if
            .clone()
            .or(spec_host)
            .unwrap_or_else(|| "0.0.0.0".into());
        let listener = bind(&bind_host, port)
            .map_err(|e| format!("cannot listen on {bind_host}:{port}: {e}"))?;
        let port = listener.local_addr().map(|a| a.port()).unwrap_or(port);
        let name = cfg.src_id.clone().unwrap_or_else(hostname);
        let src = format!("{name}:{port}");
        let name_only = cfg.name_only || flags & RMRFL_NAME_ONLY != 0;
        let ip = if bind_host != "0.0.0.0" && bind_host != "::" {
            bind_host.clone()
        } else {
            (name.as_str(), 0)
                .to_socket_addrs()
                .ok()
                .and_then(|mut a| a.find(|x| x.is_ipv4()))
                .map(|a| a.ip().to_string())
                .unwrap_or_else(|| "127.0.0.1".into())
        };
        let srcip = if name_only {
            src.clone()
        } else {
            format!("{ip}:{port}")
        };
        let rt_cfg = cfg.rt;
        let (peers, limits) = (cfg.peers, cfg.limits);
        let names = vec![src.clone(), srcip.clone()];
        let ctx = Arc::new(Ctx {
            port,
            max_plen: if max_plen > 0 {
                max_plen as usize
            } else {
                4096
            },
            src: src.clone().into_bytes(),
            srcip: srcip.into_bytes(),
            builder: Mutex::new(Builder::new(names.clone()).with_key(route_key())),
            names,
            table: RwLock::new(None),
            rt_from_rtm: AtomicBool::new(false),
            queue: Mutex::new(Queue::default()),
            qcv: Condvar::new(),
            chutes: Mutex::new(HashMap::new()),
            taps: RwLock::new(Vec::new()),
            ccv: Condvar::new(),
            conns: Mutex::new(HashMap::new()),
            out: Mutex::new(HashMap::new()),
            whs: Mutex::new(Vec::new()),
            retries: AtomicI32::new(1),
            fast_ack: AtomicBool::new(false),
            trace_len: AtomicUsize::new(0),
            // SAFETY: eventfd with valid flags; the fd is closed in Drop.
            rcvfd: unsafe {
                libc::eventfd(
                    0,
                    libc::EFD_SEMAPHORE | libc::EFD_NONBLOCK | libc::EFD_CLOEXEC,
                )
            },
            rcvfd_on: AtomicBool::new(false),
            rx_enqueued: AtomicU64::new(0),
            rx_dropped: AtomicU64::new(0),
            next_id: AtomicU64::new(1),
            stats: Stats::default(),
            stop: AtomicBool::new(false),
            stop_lock: Mutex::new(false),
            stop_cv: Condvar::new(),
            threads: Mutex::new(Vec::new()),
            listeners: Mutex::new(Vec::new()),
            rt_cfg,
            peers,
            limits,
            logged: Once::default(),
        });
        if let Some(seed) = ctx.rt_cfg.seed.clone() {
            ctx.load_seed(&seed);
        }
        ctx.start_listener(listener, Kind::Data);
        if let Some(cp) = ctx.rt_cfg.ctl_port {
            match bind(&bind_host, cp) {
                Ok(l) => ctx.start_listener(l, Kind::Control),
                Err(e) => log::log(
                    Level::Warn,
                    &format!("route-table control port {bind_host}:{cp} unavailable: {e}"),
                ),
            }
        }
        let c2 = ctx.clone();
        ctx.spawn("rmr-rtc", move || c2.rtc_loop());
        log::log(
            Level::Info,
            &format!("rmr_init: listening on {bind_host}:{port} as {src}"),
        );
        Ok(ctx)
    }

    fn spawn(&self, name: &str, f: impl FnOnce() + Send + 'static) {
        self.spawn_sized(name, None, f);
    }

    fn spawn_sized(&self, name: &str, stack: Option<usize>, f: impl FnOnce() + Send + 'static) {
        let mut b = std::thread::Builder::new().name(name.into());
        if let Some(n) = stack {
            b = b.stack_size(n);
        }
        let h = b.spawn(f).expect("thread spawn");
        let mut t = lock(&self.threads);
        let mut i = 0;
        while i < t.len() {
            if t[i].is_finished() {
                let _ = t.swap_remove(i).join();
            } else {
                i += 1;
            }
        }
        t.push(h);
    }

    /// A connection's reader: a small stack (it holds a few locals; frames are on the heap).
    fn spawn_reader(&self, f: impl FnOnce() + Send + 'static) {
        self.spawn_sized("rmr-rcv", Some(256 * 1024), f);
    }

    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    fn start_listener(self: &Arc<Self>, l: TcpListener, kind: Kind) {
        if let Ok(c) = l.try_clone() {
            lock(&self.listeners).push(c);
        }
        let ctx = self.clone();
        let active = Arc::new(AtomicUsize::new(0));
        self.spawn("rmr-listen", move || {
            for s in l.incoming() {
                if ctx.stopping() {
                    break;
                }
                match s {
                    Ok(stream) => {
                        let addr = stream.peer_addr();
                        let peer = addr.as_ref().map(|a| a.to_string()).unwrap_or_default();
                        if active.load(Ordering::Acquire) >= ctx.limits.max_conns {
                            ctx.stats.conns_over_cap.fetch_add(1, Ordering::Relaxed);
                            once(
                                &ctx.logged.cap,
                                &format!(
                                    "connection from {peer} refused: {} connections on this \
                                     listener (RMR_MAX_CONNS)",
                                    ctx.limits.max_conns
                                ),
                            );
                            continue; // dropped: closed
                        }
                        let who = match (stream.local_addr(), addr) {
                            (Ok(local), Ok(remote)) => ctx.admit(local, remote),
                            _ => Err("no addresses".to_string()),
                        };
                        let who = match who {
                            Ok(p) => p,
                            Err(why) => {
                                ctx.stats.peers_rejected.fetch_add(1, Ordering::Relaxed);
                                once(&ctx.logged.peer, &format!("connection refused: {why}"));
                                continue;
                            }
                        };
                        ctx.stats
                            .connections_accepted
                            .fetch_add(1, Ordering::Relaxed);
                        active.fetch_add(1, Ordering::AcqRel);
                        let a2 = active.clone();
                        let on_close = move || {
                            a2.fetch_sub(1, Ordering::AcqRel);
                        };
                        ctx.adopt_checked(stream, peer, kind, who, Box::new(on_close));
                    }
                    Err(_) => {
                        if ctx.stopping() {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(10));
                    }
                }
            }
        });
    }

    /// Who may connect (`Config::peers`); Ok(None): admitted without a sender check.
    fn admit(&self, local: SocketAddr, remote: SocketAddr) -> Result<Option<SenderCheck>, String> {
        if self.peers.uids == peer::Uids::Any && self.peers.remote && !self.peers.sender_check {
            return Ok(None);
        }
        let p = if self.peers.uids == peer::Uids::Any && !self.peers.sender_check {
            // only remote peers are refused: a socket found here is local
            match peer::lookup_peer(local, remote) {
                Ok(Some(si)) => Peer::Local(si),
                _ => peer::admit(local, remote, &self.peers)?,
            }
        } else {
            peer::admit(local, remote, &self.peers)?
        };
        let check = match p {
            Peer::Local(_) => self.peers.sender_check,
            Peer::Remote(_) => self.peers.sender_check && self.peers.remote_sender_check,
        };
        Ok(check.then(|| SenderCheck::new(p, self.peers.remote_sender_check)))
    }

    /// May we talk to the process that accepted this connection of ours? Local listeners
    /// must run as an allowed uid (`Config::peers`), as peers connecting to us must; remote
    /// ones follow OCTORIC_RMR_REMOTE_PEERS.
    fn may_send_to(&self, s: &TcpStream) -> Result<(), String> {
        if self.peers.uids == peer::Uids::Any && self.peers.remote {
            return Ok(());
        }
        let (Ok(local), Ok(remote)) = (s.local_addr(), s.peer_addr()) else {
            return Err("no addresses".into());
        };
        match peer::admit(local, remote, &self.peers) {
            Ok(_) => Ok(()),
            // the listener's side of a connection can appear a moment after connect returns
            // (an overflowing accept queue): look once more
            Err(_) if remote.ip().is_loopback() => {
                std::thread::sleep(Duration::from_millis(2));
                peer::admit(local, remote, &self.peers).map(|_| ())
            }
            Err(e) => Err(e),
        }
    }

    /// Register a connection we made and start its reader thread.
    fn adopt(self: &Arc<Self>, stream: TcpStream, peer: String, kind: Kind) -> Option<Arc<Conn>> {
        self.adopt_checked(stream, peer, kind, None, Box::new(|| {}))
    }

    /// Register a connection and start its reader thread; `check`: verify every frame's
    /// sender against the connection (accepted connections); `on_close` runs when it ends.
    fn adopt_checked(
        self: &Arc<Self>,
        stream: TcpStream,
        peer: String,
        kind: Kind,
        mut check: Option<SenderCheck>,
        on_close: Box<dyn FnOnce() + Send>,
    ) -> Option<Arc<Conn>> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        if self.fast_ack.load(Ordering::Relaxed) {
            transport::set_quickack(&stream);
        }
        let conn = Arc::new(Conn::new(id, peer, kind, stream));
        let Ok(rd) = conn.reader() else {
            on_close();
            return None;
        };
        lock(&self.conns).insert(id, conn.clone());
        if self.stopping() {
            conn.close();
        }
        let ctx = self.clone();
        let c2 = conn.clone();
        let limits = self.limits.frame;
        self.spawn_reader(move || {
            let r = transport::read_frames(rd, limits, |fr| match fr {
                Ok((buf, info)) => {
                    if let Some(chk) = check.as_mut() {
                        let h = &buf[frame::TP_HDR_LEN..];
                        let src = frame::get_cstr(h, frame::OFF_SRC, frame::SRC_LEN);
                        let srcip = frame::get_cstr(h, frame::OFF_SRCIP, frame::SRCIP_LEN);
                        if let Err(peer::Refusal::Forged(what)) = chk.check(src, srcip) {
                            ctx.stats.forged_senders.fetch_add(1, Ordering::Relaxed);
                            once(
                                &ctx.logged.forged,
                                &format!(
                                    "dropped mtype {} from {}: the frame names {what}, \
                                     which that connection's peer is not",
                                    info.mtype, c2.peer
                                ),
                            );
                            return;
                        }
                    }
                    ctx.deliver(&c2, buf, info)
                }
                Err(e) => {
                    ctx.stats.dropped_bad_frame.fetch_add(1, Ordering::Relaxed);
                    log::log(Level::Warn, &format!("dropped frame from {}: {e}", c2.peer));
                }
            });
            if let Err(e) = r {
                if let Some(le) = transport::limit_error(&e) {
                    let n = match le {
                        LimitError::Deadline => &ctx.stats.frames_timed_out,
                        LimitError::TooBig(_) => &ctx.stats.frames_too_big,
                    };
                    n.fetch_add(1, Ordering::Relaxed);
                    once(&ctx.logged.limit, &format!("closing {}: {le}", c2.peer));
                } else if !ctx.stopping() && e.kind() == std::io::ErrorKind::InvalidData {
                    ctx.stats.dropped_bad_stream.fetch_add(1, Ordering::Relaxed);
                    log::log(Level::Warn, &format!("closing {}: {e}", c2.peer));
                }
            }
            c2.close();
            lock(&ctx.conns).remove(&c2.id);
            on_close();
        });
        Some(conn)
    }

    fn deliver(&self, conn: &Arc<Conn>, buf: Vec<u8>, info: FrameInfo) {
        self.stats.received.fetch_add(1, Ordering::Relaxed);
        let msg = Msg {
            info,
            conn: conn.id,
            buf,
        };
        if conn.kind == Kind::Control {
            self.control(conn, msg);
            return;
        }
        let call_id = msg.info.call_id(&msg.buf);
        if msg.info.flags & frame::HFL_CALL_MSG == 0 && call_id != 0 {
            lock(&self.chutes).insert(call_id, msg);
            self.ccv.notify_all();
            return;
        }
        if self.tapped(&msg) {
            return;
        }
        if !self.enqueue(msg) {
            self.stats.dropped_overflow.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Offer a received message to the tap of its type, if any: true when the tap took it.
    fn tapped(&self, msg: &Msg) -> bool {
        let taps = self.taps.read().unwrap_or_else(|e| e.into_inner());
        if taps.is_empty() {
            return false;
        }
        let Some(t) = taps.iter().find(|t| t.mtype == msg.info.mtype) else {
            return false;
        };
        let p = &msg.buf[msg.info.payload_off..msg.info.payload_off + msg.info.plen];
        let h = &msg.buf[frame::TP_HDR_LEN..];
        let meid = frame::get_cstr(h, frame::OFF_MEID, frame::MEID_LEN);
        // SAFETY: the tap's owner keeps `user` valid while the tap is set (rmr_octo_set_tap)
        let rc = unsafe {
            (t.cb)(
                t.user as *mut std::ffi::c_void,
                p.as_ptr(),
                p.len() as i32,
                meid.as_ptr(),
                meid.len() as i32,
                msg.info.sub_id,
            )
        };
        if rc == 0 {
            self.stats.tapped.fetch_add(1, Ordering::Relaxed);
        }
        rc == 0
    }

    /// Set (``cb`` Some) or clear the tap of message type ``mtype``.
    pub fn set_tap(&self, mtype: i32, cb: Option<TapFn>, user: usize) {
        let mut taps = self.taps.write().unwrap_or_else(|e| e.into_inner());
        taps.retain(|t| t.mtype != mtype);
        if let Some(cb) = cb {
            taps.push(Tap { mtype, cb, user });
        }
    }

    /// Queue a message for the receive calls; false (and counted) when the queue is full.
    fn enqueue(&self, msg: Msg) -> bool {
        let mut q = lock(&self.queue);
        if q.msgs.len() >= QUEUE_CAP {
            drop(q);
            self.rx_dropped.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        q.msgs.push_back(msg);
        self.rx_enqueued.fetch_add(1, Ordering::Relaxed);
        self.rcvfd_signal(true);
        let wake = q.waiters > 0;
        drop(q);
        if wake {
            self.qcv.notify_one();
        }
        true
    }

    /// Put received messages back at the front of the receive queue, in their order
    /// (``rmr_rcv_specific`` sets aside the ones it does not wait for; they arrived before
    /// anything still queued). They were queued once, so the bound does not apply again.
    pub fn requeue_front(&self, msgs: Vec<Msg>) {
        if msgs.is_empty() {
            return;
        }
        let mut q = lock(&self.queue);
        for m in msgs.into_iter().rev() {
            q.msgs.push_front(m);
            self.rcvfd_signal(true);
        }
        let wake = q.waiters > 0;
        drop(q);
        if wake {
            self.qcv.notify_all();
        }
    }

    /// One count up (a message queued) or down (one taken) on the receive descriptor; the
    /// queue lock is held, so the count follows the queue.
    fn rcvfd_signal(&self, up: bool) {
        if self.rcvfd < 0 || !self.rcvfd_on.load(Ordering::Relaxed) {
            return;
        }
        let mut v: u64 = 1;
        // SAFETY: an 8-byte read or write on our own eventfd; EAGAIN is harmless.
        unsafe {
            let p = (&mut v as *mut u64).cast();
            if up {
                libc::write(self.rcvfd, p, 8);
            } else {
                libc::read(self.rcvfd, p, 8);
            }
        }
    }

    /// The receive descriptor; the first call starts counting, from what is queued now.
    pub fn rcvfd(&self) -> i32 {
        if self.rcvfd >= 0 {
            let q = lock(&self.queue);
            if !self.rcvfd_on.swap(true, Ordering::Relaxed) {
                let mut n = q.msgs.len() as u64;
                if n > 0 {
                    // SAFETY: an 8-byte write of the current count on our own eventfd.
                    unsafe {
                        libc::write(self.rcvfd, (&mut n as *mut u64).cast(), 8);
                    }
                }
            }
        }
        self.rcvfd
    }

    /// (queued, dropped) since the last ``reset_rx_debug``.
    pub fn rx_debug(&self) -> (u64, u64) {
        (
            self.rx_enqueued.load(Ordering::Relaxed),
            self.rx_dropped.load(Ordering::Relaxed),
        )
    }

    pub fn reset_rx_debug(&self) {
        self.rx_enqueued.store(0, Ordering::Relaxed);
        self.rx_dropped.store(0, Ordering::Relaxed);
    }

    // ---------------------------------------------------------------- route tables

    pub fn ready(&self) -> bool {
        self.table.read().map(|t| t.is_some()).unwrap_or(false)
    }

    fn install(&self, t: Table) {
        let id = t.id.clone();
        let n = t.entries.len();
        if let Ok(mut w) = self.table.write() {
            *w = Some(Arc::new(t));
        }
        self.stats.rt_installed.fetch_add(1, Ordering::Relaxed);
        log::log(
            Level::Info,
            &format!("route table {id:?} installed ({n} entries)"),
        );
    }

    fn load_seed(&self, path: &PathBuf) -> bool {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                log::log(
                    Level::Warn,
                    &format!("cannot read RMR_SEED_RT {}: {e}", path.display()),
                );
                return false;
            }
        };
        match crate::route::parse_file(&text, self.names.clone()) {
            Ok(t) => {
                if let Some(g) = t.gen {
                    // pushes older than the trusted seed are replays
                    lock(&self.builder).set_floor(g);
                }
                self.install(t);
                true
            }
            Err(e) => {
                self.stats.rt_errors.fetch_add(1, Ordering::Relaxed);
                log::log(Level::Warn, &format!("RMR_SEED_RT {}: {e}", path.display()));
                false
            }
        }
    }

    /// Sleep up to `d`; false when the context is stopping.
    fn nap(&self, d: Duration) -> bool {
        let g = lock(&self.stop_lock);
        let (g, _) = self
            .stop_cv
            .wait_timeout_while(g, d, |stopped| !*stopped)
            .unwrap_or_else(|e| e.into_inner());
        !*g
    }

    /// Static-file reloads (RMR_RTG_SVC < 0) and table requests to a route manager.
    fn rtc_loop(self: Arc<Self>) {
        let mut loaded = self.ready();
        loop {
            let wait = if loaded {
                Duration::from_secs(60)
            } else {
                Duration::from_secs(1)
            };
            if !self.nap(wait) {
                return;
            }
            if self.rt_cfg.static_only {
                if let Some(seed) = &self.rt_cfg.seed {
                    loaded = self.load_seed(seed) || loaded;
                }
            } else if let Some(addr) = &self.rt_cfg.rtg_addr {
                if !self.rt_from_rtm.load(Ordering::Acquire) {
                    self.request_table(addr);
                }
                loaded = self.rt_from_rtm.load(Ordering::Acquire);
            } else {
                loaded = true;
            }
        }
    }

    fn request_table(self: &Arc<Self>, addr: &str) {
        let mut m = Mbuf::alloc(128);
        m.mtype = RMRRM_REQ_TABLE;
        let body = format!("{}\n", String::from_utf8_lossy(&self.src));
        m.len = body.len() as i32;
        let cap = m.payload_cap();
        let n = body.len().min(cap);
        m.payload_mut()[..n].copy_from_slice(&body.as_bytes()[..n]);
        let bytes = m.wire(&self.src, &self.srcip, None).to_vec();
        let _ = self.send_to_ep(addr, &bytes, 0);
    }

    /// A message on the control port: route-manager table data (mtype 20), acked with 22.
    fn control(&self, conn: &Arc<Conn>, msg: Msg) {
        if msg.info.mtype != RMRRM_TABLE_DATA {
            return;
        }
        let p = &msg.buf[msg.info.payload_off..msg.info.payload_off + msg.info.plen];
        let text = String::from_utf8_lossy(p);
        let mut acks = Vec::new();
        {
            let mut b = lock(&self.builder);
            for line in text.split('\n') {
                let line = line.trim_end_matches('\0');
                match b.feed(line) {
                    Event::None => {}
                    Event::Complete { id } => {
                        self.install(b.table());
                        self.rt_from_rtm.store(true, Ordering::Release);
                        acks.push(format!("OK {id} \n"));
                    }
                    Event::Failed { id, reason } => {
                        self.stats.rt_errors.fetch_add(1, Ordering::Relaxed);
                        if reason.starts_with("replayed") {
                            self.stats.rt_replayed.fetch_add(1, Ordering::Relaxed);
                            once(
                                &self.logged.replay,
                                &format!("route table {id:?} from {} refused: {reason}", conn.peer),
                            );
                        }
                        acks.push(format!("ERR {id} {reason}\n"));
                    }
                }
            }
        }
        for ack in acks {
            let mut m = Mbuf::alloc(0);
            m.load(Msg {
                buf: msg.buf.clone(),
                info: msg.info,
                conn: msg.conn,
            });
            let mut body = ack.into_bytes();
            body.push(0);
            m.grow(body.len(), false);
            m.payload_mut()[..body.len()].copy_from_slice(&body);
            m.len = body.len() as i32;
            m.mtype = RMRRM_TABLE_STATE;
            m.sub_id = -1;
            let bytes = m.wire(&self.src, &self.srcip, None).to_vec();
            let _ = conn.send(&bytes, 100);
        }
    }

    // ---------------------------------------------------------------- sending

    pub fn set_retries(&self, n: i32) {
        self.retries.store(n.max(0), Ordering::Relaxed);
    }

    /// ``rmr_set_fack``: TCP_QUICKACK on the connections opened or accepted from now on, as
    /// RMR sets it when a session is established.
    pub fn set_fast_ack(&self) {
        self.fast_ack.store(true, Ordering::Relaxed);
    }

    fn retry_ms(&self) -> i32 {
        self.retries.load(Ordering::Relaxed)
    }

    /// The cached connection to "host:port", connecting when there is none.
    fn connect(self: &Arc<Self>, ep: &str) -> Result<Arc<Conn>, i32> {
        let mut out = lock(&self.out);
        if let Some(c) = out.get(ep).and_then(|s| s.conn.as_ref()) {
            if c.alive() {
                return Ok(c.clone());
            }
        }
        let slot = out.entry(ep.to_string()).or_default();
        if let Some(c) = &slot.conn {
            if c.alive() {
                return Ok(c.clone());
            }
            slot.conn = None;
        }
        if let Some((t, backoff)) = slot.failed_at {
            if t.elapsed() < backoff {
                return Err(libc::ECONNREFUSED);
            }
        }
        let addrs: Vec<SocketAddr> = match ep.to_socket_addrs() {
            Ok(a) => a.collect(),
            Err(_) => {
                slot.failed_at = Some((Instant::now(), CONNECT_BACKOFF));
                return Err(libc::EHOSTUNREACH);
            }
        };
        let mut last = libc::ECONNREFUSED;
        for a in addrs {
            match TcpStream::connect_timeout(&a, CONNECT_TIMEOUT) {
                Ok(s) => {
                    if let Err(why) = self.may_send_to(&s) {
                        // another user listens there (a port its owner gave up, say): it
                        // gets nothing from us
                        self.stats.peers_rejected.fetch_add(1, Ordering::Relaxed);
                        once(
                            &self.logged.peer_out,
                            &format!("not sending to {ep}: {why}"),
                        );
                        slot.failed_at = Some((Instant::now(), CONNECT_BACKOFF));
                        return Err(libc::EACCES);
                    }
                    slot.failed_at = None;
                    let c = match self.adopt(s, ep.to_string(), Kind::Data) {
                        Some(c) => c,
                        None => return Err(libc::EIO),
                    };
                    slot.conn = Some(c.clone());
                    self.stats.connections_made.fetch_add(1, Ordering::Relaxed);
                    return Ok(c);
                }
                Err(e) => last = e.raw_os_error().unwrap_or(libc::ECONNREFUSED),
            }
        }
        let backoff = if last == libc::ECONNREFUSED {
            REFUSED_BACKOFF
        } else {
            CONNECT_BACKOFF
        };
        slot.failed_at = Some((Instant::now(), backoff));
        Err(last)
    }

    /// Send a frame to an endpoint, reconnecting once if the cached connection died.
    fn send_to_ep(
        self: &Arc<Self>,
        ep: &str,
        bytes: &[u8],
        retry_ms: i32,
    ) -> Result<(), SendError> {
        for attempt in 0..2 {
            let c = self.connect(ep).map_err(SendError::Failed)?;
            match c.send(bytes, retry_ms) {
                Ok(()) => {
                    self.stats.sent.fetch_add(1, Ordering::Relaxed);
                    return Ok(());
                }
                Err(SendError::Failed(e)) if attempt == 0 => {
                    log::log(
                        Level::Debug,
                        &format!("send to {ep} failed ({e}); reconnecting"),
                    );
                    continue;
                }
                Err(e) => {
                    self.stats.send_failures.fetch_add(1, Ordering::Relaxed);
                    return Err(e);
                }
            }
        }
        Err(SendError::Failed(libc::ENOTCONN))
    }

    fn set_error(m: &mut Mbuf, e: SendError) {
        match e {
            SendError::Retry => {
                m.state = RMR_ERR_RETRY;
                m.tp_state = libc::EAGAIN;
            }
            SendError::Failed(errno) => {
                m.state = RMR_ERR_SENDFAILED;
                m.tp_state = errno;
            }
        }
    }

    /// Route by (mtype, sub_id) and send a copy to each group. `call_id`: Some for calls.
    pub fn send_routed(self: &Arc<Self>, m: &mut Mbuf, call_id: Option<u8>) -> bool {
        let table = self.table.read().ok().and_then(|t| t.clone());
        let Some(table) = table else {
            m.state = RMR_ERR_NOENDPT;
            m.tp_state = libc::ENXIO;
            return false;
        };
        let targets: Vec<String> = match table.lookup(m.mtype, m.sub_id).map(|e| &**e) {
            Some(Entry::Groups(gs)) => gs.iter().map(|g| g.pick().to_string()).collect(),
            Some(Entry::Meid) => {
                let meid = String::from_utf8_lossy(m.meid()).into_owned();
                table
                    .meid_owner(&meid)
                    .map(str::to_string)
                    .into_iter()
                    .collect()
            }
            None => Vec::new(),
        };
        if targets.is_empty() {
            m.state = RMR_ERR_NOENDPT;
            m.tp_state = libc::ENXIO;
            return false;
        }
        if call_id.is_none() {
            m.clear_call_id();
        }
        let retry = self.retry_ms();
        let bytes = m.wire(&self.src, &self.srcip, call_id);
        let mut first_err = None;
        for ep in &targets {
            if let Err(e) = self.send_to_ep(ep, bytes, retry) {
                first_err.get_or_insert(e);
            }
        }
        match first_err {
            None => {
                m.state = RMR_OK;
                m.tp_state = 0;
                true
            }
            Some(e) => {
                Self::set_error(m, e);
                false
            }
        }
    }

    /// Return to sender: the inbound connection first, then the sender's srcip/src.
    /// The message keeps its header (xid, sub_id, meid, d1) so it can be returned again.
    pub fn rts(self: &Arc<Self>, m: &mut Mbuf) -> bool {
        let hold_src = m.src().to_vec();
        let hold_ip = m.srcip().to_vec();
        let conn = if m.rts_conn != 0 {
            lock(&self.conns)
                .get(&m.rts_conn)
                .filter(|c| c.alive())
                .cloned()
        } else {
            None
        };
        let retry = self.retry_ms();
        let bytes = m.wire(&self.src, &self.srcip, None);
        let r = match conn {
            Some(c) => {
                let r = c.send(bytes, retry);
                if r.is_ok() {
                    self.stats.sent.fetch_add(1, Ordering::Relaxed);
                }
                r
            }
            None => {
                let ep = if !hold_ip.is_empty() {
                    &hold_ip
                } else {
                    &hold_src
                };
                if ep.is_empty() {
                    Err(SendError::Failed(libc::ENOTCONN))
                } else {
                    let ep = String::from_utf8_lossy(ep).into_owned();
                    self.send_to_ep(&ep, bytes, retry)
                }
            }
        };
        // Restore the original sender so rts can be called again on this message.
        let h = m.header_mut();
        frame::put_cstr(h, frame::OFF_SRC, frame::SRC_LEN, &hold_src);
        frame::put_cstr(h, frame::OFF_SRCIP, frame::SRCIP_LEN, &hold_ip);
        match r {
            Ok(()) => {
                m.state = RMR_OK;
                m.tp_state = 0;
                true
            }
            Err(e) => {
                if m.rts_conn != 0 && matches!(e, SendError::Failed(_)) {
                    m.state = RMR_ERR_SENDFAILED;
                } else {
                    Self::set_error(m, e);
                }
                false
            }
        }
    }

    // ---------------------------------------------------------------- receiving

    /// Pop the next message; None on timeout (`None` timeout: wait until one arrives or
    /// the context stops).
    pub fn receive(&self, timeout: Option<Duration>) -> Option<Msg> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut q = lock(&self.queue);
        loop {
            if let Some(m) = q.msgs.pop_front() {
                self.rcvfd_signal(false);
                return Some(m);
            }
            if self.stopping() {
                return None;
            }
            let wait = match deadline {
                None => Duration::from_millis(500),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return None;
                    }
                    d - now
                }
            };
            q.waiters += 1;
            q = self
                .qcv
                .wait_timeout(q, wait)
                .unwrap_or_else(|e| e.into_inner())
                .0;
            q.waiters -= 1;
        }
    }

    /// Send as a call and wait for the reply carrying `call_id` and the same xid.
    pub fn call(self: &Arc<Self>, m: &mut Mbuf, call_id: u8, wait: Duration, wh: Option<i32>) {
        let xid = m.xid().to_vec();
        lock(&self.chutes).remove(&call_id);
        let sent = match wh {
            None => self.send_routed(m, Some(call_id)),
            Some(id) => self.wh_send(id, m, Some(call_id)),
        };
        if !sent {
            return;
        }
        let deadline = Instant::now() + wait;
        let mut ch = lock(&self.chutes);
        loop {
            if let Some(reply) = ch.remove(&call_id) {
                let rx = &reply.buf[frame::TP_HDR_LEN + frame::OFF_XID
                    ..frame::TP_HDR_LEN + frame::OFF_XID + frame::XID_LEN];
                if rx == xid.as_slice() {
                    drop(ch);
                    m.load(reply);
                    return;
                }
                continue; // a stale reply for an older call: drop it
            }
            let now = Instant::now();
            if now >= deadline || self.stopping() {
                m.state = RMR_ERR_TIMEOUT;
                m.tp_state = libc::ETIMEDOUT;
                return;
            }
            ch = self
                .ccv
                .wait_timeout(ch, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    // ---------------------------------------------------------------- wormholes

    pub fn wh_open(self: &Arc<Self>, target: &str) -> i32 {
        if self.connect(target).is_err() {
            return -1;
        }
        let mut w = lock(&self.whs);
        if let Some(i) = w.iter().position(|x| x.as_deref() == Some(target)) {
            return i as i32;
        }
        if let Some(i) = w.iter().position(Option::is_none) {
            w[i] = Some(target.to_string());
            return i as i32;
        }
        w.push(Some(target.to_string()));
        (w.len() - 1) as i32
    }

    fn wh_target(&self, id: i32) -> Result<String, i32> {
        let w = lock(&self.whs);
        if w.iter().all(Option::is_none) {
            return Err(RMR_ERR_NOWHOPEN);
        }
        usize::try_from(id)
            .ok()
            .and_then(|i| w.get(i).cloned().flatten())
            .ok_or(RMR_ERR_WHID)
    }

    pub fn wh_send(self: &Arc<Self>, id: i32, m: &mut Mbuf, call_id: Option<u8>) -> bool {
        let target = match self.wh_target(id) {
            Ok(t) => t,
            Err(state) => {
                m.state = state;
                m.tp_state = libc::EINVAL;
                return false;
            }
        };
        if call_id.is_none() {
            m.clear_call_id();
        }
        let retry = self.retry_ms();
        let bytes = m.wire(&self.src, &self.srcip, call_id);
        match self.send_to_ep(&target, bytes, retry) {
            Ok(()) => {
                m.state = RMR_OK;
                m.tp_state = 0;
                true
            }
            Err(e) => {
                Self::set_error(m, e);
                false
            }
        }
    }

    pub fn wh_state(self: &Arc<Self>, id: i32) -> i32 {
        match self.wh_target(id) {
            Err(e) => e,
            Ok(t) => match self.connect(&t) {
                Ok(_) => RMR_OK,
                Err(_) => RMR_ERR_NOENDPT,
            },
        }
    }

    pub fn wh_close(&self, id: i32) {
        let mut w = lock(&self.whs);
        if let Some(slot) = usize::try_from(id).ok().and_then(|i| w.get_mut(i)) {
            *slot = None;
        }
    }

    // ---------------------------------------------------------------- shutdown

    /// Stop every thread and close every socket; joins the threads.
    pub fn close(&self) {
        if self.stop.swap(true, Ordering::AcqRel) {
            return;
        }
        *lock(&self.stop_lock) = true;
        self.stop_cv.notify_all();
        for l in lock(&self.listeners).drain(..) {
            // SAFETY: shutdown on a listening fd we own wakes the blocked accept().
            unsafe {
                libc::shutdown(l.as_raw_fd(), libc::SHUT_RDWR);
            }
        }
        let conns: Vec<Arc<Conn>> = lock(&self.conns).values().cloned().collect();
        for c in conns {
            c.close();
        }
        lock(&self.out).clear();
        self.qcv.notify_all();
        self.ccv.notify_all();
        loop {
            let hs: Vec<JoinHandle<()>> = lock(&self.threads).drain(..).collect();
            if hs.is_empty() {
                break;
            }
            for h in hs {
                let _ = h.join();
            }
            // Readers adopted during shutdown were closed at adoption.
            let conns: Vec<Arc<Conn>> = lock(&self.conns).values().cloned().collect();
            for c in conns {
                c.close();
            }
        }
        lock(&self.queue).msgs.clear();
        lock(&self.chutes).clear();
        lock(&self.conns).clear();
    }
}

impl Drop for Ctx {
    fn drop(&mut self) {
        if self.rcvfd >= 0 {
            // SAFETY: our own eventfd, closed once, when the last reference goes.
            unsafe {
                libc::close(self.rcvfd);
            }
        }
    }
}
