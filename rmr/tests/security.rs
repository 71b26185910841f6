//! Issue #43: who may connect, forged sender fields, replayed route tables, listener limits.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock, RwLockReadGuard};
use std::time::{Duration, Instant};

use rmr_si::context::{Config, Ctx, ListenLimits, RtConfig};
use rmr_si::peer::{PeerPolicy, Uids};

/// The tests of this binary run in parallel threads of one process; the one that counts the
/// process's threads takes this for writing, so no other test starts threads meanwhile.
static QUIET: RwLock<()> = RwLock::new(());

fn shared() -> RwLockReadGuard<'static, ()> {
    QUIET.read().unwrap_or_else(|e| e.into_inner())
}

fn cfg(ctl_port: Option<u16>) -> Config {
    Config {
        bind_if: Some("127.0.0.1".into()),
        src_id: Some("t".into()),
        name_only: false,
        rt: RtConfig {
            seed: None,
            static_only: ctl_port.is_none(),
            ctl_port,
            rtg_addr: None,
        },
        peers: PeerPolicy::default(),
        limits: ListenLimits::default(),
    }
}

fn ctx_with(c: Config) -> Arc<Ctx> {
    Ctx::init_with("0", 4096, 0, c).unwrap()
}

fn listener_port(l: &TcpListener) -> u16 {
    l.local_addr().unwrap().port()
}

/// A hand-built frame of `mtype` naming `src` as its sender.
fn frame(mtype: u32, src: &str, payload: &[u8]) -> Vec<u8> {
    let total = 50 + 280 + 4 + payload.len();
    let mut f = vec![0u8; total];
    f[0..4].copy_from_slice(&(total as u32).to_le_bytes());
    f[4..8].copy_from_slice(&(total as u32).to_be_bytes());
    f[8] = b'$';
    let h = 50;
    f[h..h + 4].copy_from_slice(&mtype.to_be_bytes());
    f[h + 4..h + 8].copy_from_slice(&(payload.len() as u32).to_be_bytes());
    f[h + 8..h + 12].copy_from_slice(&3u32.to_be_bytes());
    f[h + 76..h + 76 + src.len()].copy_from_slice(src.as_bytes());
    f[h + 196..h + 200].copy_from_slice(&280u32.to_be_bytes());
    f[h + 204..h + 208].copy_from_slice(&4u32.to_be_bytes());
    f[h + 212..h + 216].copy_from_slice(&(-1i32).to_be_bytes());
    f[h + 284..].copy_from_slice(payload);
    f
}

