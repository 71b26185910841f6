//! Two contexts over real loopback sockets, plus raw peers speaking hand-built frames.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmr_si::consts::*;
use rmr_si::context::{Config, Ctx, RtConfig, QUEUE_CAP};
use rmr_si::mbuf::Mbuf;

fn cfg(seed: Option<PathBuf>, ctl_port: Option<u16>) -> Config {
    Config {
        bind_if: Some("127.0.0.1".into()),
        src_id: Some("t".into()),
        name_only: false,
        rt: RtConfig {
            seed,
            static_only: ctl_port.is_none(),
            ctl_port,
            rtg_addr: None,
        },
        peers: Default::default(),
        limits: Default::default(),
    }
}

fn seed(name: &str, text: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("octoric-rmr-{}-{name}.rt", std::process::id()));
    std::fs::write(&p, text).unwrap();
    p
}

fn ctx(seed: Option<PathBuf>) -> Arc<Ctx> {
    Ctx::init_with("0", 4096, 0, cfg(seed, None)).unwrap()
}

fn msg(mtype: i32, sub_id: i32, payload: &[u8], xid: &[u8; 32]) -> Box<Mbuf> {
    let mut m = Mbuf::alloc(256);
    m.mtype = mtype;
    m.sub_id = sub_id;
    m.set_meid(b"gnb_001");
    m.header_mut()[12..44].copy_from_slice(xid);
    m.payload_mut()[..payload.len()].copy_from_slice(payload);
    m.len = payload.len() as i32;
    m
}

fn recv(c: &Ctx) -> Box<Mbuf> {
    let got = c.receive(Some(Duration::from_secs(5))).expect("a message");
    let mut m = Mbuf::alloc(0);
    m.load(got);
    m
}

/// The sender field of hand-built frames: "raw:<port>" where this process listens (a
/// receiver checks that a frame's sender is the connection's peer: a process listening on
/// the port the field names).
fn raw_src() -> &'static str {
    static SRC: std::sync::OnceLock<(TcpListener, String)> = std::sync::OnceLock::new();
    &SRC.get_or_init(|| {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let s = format!("raw:{}", l.local_addr().unwrap().port());
        (l, s)
    })
    .1
}

/// A frame built by hand (not with our encoder); `plen_declared` may lie.
fn hand_frame(mtype: u32, payload: &[u8], plen_declared: u32) -> Vec<u8> {
    let total = 50 + 280 + 4 + payload.len();
    let mut f = vec![0u8; total];
    f[0..4].copy_from_slice(&(total as u32).to_le_bytes());
    f[4..8].copy_from_slice(&(total as u32).to_be_bytes());
    f[8] = b'$';
    let h = 50;
    f[h..h + 4].copy_from_slice(&mtype.to_be_bytes());
    f[h + 4..h + 8].copy_from_slice(&plen_declared.to_be_bytes());
    f[h + 8..h + 12].copy_from_slice(&3u32.to_be_bytes());
    let src = raw_src();
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
    f()
}

#[test]
fn send_receive_rts_keep_ids() {
    let rx = ctx(None);
    let tx = ctx(Some(seed(
        "rts",
        &format!(
            "newrt|start|a\nrte|100|127.0.0.1:{}\nnewrt|end|1\n",
            rx.port
        ),
    )));
    assert!(tx.ready());
    assert!(!rx.ready());
    let xid = *b"0123456789abcdef0123456789abcdef";
    let mut m = msg(100, 9, b"hello", &xid);
    assert!(tx.send_routed(&mut m, None), "state {}", m.state);

    let mut r = recv(&rx);
    assert_eq!((r.mtype, r.sub_id, r.len), (100, 9, 5));
    assert_eq!(r.payload_slice(), b"hello");
    assert_eq!(r.meid(), b"gnb_001");
    assert_eq!(r.xid(), &xid);
    assert_eq!(r.src(), format!("t:{}", tx.port).as_bytes());
    assert_eq!(r.srcip(), format!("127.0.0.1:{}", tx.port).as_bytes());

    r.mtype = 101;
    assert!(rx.rts(&mut r));
    assert!(rx.rts(&mut r), "rts twice on the same buffer");
    for _ in 0..2 {
        let back = recv(&tx);
        assert_eq!((back.mtype, back.sub_id), (101, 9));
        assert_eq!(back.xid(), &xid);
        assert_eq!(back.meid(), b"gnb_001");
        assert_eq!(back.src(), format!("t:{}", rx.port).as_bytes());
    }
    // No route: NOENDPT.
    let mut m = msg(555, -1, b"x", &xid);
    assert!(!tx.send_routed(&mut m, None));
    assert_eq!(m.state, RMR_ERR_NOENDPT);
    tx.close();
    rx.close();
}

