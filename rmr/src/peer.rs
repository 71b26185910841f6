//! Who is on the other end of an accepted connection (issue #43).
//!
//! The kernel knows the owner of every TCP socket of this network namespace: sock_diag
//! (NETLINK_SOCK_DIAG, `inet_diag_req_v2`) looks a socket up by its 4-tuple and answers with its
//! uid and inode. A peer whose socket is found here is a local process: it is admitted only if
//! its uid is allowed (the run's user and root by default, `OCTORIC_RMR_PEER_UIDS`). A peer not
//! found here is remote (another host, pod or container network namespace) and follows
//! `OCTORIC_RMR_REMOTE_PEERS` (allowed by default: in a cluster the pod network, and its
//! NetworkPolicies, decide who reaches an RMR port).
//!
//! A frame's sender field is then checked against the connection: for a local peer, the port
//! the `src` (and `srcip`) field names must be a TCP port some process owning the peer socket
//! listens on (its fds are read from /proc); for a remote peer (only with
//! `OCTORIC_RMR_SENDER_CHECK=strict`), an IP in `srcip` must be the connection's peer address.

use std::collections::{HashMap, HashSet};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const NETLINK_SOCK_DIAG: i32 = 4;
const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const TCP_LISTEN: u32 = 10;
const NLMSG_HDR: usize = 16;
const REQ_LEN: usize = 56; // inet_diag_req_v2
const MSG_LEN: usize = 72; // inet_diag_msg

/// What sock_diag says about one socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SockInfo {
    pub uid: u32,
    pub inode: u64,
}

/// Local peers admitted by uid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Uids {
    Any,
    List(Vec<u32>),
}

/// Who may connect, and whether frames' sender fields are checked (`Config::peers`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerPolicy {
    pub uids: Uids,
    pub remote: bool,
    pub sender_check: bool,
    /// Check remote peers' `srcip` too (OCTORIC_RMR_SENDER_CHECK=strict). Off by default: a
    /// multi-homed or host-network peer's `srcip` (RMR takes its first interface's address)
    /// need not be the address its connection comes from, and names cannot be checked.
    pub remote_sender_check: bool,
}

impl Default for PeerPolicy {
    /// The run's user and root; remote peers allowed; senders checked.
    fn default() -> Self {
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        PeerPolicy {
            uids: Uids::List(if me == 0 { vec![0] } else { vec![me, 0] }),
            remote: true,
            sender_check: true,
            remote_sender_check: false,
        }
    }
}

impl PeerPolicy {
    /// OCTORIC_RMR_PEER_UIDS (`any`, or uids separated by commas), OCTORIC_RMR_REMOTE_PEERS
    /// (`allow` | `deny`), OCTORIC_RMR_SENDER_CHECK (`0` turns it off, `strict` checks remote
    /// peers' `srcip` too).
    pub fn from_env() -> PeerPolicy {
        let mut p = PeerPolicy::default();
        if let Ok(v) = std::env::var("OCTORIC_RMR_PEER_UIDS") {
            let v = v.trim();
            if v == "any" || v == "*" {
                p.uids = Uids::Any;
            } else if !v.is_empty() {
                let list: Vec<u32> = v
                    .split(',')
                    .filter_map(|s| s.trim().parse::<u32>().ok())
                    .collect();
                if !list.is_empty() {
                    p.uids = Uids::List(list);
                }
            }
        }
        if let Ok(v) = std::env::var("OCTORIC_RMR_REMOTE_PEERS") {
            p.remote = !matches!(v.trim(), "deny" | "0" | "no");
        }
        if let Ok(v) = std::env::var("OCTORIC_RMR_SENDER_CHECK") {
            p.sender_check = !matches!(v.trim(), "0" | "off" | "no");
            p.remote_sender_check = v.trim() == "strict";
        }
        p
    }

    pub fn uid_allowed(&self, uid: u32) -> bool {
        match &self.uids {
            Uids::Any => true,
            Uids::List(l) => l.contains(&uid),
        }
    }
}