fn wait_until(mut f: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(5) {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

fn is_root() -> bool {
    // SAFETY: no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Another process listening on a port (the endpoint a forger pretends to be).
fn other_listener() -> (Child, u16) {
    let mut c = Command::new("python3")
        .args([
            "-c",
            "import socket,time\ns=socket.socket()\ns.bind(('127.0.0.1',0))\ns.listen()\n\
             print(s.getsockname()[1],flush=True)\ntime.sleep(60)",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    let mut out = c.stdout.take().unwrap();
    let mut s = String::new();
    let mut b = [0u8; 1];
    while out.read(&mut b).unwrap() == 1 && b[0] != b'\n' {
        s.push(b[0] as char);
    }
    (c, s.trim().parse().unwrap())
}

fn closed_by_peer(s: &mut TcpStream, within: Duration) -> bool {
    s.set_read_timeout(Some(within)).unwrap();
    let mut b = [0u8; 16];
    matches!(s.read(&mut b), Ok(0) | Err(_))
}

#[test]
fn forged_sender_is_dropped_and_counted() {
    let _shared = shared();
    let rx = ctx_with(cfg(None));
    let mine = TcpListener::bind("127.0.0.1:0").unwrap(); // where this "peer" listens
    let (mut other, other_port) = other_listener();
    let mut s = TcpStream::connect(("127.0.0.1", rx.port)).unwrap();
    // claims to be the other process (say submgr): dropped
    s.write_all(&frame(12020, &format!("submgr:{other_port}"), b"del"))
        .unwrap();
    // claims a port nobody listens on: dropped
    s.write_all(&frame(12020, "submgr:1", b"del")).unwrap();
    // its own name: delivered
    s.write_all(&frame(
        12050,
        &format!("me:{}", listener_port(&mine)),
        b"ok",
    ))
    .unwrap();
    let got = rx.receive(Some(Duration::from_secs(5))).expect("own frame");
    assert_eq!(got.info.mtype, 12050);
    assert!(rx.receive(Some(Duration::from_millis(200))).is_none());
    assert_eq!(rx.stats.forged_senders.load(Ordering::Relaxed), 2);
    // the other process, connecting itself, may use its own name (a real peer)
    let _ = other.kill();
    let _ = other.wait();
    rx.close();
}

#[test]
fn sender_check_off_delivers_forgeries() {
    let _shared = shared();
    let mut c = cfg(None);
    c.peers.sender_check = false;
    let rx = ctx_with(c);
    let mut s = TcpStream::connect(("127.0.0.1", rx.port)).unwrap();
    s.write_all(&frame(12020, "submgr:1", b"del")).unwrap();
    assert!(rx.receive(Some(Duration::from_secs(5))).is_some());
    rx.close();
}

/// Run python3 as `nobody` connecting to `port` and sending `data`; its exit status.
fn as_nobody(port: u16, data: &[u8]) -> std::process::ExitStatus {
    let code = "import socket,sys,time\n\
                s=socket.create_connection(('127.0.0.1',int(sys.argv[1])))\n\
                s.sendall(sys.stdin.buffer.read())\ntime.sleep(0.3)\n";
    let mut c = Command::new("python3")
        .args(["-c", code, &port.to_string()])
        .uid(65534)
        .gid(65534)
        .stdin(Stdio::piped())
        .spawn()
        .expect("python3 as nobody");
    c.stdin.take().unwrap().write_all(data).unwrap();
    c.wait().unwrap()
}

#[test]
fn other_users_are_refused_unless_allowed() {
    let _shared = shared();
    if !is_root() {
        eprintln!("skipped: needs root to run a peer as nobody");
        return;
    }
    let rx = ctx_with(cfg(None));
    let mine = TcpListener::bind("127.0.0.1:0").unwrap();
    let f = frame(12050, &format!("x:{}", listener_port(&mine)), b"hi");
    as_nobody(rx.port, &f);
    assert!(rx.receive(Some(Duration::from_millis(300))).is_none());
    assert!(rx.stats.peers_rejected.load(Ordering::Relaxed) >= 1);
    assert_eq!(rx.stats.connections_accepted.load(Ordering::Relaxed), 0);
    rx.close();

    // allow-listed: admitted (its frame still has to name a port that process listens on,
    // which it does not: forged; the connection itself is accepted)
    let mut c = cfg(None);
    c.peers.uids = Uids::List(vec![0, 65534]);
    let rx = ctx_with(c);
    as_nobody(rx.port, &f);
    assert!(wait_until(|| rx
        .stats
        .connections_accepted
        .load(Ordering::Relaxed)
        == 1));
    assert_eq!(rx.stats.peers_rejected.load(Ordering::Relaxed), 0);
    assert!(wait_until(|| rx
        .stats
        .forged_senders
        .load(Ordering::Relaxed)
        == 1));
    rx.close();
}

#[test]
fn replayed_route_tables_are_refused() {
    let _shared = shared();
    let ctl = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        listener_port(&l)
    };
    let rx = ctx_with(cfg(Some(ctl)));
    let mine = TcpListener::bind("127.0.0.1:0").unwrap();
    let src = format!("rtmgr:{}", listener_port(&mine));
    let mut s = TcpStream::connect(("127.0.0.1", ctl)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut push = |body: &str| -> String {
        s.write_all(&frame(20, &src, body.as_bytes())).unwrap();
        let mut prefix = [0u8; 50];
        s.read_exact(&mut prefix).unwrap();
        let total = u32::from_le_bytes(prefix[0..4].try_into().unwrap()) as usize;
        let mut rest = vec![0u8; total - 50];
        s.read_exact(&mut rest).unwrap();
        String::from_utf8_lossy(&rest[284..])
            .trim_end_matches('\0')
            .to_string()
    };
    let t = |id: &str, ep: &str, gen: u64| {
        format!("newrt|start|{id}\nrte|5|{ep}\nnewrt|end|1|gen={gen}\n")
    };
    assert!(push(&t("a", "127.0.0.1:1", 10)).starts_with("OK a"));
    let replay = push(&t("a", "127.0.0.1:1", 10));
    assert!(replay.starts_with("ERR a replayed"), "{replay}");
    assert!(push(&t("old", "127.0.0.1:2", 9)).starts_with("ERR old replayed"));
    assert!(push(&t("b", "127.0.0.1:3", 11)).starts_with("OK b"));
    assert_eq!(rx.stats.rt_replayed.load(Ordering::Relaxed), 2);
    rx.close();
}

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

#[test]
fn connection_cap_per_listener() {
    let _alone = QUIET.write().unwrap_or_else(|e| e.into_inner());
    let mut c = cfg(None);
    c.limits.max_conns = 8;
    let rx = ctx_with(c);
    let before = threads();
    let mut held = Vec::new();
    for _ in 0..40 {
        held.push(TcpStream::connect(("127.0.0.1", rx.port)).unwrap());
    }
    assert!(wait_until(|| rx
        .stats
        .conns_over_cap
        .load(Ordering::Relaxed)
        == 32));
    assert_eq!(rx.stats.connections_accepted.load(Ordering::Relaxed), 8);
    assert!(threads() <= before + 8 + 2, "{} threads", threads());
    // once some close, new connections get in again
    held.truncate(0);
    let mine = TcpListener::bind("127.0.0.1:0").unwrap();
    assert!(wait_until(|| {
        let mut s = TcpStream::connect(("127.0.0.1", rx.port)).unwrap();
        s.write_all(&frame(7, &format!("m:{}", listener_port(&mine)), b"x"))
            .unwrap();
        rx.receive(Some(Duration::from_millis(100))).is_some()
    }));
    rx.close();
}

#[test]
fn half_sent_frame_hits_the_deadline_idle_does_not() {
    let _shared = shared();
    let mut c = cfg(None);
    c.limits.frame.frame_deadline = Duration::from_millis(300);
    let rx = ctx_with(c);
    let mine = TcpListener::bind("127.0.0.1:0").unwrap();
    let f = frame(7, &format!("m:{}", listener_port(&mine)), &[1u8; 1000]);
    let mut idle = TcpStream::connect(("127.0.0.1", rx.port)).unwrap();
    let mut slow = TcpStream::connect(("127.0.0.1", rx.port)).unwrap();
    slow.write_all(&f[..500]).unwrap(); // prefix and some: then nothing
    let t0 = Instant::now();
    assert!(closed_by_peer(&mut slow, Duration::from_secs(5)));
    assert!(t0.elapsed() < Duration::from_secs(3));
    assert_eq!(rx.stats.frames_timed_out.load(Ordering::Relaxed), 1);
    // the idle connection (no frame started) stays open and works
    std::thread::sleep(Duration::from_millis(400));
    idle.write_all(&f).unwrap();
    assert!(rx.receive(Some(Duration::from_secs(5))).is_some());
    // a frame sent slowly but within its deadline arrives
    let mut s = TcpStream::connect(("127.0.0.1", rx.port)).unwrap();
    for part in f.chunks(400) {
        s.write_all(part).unwrap();
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(rx.receive(Some(Duration::from_secs(5))).is_some());
    rx.close();
}

#[test]
fn frames_over_the_connection_bound_close_it() {
    let _shared = shared();
    let mut c = cfg(None);
    c.limits.frame.max_frame = 1 << 20;
    let rx = ctx_with(c);
    let mine = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut f = frame(7, &format!("m:{}", listener_port(&mine)), b"");
    let huge = 60u32 << 20;
    f[0..4].copy_from_slice(&huge.to_le_bytes());
    f[4..8].copy_from_slice(&huge.to_be_bytes());
    let mut s = TcpStream::connect(("127.0.0.1", rx.port)).unwrap();
    s.write_all(&f).unwrap();
    assert!(closed_by_peer(&mut s, Duration::from_secs(5)));
    assert_eq!(rx.stats.frames_too_big.load(Ordering::Relaxed), 1);
    // one just under the bound is fine
    let ok = frame(
        7,
        &format!("m:{}", listener_port(&mine)),
        &vec![0u8; 900_000],
    );
    let mut s = TcpStream::connect(("127.0.0.1", rx.port)).unwrap();
    s.write_all(&ok).unwrap();
    assert!(rx.receive(Some(Duration::from_secs(5))).is_some());
    rx.close();
}

#[test]
fn two_contexts_still_talk() {
    let _shared = shared();
    // the ordinary path: one context sends to another (sender check on, same process)
    let rx = ctx_with(cfg(None));
    let seed = std::env::temp_dir().join(format!("octoric-sec-{}.rt", std::process::id()));
    std::fs::write(
        &seed,
        format!("newrt|start\nrte|7|127.0.0.1:{}\nnewrt|end\n", rx.port),
    )
    .unwrap();
    let mut c = cfg(None);
    c.rt.seed = Some(seed);
    let tx = ctx_with(c);
    let mut m = rmr_si::mbuf::Mbuf::alloc(16);
    m.mtype = 7;
    m.len = 2;
    assert!(tx.send_routed(&mut m, None));
    assert!(rx.receive(Some(Duration::from_secs(5))).is_some());
    assert_eq!(rx.stats.forged_senders.load(Ordering::Relaxed), 0);
    tx.close();
    rx.close();
}

#[test]
fn another_process_may_name_itself() {
    let _shared = shared();
    // a peer in another process, listening where its frame's src says: delivered
    let rx = ctx_with(cfg(None));
    let code = format!(
        "import socket,struct,sys,time\n\
         l=socket.socket(); l.bind(('127.0.0.1',0)); l.listen()\n\
         f=bytearray(sys.stdin.buffer.read())\n\
         src=b'peer:%d' % l.getsockname()[1]\n\
         f[50+76:50+76+len(src)]=src\n\
         s=socket.create_connection(('127.0.0.1',{}))\n\
         s.sendall(f); time.sleep(1)\n",
        rx.port
    );
    let mut c = Command::new("python3")
        .args(["-c", &code])
        .stdin(Stdio::piped())
        .spawn()
        .expect("python3");
    c.stdin
        .take()
        .unwrap()
        .write_all(&frame(12050, "", b"ind"))
        .unwrap();
    let got = rx.receive(Some(Duration::from_secs(5)));
    let _ = c.wait();
    assert!(got.is_some(), "{}", rx.stats.json());
    rx.close();
}

#[test]
fn a_peer_process_reconnecting_is_recognised_quickly() {
    let _shared = shared();
    // the same process connecting twice: the second connection's owner lookup starts with it
    let rx = ctx_with(cfg(None));
    let code = format!(
        "import socket,sys,time\n\
         l=socket.socket(); l.bind(('127.0.0.1',0)); l.listen()\n\
         f=bytearray(sys.stdin.buffer.read())\n\
         src=b'peer:%d' % l.getsockname()[1]\n\
         f[50+76:50+76+len(src)]=src\n\
         for _ in range(2):\n    s=socket.create_connection(('127.0.0.1',{}))\n    s.sendall(f); time.sleep(0.5); s.close()\n",
        rx.port
    );
    let mut c = Command::new("python3")
        .args(["-c", &code])
        .stdin(Stdio::piped())
        .spawn()
        .expect("python3");
    c.stdin
        .take()
        .unwrap()
        .write_all(&frame(12050, "", b"ind"))
        .unwrap();
    let a = rx.receive(Some(Duration::from_secs(5)));
    let b = rx.receive(Some(Duration::from_secs(5)));
    let _ = c.wait();
    assert!(a.is_some() && b.is_some(), "{}", rx.stats.json());
    assert_eq!(rx.stats.forged_senders.load(Ordering::Relaxed), 0);
    rx.close();
}

#[test]
fn nothing_is_sent_to_another_users_listener() {
    let _shared = shared();
    if !is_root() {
        eprintln!("skipped: needs root to run a listener as nobody");
        return;
    }
    // nobody listens on a port our route table names (say one its owner gave up)
    let mut c = Command::new("python3")
        .args([
            "-c",
            "import socket,time\ns=socket.socket()\ns.bind(('127.0.0.1',0))\ns.listen()\n\
             print(s.getsockname()[1],flush=True)\nc,_=s.accept()\nprint(len(c.recv(65536)),flush=True)\n\
             time.sleep(5)",
        ])
        .uid(65534)
        .gid(65534)
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 as nobody");
    let mut out = c.stdout.take().unwrap();
    let mut line = String::new();
    let mut b = [0u8; 1];
    while out.read(&mut b).unwrap() == 1 && b[0] != b'\n' {
        line.push(b[0] as char);
    }
    let port: u16 = line.trim().parse().unwrap();
    let seed = std::env::temp_dir().join(format!("octoric-sec-out-{}.rt", std::process::id()));
    std::fs::write(
        &seed,
        format!("newrt|start\nrte|7|127.0.0.1:{port}\nnewrt|end\n"),
    )
    .unwrap();
    let mut cf = cfg(None);
    cf.rt.seed = Some(seed);
    let tx = ctx_with(cf);
    let mut m = rmr_si::mbuf::Mbuf::alloc(16);
    m.mtype = 7;
    m.len = 2;
    assert!(!tx.send_routed(&mut m, None));
    assert!(tx.stats.peers_rejected.load(Ordering::Relaxed) >= 1);
    assert_eq!(tx.stats.sent.load(Ordering::Relaxed), 0);
    let _ = c.kill();
    let _ = c.wait();
    tx.close();
}