#[test]
fn call_gets_its_reply() {
    let rx = ctx(None);
    let tx = ctx(Some(seed(
        "call",
        &format!("newrt|start\nrte|7|127.0.0.1:{}\nnewrt|end\n", rx.port),
    )));
    let rx2 = rx.clone();
    let echo = std::thread::spawn(move || {
        let mut r = recv(&rx2);
        r.mtype = 8;
        assert!(rx2.rts(&mut r));
    });
    let xid = *b"call-xid-00000000000000000000001";
    let mut m = msg(7, -1, b"ping", &xid);
    tx.call(&mut m, 1, Duration::from_secs(5), None);
    assert_eq!(m.state, RMR_OK);
    assert_eq!(m.mtype, 8);
    assert_eq!(m.payload_slice(), b"ping");
    echo.join().unwrap();
    // Nothing answers now: timeout.
    let mut m = msg(7, -1, b"ping", &xid);
    tx.call(&mut m, 2, Duration::from_millis(200), None);
    assert_eq!(m.state, RMR_ERR_TIMEOUT);
    assert!(rx.receive(Some(Duration::from_secs(5))).is_some());
    tx.close();
    rx.close();
}

#[test]
fn sent_frame_fixed_fields_match_byte_for_byte() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let lp = l.local_addr().unwrap().port();
    let tx = ctx(Some(seed(
        "bytes",
        &format!("newrt|start\nmse|12050|42|127.0.0.1:{lp}\nnewrt|end\n"),
    )));
    let xid = *b"XIDXIDXIDXIDXIDXIDXIDXIDXIDXID01";
    let mut m = msg(12050, 42, b"abc", &xid);
    assert!(tx.send_routed(&mut m, None));
    let (mut s, _) = l.accept().unwrap();
    let mut got = vec![0u8; 50 + 280 + 4 + 3];
    s.read_exact(&mut got).unwrap();

    let total = got.len() as u32;
    let mut want = vec![0u8; got.len()];
    want[0..4].copy_from_slice(&total.to_le_bytes());
    want[4..8].copy_from_slice(&total.to_be_bytes());
    want[8] = b'$';
    let h = 50;
    want[h..h + 4].copy_from_slice(&12050u32.to_be_bytes());
    want[h + 4..h + 8].copy_from_slice(&3u32.to_be_bytes());
    want[h + 8..h + 12].copy_from_slice(&3u32.to_be_bytes());
    want[h + 12..h + 44].copy_from_slice(&xid);
    let src = format!("t:{}", tx.port);
    want[h + 76..h + 76 + src.len()].copy_from_slice(src.as_bytes());
    want[h + 140..h + 147].copy_from_slice(b"gnb_001");
    want[h + 196..h + 200].copy_from_slice(&280u32.to_be_bytes());
    want[h + 204..h + 208].copy_from_slice(&4u32.to_be_bytes());
    want[h + 212..h + 216].copy_from_slice(&42u32.to_be_bytes());
    let srcip = format!("127.0.0.1:{}", tx.port);
    want[h + 216..h + 216 + srcip.len()].copy_from_slice(srcip.as_bytes());
    want[h + 284..].copy_from_slice(b"abc");
    assert_eq!(got, want);
    tx.close();
}

#[test]
fn lying_lengths_dropped_and_counted_garbage_isolated() {
    let rx = ctx(None);
    let tx = ctx(Some(seed(
        "garbage",
        &format!("newrt|start\nrte|1|127.0.0.1:{}\nnewrt|end\n", rx.port),
    )));
    // A frame whose declared payload length exceeds the frame: dropped, counted, and the
    // stream stays in sync (the next good frame on the same socket arrives).
    let mut raw = TcpStream::connect(("127.0.0.1", rx.port)).unwrap();
    raw.write_all(&hand_frame(1, b"short", 5000)).unwrap();
    raw.write_all(&hand_frame(2, b"good", 4)).unwrap();
    let r = recv(&rx);
    assert_eq!((r.mtype, r.payload_slice()), (2, &b"good"[..]));
    assert_eq!(rx.stats.dropped_bad_frame.load(Ordering::Relaxed), 1);

    // Garbage with an absurd length loses the framing: that connection is closed...
    let mut bad = TcpStream::connect(("127.0.0.1", rx.port)).unwrap();
    bad.write_all(&[0xFFu8; 4096]).unwrap();
    let mut buf = [0u8; 16];
    bad.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert_eq!(bad.read(&mut buf).unwrap_or(0), 0, "peer closed");
    assert!(wait_until(|| rx
        .stats
        .dropped_bad_stream
        .load(Ordering::Relaxed)
        == 1));
    // ...while other connections are undisturbed.
    raw.write_all(&hand_frame(3, b"still", 5)).unwrap();
    assert_eq!(recv(&rx).mtype, 3);
    let mut m = msg(1, -1, b"ctx", &[b'x'; 32]);
    assert!(tx.send_routed(&mut m, None));
    assert_eq!(recv(&rx).payload_slice(), b"ctx");
    tx.close();
    rx.close();
}