fn unmap(a: SocketAddr) -> SocketAddr {
    match a {
        SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(IpAddr::V4(v4), v6.port()),
            None => a,
        },
        v4 => v4,
    }
}

fn put_addr(buf: &mut [u8], ip: IpAddr) {
    match ip {
        IpAddr::V4(v4) => buf[..4].copy_from_slice(&v4.octets()),
        IpAddr::V6(v6) => buf[..16].copy_from_slice(&v6.octets()),
    }
}

/// One request to the kernel; every inet_diag_msg of the answer.
fn query(req: &[u8; REQ_LEN], dump: bool) -> io::Result<Vec<[u8; MSG_LEN]>> {
    // SAFETY: plain socket(2); the fd is closed below on every path.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            NETLINK_SOCK_DIAG,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let r = query_fd(fd, req, dump);
    // SAFETY: our own fd, closed once.
    unsafe { libc::close(fd) };
    r
}

fn query_fd(fd: i32, req: &[u8; REQ_LEN], dump: bool) -> io::Result<Vec<[u8; MSG_LEN]>> {
    let tv = libc::timeval {
        tv_sec: 1,
        tv_usec: 0,
    };
    // SAFETY: a timeval of the size given, on our own fd.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&tv as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        );
    }
    let mut msg = [0u8; NLMSG_HDR + REQ_LEN];
    msg[0..4].copy_from_slice(&((NLMSG_HDR + REQ_LEN) as u32).to_ne_bytes());
    msg[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    let flags = libc::NLM_F_REQUEST as u16 | if dump { libc::NLM_F_DUMP as u16 } else { 0 };
    msg[6..8].copy_from_slice(&flags.to_ne_bytes());
    msg[8..12].copy_from_slice(&1u32.to_ne_bytes());
    msg[NLMSG_HDR..].copy_from_slice(req);
    // SAFETY: zeroed sockaddr_nl (pid 0: the kernel) of the size given; msg is a live buffer.
    let sent = unsafe {
        let mut sa: libc::sockaddr_nl = std::mem::zeroed();
        sa.nl_family = libc::AF_NETLINK as u16;
        libc::sendto(
            fd,
            msg.as_ptr().cast(),
            msg.len(),
            0,
            (&sa as *const libc::sockaddr_nl).cast(),
            std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
        )
    };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        // SAFETY: recv into our own live buffer of its length.
        let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let n = n as usize;
        let mut off = 0;
        while off + NLMSG_HDR <= n {
            let len = u32::from_ne_bytes(buf[off..off + 4].try_into().unwrap_or([0; 4])) as usize;
            let ty = u16::from_ne_bytes([buf[off + 4], buf[off + 5]]);
            if len < NLMSG_HDR || off + len > n {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "bad netlink"));
            }
            match ty {
                NLMSG_DONE => return Ok(out),
                NLMSG_ERROR => {
                    let e = i32::from_ne_bytes(
                        buf[off + NLMSG_HDR..off + NLMSG_HDR + 4]
                            .try_into()
                            .unwrap_or([0; 4]),
                    );
                    if e == 0 {
                        return Ok(out);
                    }
                    return Err(io::Error::from_raw_os_error(-e));
                }
                SOCK_DIAG_BY_FAMILY if len >= NLMSG_HDR + MSG_LEN => {
                    let mut m = [0u8; MSG_LEN];
                    m.copy_from_slice(&buf[off + NLMSG_HDR..off + NLMSG_HDR + MSG_LEN]);
                    out.push(m);
                }
                _ => {}
            }
            off += (len + 3) & !3;
        }
        if !dump {
            return Ok(out);
        }
    }
}

fn info(m: &[u8; MSG_LEN]) -> SockInfo {
    SockInfo {
        uid: u32::from_ne_bytes(m[64..68].try_into().unwrap_or([0; 4])),
        inode: u32::from_ne_bytes(m[68..72].try_into().unwrap_or([0; 4])) as u64,
    }
}