#[test]
fn queue_overflow_is_counted() {
    let rx = ctx(None);
    let tx = ctx(Some(seed(
        "overflow",
        &format!("newrt|start\nrte|1|127.0.0.1:{}\nnewrt|end\n", rx.port),
    )));
    tx.set_retries(1000);
    let n = QUEUE_CAP + 100;
    for _ in 0..n {
        let mut m = msg(1, -1, b"o", &[b'x'; 32]);
        assert!(tx.send_routed(&mut m, None));
    }
    assert!(wait_until(
        || rx.stats.received.load(Ordering::Relaxed) == n as u64
    ));
    assert_eq!(rx.stats.dropped_overflow.load(Ordering::Relaxed), 100);
    let mut drained = 0;
    while rx.receive(Some(Duration::from_millis(0))).is_some() {
        drained += 1;
    }
    assert_eq!(drained, QUEUE_CAP);
    tx.close();
    rx.close();
}

#[test]
fn reconnects_after_peer_restart() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let lp = l.local_addr().unwrap().port();
    let tx = ctx(Some(seed(
        "reconnect",
        &format!("newrt|start\nrte|1|127.0.0.1:{lp}\nnewrt|end\n"),
    )));
    let mut m = msg(1, -1, b"one", &[b'x'; 32]);
    assert!(tx.send_routed(&mut m, None));
    let (s, _) = l.accept().unwrap();
    drop(s); // peer goes away
    std::thread::sleep(Duration::from_millis(100));
    let mut ok = false;
    for _ in 0..50 {
        let mut m = msg(1, -1, b"two", &[b'x'; 32]);
        if tx.send_routed(&mut m, None) {
            ok = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(ok);
    let (mut s2, _) = l.accept().unwrap();
    let mut got = vec![0u8; 50 + 284 + 3];
    s2.read_exact(&mut got).unwrap();
    assert_eq!(&got[334..], b"two");
    tx.close();
}

/// A peer that restarts on the same port (an xApp after kill -9) gets the first message sent
/// a few milliseconds after it listens again: a refused connect holds sends back for 1 ms, not
/// the 100 ms a slow failure (timeout, unreachable host) does.
#[test]
fn restarted_listener_gets_messages_within_milliseconds() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let lp = l.local_addr().unwrap().port();
    drop(l); // nothing listens: connects are refused
    let tx = ctx(Some(seed(
        "refused",
        &format!("newrt|start\nrte|1|127.0.0.1:{lp}\nnewrt|end\n"),
    )));
    for _ in 0..3 {
        let mut m = msg(1, -1, b"lost", &[b'x'; 32]);
        assert!(!tx.send_routed(&mut m, None));
        assert_eq!(m.state, RMR_ERR_SENDFAILED);
    }
    let l = TcpListener::bind(("127.0.0.1", lp)).unwrap();
    std::thread::sleep(Duration::from_millis(5));
    let mut m = msg(1, -1, b"first", &[b'x'; 32]);
    assert!(tx.send_routed(&mut m, None), "state {}", m.state);
    let (mut s, _) = l.accept().unwrap();
    let mut got = vec![0u8; 50 + 284 + 5];
    s.read_exact(&mut got).unwrap();
    assert_eq!(&got[334..], b"first");
    tx.close();
}