/// The socket whose local address is `local` and remote address `remote`, if it is in this
/// network namespace. Err: sock_diag itself failed (not "not found").
pub fn lookup(local: SocketAddr, remote: SocketAddr) -> io::Result<Option<SockInfo>> {
    let (local, remote) = (unmap(local), unmap(remote));
    let family = if local.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    };
    if local.is_ipv4() != remote.is_ipv4() {
        return Ok(None);
    }
    let mut req = [0u8; REQ_LEN];
    req[0] = family as u8;
    req[1] = libc::IPPROTO_TCP as u8;
    req[4..8].copy_from_slice(&u32::MAX.to_ne_bytes()); // every state
    let id = &mut req[8..];
    id[0..2].copy_from_slice(&local.port().to_be_bytes());
    id[2..4].copy_from_slice(&remote.port().to_be_bytes());
    put_addr(&mut id[4..20], local.ip());
    put_addr(&mut id[20..36], remote.ip());
    id[40..48].copy_from_slice(&[0xff; 8]); // INET_DIAG_NOCOOKIE
    match query(&req, false) {
        Ok(v) => Ok(v.first().map(info)),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Every listening TCP socket of this network namespace: inode -> port.
pub fn listeners() -> HashMap<u64, u16> {
    let mut out = HashMap::new();
    for family in [libc::AF_INET, libc::AF_INET6] {
        let mut req = [0u8; REQ_LEN];
        req[0] = family as u8;
        req[1] = libc::IPPROTO_TCP as u8;
        req[4..8].copy_from_slice(&(1u32 << TCP_LISTEN).to_ne_bytes());
        req[8 + 40..8 + 48].copy_from_slice(&[0xff; 8]);
        if let Ok(v) = query(&req, true) {
            for m in &v {
                let port = u16::from_be_bytes([m[4], m[5]]);
                out.insert(info(m).inode, port);
            }
        }
    }
    out
}

fn socket_inodes(pid: &str) -> Vec<u64> {
    let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    rd.filter_map(|e| {
        let l = std::fs::read_link(e.ok()?.path()).ok()?;
        let s = l.to_str()?;
        s.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
    })
    .collect()
}

/// Processes that owned peer sockets lately (peers reconnect from the same process): looked
/// at first, which spares most connections the scan of every process (~20 ms at 120).
static RECENT_OWNERS: Mutex<Vec<String>> = Mutex::new(Vec::new());
const RECENT_MAX: usize = 32;

fn ports_of(inodes: &[u64], ls: &HashMap<u64, u16>) -> HashSet<u16> {
    inodes.iter().filter_map(|i| ls.get(i).copied()).collect()
}

/// The TCP ports listened on by the processes that hold the socket `inode` (owned by `uid`).
/// `want`: the ports the caller hopes for; a process seen lately (or this one) that holds the
/// socket and listens on all of them answers at once. None when no process holding the
/// socket is visible here (another PID namespace, or /proc unreadable).
pub fn owner_ports(inode: u64, uid: u32, want: &[u16]) -> Option<HashSet<u16>> {
    use std::os::unix::fs::MetadataExt;
    let mut ls: Option<HashMap<u64, u16>> = None;
    let mut quick = vec!["self".to_string()];
    quick.extend(
        RECENT_OWNERS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned(),
    );
    for pid in &quick {
        let inodes = socket_inodes(pid);
        if inodes.contains(&inode) {
            let ports = ports_of(&inodes, ls.get_or_insert_with(listeners));
            if want.iter().all(|w| ports.contains(w)) {
                return Some(ports);
            }
        }
    }
    let mut pids: Vec<String> = Vec::new();
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.flatten() {
            let name = e.file_name();
            let Some(n) = name.to_str() else { continue };
            if !n.bytes().all(|c| c.is_ascii_digit()) {
                continue;
            }
            match e.metadata() {
                Ok(md) if md.uid() == uid => pids.push(n.to_string()),
                _ => {}
            }
        }
    }
    let mut owners: Vec<(String, Vec<u64>)> = Vec::new();
    for pid in pids {
        let inodes = socket_inodes(&pid);
        if inodes.contains(&inode) {
            owners.push((pid, inodes));
        }
    }
    if owners.is_empty() {
        return None;
    }
    let ls = ls.get_or_insert_with(listeners);
    let mut recent = RECENT_OWNERS.lock().unwrap_or_else(|e| e.into_inner());
    for (pid, _) in &owners {
        recent.retain(|p| p != pid);
        recent.insert(0, pid.clone());
    }
    recent.truncate(RECENT_MAX);
    Some(owners.iter().flat_map(|(_, i)| ports_of(i, ls)).collect())
}

/// The port of a "host:port" sender field.
fn field_port(f: &[u8]) -> Option<u16> {
    let s = std::str::from_utf8(f).ok()?;
    s.rsplit_once(':')?.1.parse().ok()
}

fn field_ip(f: &[u8]) -> Option<IpAddr> {
    let s = std::str::from_utf8(f).ok()?;
    let host = s.rsplit_once(':')?.0;
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok()
}

/// Who an accepted connection comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    Local(SockInfo),
    Remote(IpAddr),
}

/// Why a frame's sender was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The frame names a sender the connection's peer is not.
    Forged(String),
}

/// Per-connection sender verification, owned by the connection's reader thread.
#[derive(Debug)]
pub struct SenderCheck {
    peer: Peer,
    /// (src, srcip) pairs verified already.
    ok: Vec<(Vec<u8>, Vec<u8>)>,
    ports: Option<HashSet<u16>>,
    looked: Option<Instant>,
    /// No process holding the peer's socket is visible here: the peer runs in another PID
    /// namespace (a container sharing our network namespace, or we are the container).
    unseen: bool,
    /// Refuse such an unverifiable sender (OCTORIC_RMR_SENDER_CHECK=strict) instead of
    /// admitting it as a remote peer's is.
    strict: bool,
}

/// How often a connection's owner ports are looked up again when a frame names another port.
const RELOOK: Duration = Duration::from_secs(1);

impl SenderCheck {
    pub fn new(peer: Peer, strict: bool) -> SenderCheck {
        SenderCheck {
            peer,
            ok: Vec::new(),
            ports: None,
            looked: None,
            unseen: false,
            strict,
        }
    }

    fn ports_hold(&mut self, want: &[u16]) -> bool {
        let Peer::Local(si) = self.peer else {
            return false;
        };
        let fresh = self.looked.is_none_or(|t| t.elapsed() >= RELOOK);
        let have = |p: &Option<HashSet<u16>>| {
            p.as_ref()
                .is_some_and(|s| want.iter().all(|w| s.contains(w)))
        };
        if have(&self.ports) {
            return true;
        }
        if !fresh {
            return false;
        }
        let t0 = Instant::now();
        self.looked = Some(t0);
        self.ports = owner_ports(si.inode, si.uid, want);
        self.unseen = self.ports.is_none();
        crate::log::log(
            crate::log::Level::Debug,
            &format!(
                "peer socket {} (uid {}): its process listens on {:?} (looked up in {} us)",
                si.inode,
                si.uid,
                self.ports,
                t0.elapsed().as_micros()
            ),
        );
        have(&self.ports)
    }

    /// Is a frame with these sender fields from this connection's peer?
    pub fn check(&mut self, src: &[u8], srcip: &[u8]) -> Result<(), Refusal> {
        if self.ok.iter().any(|(a, b)| a == src && b == srcip) {
            return Ok(());
        }
        let shown = || {
            format!(
                "src {:?} srcip {:?}",
                String::from_utf8_lossy(src),
                String::from_utf8_lossy(srcip)
            )
        };
        let ok = match self.peer {
            Peer::Local(_) => {
                let mut want = Vec::new();
                for f in [src, srcip] {
                    if !f.is_empty() {
                        match field_port(f) {
                            Some(p) => want.push(p),
                            None => return Err(Refusal::Forged(shown())),
                        }
                    }
                }
                // a peer whose process we cannot see (another PID namespace) is taken as a
                // remote peer is: its uid was checked at accept, its sender fields cannot be
                !want.is_empty() && (self.ports_hold(&want) || (self.unseen && !self.strict))
            }
            Peer::Remote(ip) => match field_ip(srcip) {
                Some(claimed) => unmap(SocketAddr::new(claimed, 0)).ip() == ip,
                None => !src.is_empty() || !srcip.is_empty(),
            },
        };
        if !ok {
            return Err(Refusal::Forged(shown()));
        }
        if self.ok.len() >= 8 {
            self.ok.remove(0);
        }
        self.ok.push((src.to_vec(), srcip.to_vec()));
        Ok(())
    }
}