#[test]
fn route_manager_push_installs_and_acks() {
    let ctl = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let rx = Ctx::init_with("0", 4096, 0, cfg(None, Some(ctl))).unwrap();
    assert!(!rx.ready());
    let mut s = TcpStream::connect(("127.0.0.1", ctl)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let body = b"newrt|start|tbl-7\nrte|5|127.0.0.1:1\nnewrt|end|1\n";
    s.write_all(&hand_frame(20, body, body.len() as u32))
        .unwrap();
    let mut prefix = [0u8; 50];
    s.read_exact(&mut prefix).unwrap();
    let total = u32::from_le_bytes(prefix[0..4].try_into().unwrap()) as usize;
    let mut rest = vec![0u8; total - 50];
    s.read_exact(&mut rest).unwrap();
    let mut frame = prefix.to_vec();
    frame.extend_from_slice(&rest);
    let info = rmr_si::frame::parse(&frame).unwrap();
    assert_eq!(info.mtype, 22);
    assert_eq!(
        &frame[info.payload_off..info.payload_off + info.plen],
        b"OK tbl-7 \n\0"
    );
    assert!(rx.ready());
    // A broken table is nacked and the installed one stays.
    let body = b"newrt|start|tbl-8\nrte|5|127.0.0.1:1\nnewrt|end|3\n";
    s.write_all(&hand_frame(20, body, body.len() as u32))
        .unwrap();
    s.read_exact(&mut prefix).unwrap();
    let total = u32::from_le_bytes(prefix[0..4].try_into().unwrap()) as usize;
    let mut rest = vec![0u8; total - 50];
    s.read_exact(&mut rest).unwrap();
    let text = String::from_utf8_lossy(&rest[284..]).to_string();
    assert!(text.starts_with("ERR tbl-8 "), "{text}");
    assert!(rx.ready());
    rx.close();
}

#[test]
fn wormholes() {
    let rx = ctx(None);
    let tx = ctx(None);
    let mut m = msg(1, -1, b"wh", &[b'x'; 32]);
    assert!(!tx.wh_send(0, &mut m, None));
    assert_eq!(m.state, RMR_ERR_NOWHOPEN);
    let id = tx.wh_open(&format!("127.0.0.1:{}", rx.port));
    assert!(id >= 0);
    assert_eq!(tx.wh_state(id), RMR_OK);
    assert!(tx.wh_send(id, &mut m, None));
    assert_eq!(recv(&rx).payload_slice(), b"wh");
    assert_eq!(tx.wh_state(id + 1), RMR_ERR_WHID);
    tx.wh_close(id);
    assert_eq!(tx.wh_state(id), RMR_ERR_NOWHOPEN);
    assert_eq!(tx.wh_open("127.0.0.1:1"), -1);
    tx.close();
    rx.close();
}

#[test]
fn static_table_is_polled_until_valid() {
    let path = std::env::temp_dir().join(format!("octoric-rmr-{}-late.rt", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let c = ctx(Some(path.clone()));
    assert!(!c.ready());
    std::fs::write(&path, "newrt|start\nrte|1|127.0.0.1:9\nnewrt|end\n").unwrap();
    assert!(
        wait_until(|| c.ready()),
        "table picked up within the 1 s poll"
    );
    c.close();
}

#[test]
fn full_socket_gives_retry_and_keeps_framing() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let lp = l.local_addr().unwrap().port();
    let tx = ctx(Some(seed(
        "retry",
        &format!("newrt|start\nrte|1|127.0.0.1:{lp}\nnewrt|end\n"),
    )));
    tx.set_retries(0);
    let big = vec![b'z'; 8 * 1024];
    let mut sent = 0usize;
    let mut retry = None;
    let mut peer = None;
    for _ in 0..100_000 {
        let mut m = Mbuf::alloc(big.len());
        m.mtype = 1;
        m.payload_mut()[..big.len()].copy_from_slice(&big);
        m.len = big.len() as i32;
        if tx.send_routed(&mut m, None) {
            sent += 1;
        } else {
            retry = Some((m.state, m.tp_state));
            break;
        }
        if peer.is_none() {
            peer = Some(l.accept().unwrap().0); // accepted, never read: the socket fills
        }
    }
    assert_eq!(retry, Some((RMR_ERR_RETRY, libc_eagain())));
    // Every frame that was accepted arrives whole: no partial write broke the stream.
    let mut s = peer.unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut frame = vec![0u8; 50 + 284 + big.len()];
    for _ in 0..sent {
        s.read_exact(&mut frame).unwrap();
        let info = rmr_si::frame::parse(&frame).unwrap();
        assert_eq!(info.plen, big.len());
    }
    tx.close();
}

fn libc_eagain() -> i32 {
    11 // EAGAIN on Linux
}

#[test]
fn fast_ack_and_low_latency_keep_messages_flowing() {
    // RMR's rmr_set_fack / rmr_set_low_latency before any session: the settings apply to
    // sessions established afterwards; messages flow as before in both directions.
    let rx = ctx(None);
    let tx = ctx(Some(seed(
        "fack",
        &format!(
            "newrt|start|a\nrte|100|127.0.0.1:{}\nnewrt|end|1\n",
            rx.port
        ),
    )));
    for c in [&rx, &tx] {
        let p = Arc::as_ptr(c) as *mut std::ffi::c_void;
        // SAFETY: the context pointer the C API hands out is the Arc's; both calls only read
        // or set flags on it.
        unsafe {
            rmr_si::ffi::rmr_set_low_latency(p);
            rmr_si::ffi::rmr_set_fack(p);
            rmr_si::ffi::rmr_set_fack(std::ptr::null_mut()); // a nil context is ignored
        }
    }
    let xid = [7u8; 32];
    for i in 0..20 {
        let mut m = msg(100, i, b"q", &xid);
        assert!(tx.send_routed(&mut m, None), "state {}", m.state);
        let mut r = recv(&rx);
        assert_eq!(r.sub_id, i);
        r.mtype = 101;
        assert!(rx.rts(&mut r));
        assert_eq!(recv(&tx).sub_id, i);
    }
    tx.close();
    rx.close();
}