/// The peer's end of a connection whose ends are `ours` and `peer`, if the peer is in this
/// network namespace.
pub fn lookup_peer(ours: SocketAddr, peer: SocketAddr) -> io::Result<Option<SockInfo>> {
    lookup(peer, ours)
}

/// Classify an accepted connection: Ok(peer) to admit it, Err(reason) to close it.
pub fn admit(local: SocketAddr, remote: SocketAddr, policy: &PeerPolicy) -> Result<Peer, String> {
    let remote = unmap(remote);
    match lookup_peer(local, remote) {
        Ok(Some(si)) => {
            if policy.uid_allowed(si.uid) {
                Ok(Peer::Local(si))
            } else {
                Err(format!("local peer {remote} runs as uid {}", si.uid))
            }
        }
        Ok(None) if remote.ip().is_loopback() => {
            Err(format!("loopback peer {remote} not found (gone already?)"))
        }
        Ok(None) => {
            if policy.remote {
                Ok(Peer::Remote(remote.ip()))
            } else {
                Err(format!(
                    "remote peer {remote} (OCTORIC_RMR_REMOTE_PEERS=deny)"
                ))
            }
        }
        Err(e) => Err(format!(
            "cannot tell who {remote} is (sock_diag: {e}; OCTORIC_RMR_PEER_UIDS=any turns the check off)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn finds_own_sockets_and_ports() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, peer) = l.accept().unwrap();
        let si = lookup_peer(s.local_addr().unwrap(), peer)
            .unwrap()
            .expect("the peer socket");
        let ours = lookup(s.local_addr().unwrap(), peer)
            .unwrap()
            .expect("ours");
        assert_ne!(si.inode, ours.inode);
        // SAFETY: no preconditions.
        assert_eq!(si.uid, unsafe { libc::geteuid() });
        let ports = owner_ports(si.inode, si.uid, &[]).expect("our own process");
        assert!(ports.contains(&l.local_addr().unwrap().port()));
        let mut chk = SenderCheck::new(Peer::Local(si), false);
        let mine = format!("x:{}", l.local_addr().unwrap().port());
        assert!(chk.check(mine.as_bytes(), b"").is_ok());
        assert!(chk.check(b"x:1", b"").is_err());
        assert!(chk.check(b"", b"").is_err());
        drop(c);
        let p = PeerPolicy::default();
        assert!(matches!(
            admit(s.local_addr().unwrap(), peer, &p),
            Ok(Peer::Local(_)) | Err(_)
        ));
    }

    #[test]
    fn remote_srcip_must_be_the_peer() {
        let ip: IpAddr = "10.1.2.3".parse().unwrap();
        let mut chk = SenderCheck::new(Peer::Remote(ip), false);
        assert!(chk.check(b"e2term:4560", b"10.1.2.3:4560").is_ok());
        assert!(chk.check(b"e2term:4560", b"10.9.9.9:4560").is_err());
        assert!(chk.check(b"e2term:4560", b"e2term:4560").is_ok()); // names: not checkable
    }

    #[test]
    fn a_peer_in_another_pid_namespace_is_taken_as_remote_unless_strict() {
        // a socket no process visible here holds: what a container sharing our network
        // namespace (or the host, seen from inside one) looks like
        let si = SockInfo {
            uid: 0,
            inode: u64::MAX - 7,
        };
        let mut chk = SenderCheck::new(Peer::Local(si), false);
        assert!(chk.check(b"127.0.0.1:38000", b"127.0.0.1:38000").is_ok());
        assert!(
            chk.check(b"no-port", b"").is_err(),
            "a malformed sender still is"
        );
        let mut strict = SenderCheck::new(Peer::Local(si), true);
        assert!(strict.check(b"127.0.0.1:38000", b"").is_err());
    }
}
