//! Bench driver: loads any librmr_si.so by path (ours or O-RAN SC's) through its C API and
//! runs one side of a two-process measurement. Prints one JSON line.
//!
//!   rmr_bench recv LIB PORT COUNT            (env: RMR_* as usual)
//!   rmr_bench send LIB PORT COUNT SIZE RATE  (RATE msg/s, 0 = as fast as possible;
//!                                             env RMR_SEED_RT routes mtype 4242)
//!
//! The sender stamps CLOCK_MONOTONIC nanoseconds into the first 8 payload bytes, so the
//! receiver (same host) measures one-way latency.
#![deny(warnings)]

use std::ffi::{c_char, c_int, c_void, CString};
use std::time::{Duration, Instant};

#[repr(C)]
struct PubMbuf {
    state: c_int,
    mtype: c_int,
    len: c_int,
    payload: *mut u8,
    xaction: *mut u8,
    sub_id: c_int,
    tp_state: c_int,
}

type InitFn = unsafe extern "C" fn(*const c_char, c_int, c_int) -> *mut c_void;
type ReadyFn = unsafe extern "C" fn(*mut c_void) -> c_int;
type CloseFn = unsafe extern "C" fn(*mut c_void);
type AllocFn = unsafe extern "C" fn(*mut c_void, c_int) -> *mut PubMbuf;
type FreeFn = unsafe extern "C" fn(*mut PubMbuf);
type SendFn = unsafe extern "C" fn(*mut c_void, *mut PubMbuf) -> *mut PubMbuf;
type TorcvFn = unsafe extern "C" fn(*mut c_void, *mut PubMbuf, c_int) -> *mut PubMbuf;
type StimeoutFn = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;

struct Lib {
    init: InitFn,
    ready: ReadyFn,
    close: CloseFn,
    alloc: AllocFn,
    free: FreeFn,
    send: SendFn,
    torcv: TorcvFn,
    stimeout: StimeoutFn,
    // RMR's TCP settings for later sessions; absent from libraries that predate them
    low_latency: Option<CtxFn>,
    fack: Option<CtxFn>,
}

type CtxFn = unsafe extern "C" fn(*mut c_void);

const MTYPE: c_int = 4242;
const RMR_OK: c_int = 0;
const RMR_ERR_RETRY: c_int = 10;

unsafe fn opt_sym(h: *mut c_void, name: &str) -> Option<CtxFn> {
    let c = CString::new(name).unwrap();
    let p = libc::dlsym(h, c.as_ptr());
    if p.is_null() {
        None
    } else {
        Some(std::mem::transmute::<*mut c_void, CtxFn>(p))
    }
}

unsafe fn sym<T: Copy>(h: *mut c_void, name: &str) -> T {
    let c = CString::new(name).unwrap();
    let p = libc::dlsym(h, c.as_ptr());
    if p.is_null() {
        eprintln!("missing symbol {name}");
        std::process::exit(2);
    }
    std::mem::transmute_copy(&p)
}

fn load(path: &str) -> Lib {
    let c = CString::new(path).unwrap();
    // SAFETY: dlopen/dlsym with valid C strings; the types match RMR's C prototypes.
    unsafe {
        let h = libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
        if h.is_null() {
            eprintln!("cannot dlopen {path}");
            std::process::exit(2);
        }
        Lib {
            init: sym(h, "rmr_init"),
            ready: sym(h, "rmr_ready"),
            close: sym(h, "rmr_close"),
            alloc: sym(h, "rmr_alloc_msg"),
            free: sym(h, "rmr_free_msg"),
            send: sym(h, "rmr_send_msg"),
            torcv: sym(h, "rmr_torcv_msg"),
            stimeout: sym(h, "rmr_set_stimeout"),
            low_latency: opt_sym(h, "rmr_set_low_latency"),
            fack: opt_sym(h, "rmr_set_fack"),
        }
    }
}

fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn init(lib: &Lib, port: &str) -> *mut c_void {
    let p = CString::new(port).unwrap();
    // SAFETY: C call with a valid string.
    let ctx = unsafe { (lib.init)(p.as_ptr(), 65536, 0) };
    if ctx.is_null() {
        eprintln!("rmr_init failed");
        std::process::exit(2);
    }
    // RMR_BENCH_MODE: "low-latency" (TCP_NODELAY, rmr_set_low_latency), "fast-ack" (that and
    // TCP_QUICKACK, rmr_set_fack), else the library's defaults; set before any session opens
    let mode = std::env::var("RMR_BENCH_MODE").unwrap_or_default();
    let wanted: &[(&str, Option<CtxFn>)] = match mode.as_str() {
        "low-latency" => &[("rmr_set_low_latency", lib.low_latency)],
        "fast-ack" => &[
            ("rmr_set_low_latency", lib.low_latency),
            ("rmr_set_fack", lib.fack),
        ],
        "" | "default" => &[],
        other => {
            eprintln!("unknown RMR_BENCH_MODE {other}");
            std::process::exit(2);
        }
    };
    for (name, f) in wanted {
        match f {
            // SAFETY: RMR's prototype void f(void* ctx), called with the context it returned.
            Some(f) => unsafe { f(ctx) },
            None => {
                eprintln!("the library has no {name}");
                std::process::exit(2);
            }
        }
    }
    ctx
}

fn pct(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i] as f64 / 1000.0
}

fn recv(lib: &Lib, port: &str, count: usize) {
    let ctx = init(lib, port);
    let mut lat: Vec<u64> = Vec::with_capacity(count);
    let mut first: Option<Instant> = None;
    let mut last = Instant::now();
    let mut got = 0usize;
    // SAFETY: the library's own alloc/receive/free on its own buffers.
    unsafe {
        let mut m = (lib.alloc)(ctx, 0);
        let idle = Duration::from_secs(3);
        while got < count {
            m = (lib.torcv)(ctx, m, 200);
            if m.is_null() {
                break;
            }
            if (*m).state != RMR_OK {
                if first.is_some() && last.elapsed() > idle {
                    break;
                }
                if first.is_none() && last.elapsed() > Duration::from_secs(30) {
                    break;
                }
                continue;
            }
            let now = mono_ns();
            last = Instant::now();
            first.get_or_insert(last);
            got += 1;
            if (*m).len >= 8 {
                let mut b = [0u8; 8];
                std::ptr::copy_nonoverlapping((*m).payload, b.as_mut_ptr(), 8);
                let sent = u64::from_le_bytes(b);
                lat.push(now.saturating_sub(sent));
            }
        }
        (lib.free)(m);
        (lib.close)(ctx);
    }
    let secs = first.map(|f| (last - f).as_secs_f64()).unwrap_or(0.0);
    let rate = if got > 1 && secs > 0.0 {
        (got - 1) as f64 / secs
    } else {
        0.0
    };
    lat.sort_unstable();
    println!(
        "{{\"received\": {got}, \"seconds\": {secs:.6}, \"rate\": {rate:.1}, \"p50_us\": {:.2}, \"p99_us\": {:.2}}}",
        pct(&lat, 0.5),
        pct(&lat, 0.99)
    );
}

fn send(lib: &Lib, port: &str, count: usize, size: usize, rate: f64) {
    let ctx = init(lib, port);
    let t0 = Instant::now();
    // SAFETY: C calls on the library's own context and buffers; payload writes stay within
    // the `size` bytes we allocated.
    unsafe {
        while (lib.ready)(ctx) == 0 {
            if t0.elapsed() > Duration::from_secs(30) {
                eprintln!("no route table");
                std::process::exit(2);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        (lib.stimeout)(ctx, 1);
        let mut m = (lib.alloc)(ctx, size as c_int);
        let start = Instant::now();
        let gap = if rate > 0.0 {
            Some(Duration::from_secs_f64(1.0 / rate))
        } else {
            None
        };
        let mut sent = 0usize;
        let mut retries = 0u64;
        let mut failures = 0u64;
        let mut next = Instant::now();
        while sent < count {
            if let Some(g) = gap {
                let now = Instant::now();
                if next > now {
                    // Sleep only: a spinning sender would steal the CPU the receiver needs
                    // on small machines; the schedule catches up after an oversleep.
                    std::thread::sleep(next - now);
                }
                next += g;
            }
            loop {
                (*m).mtype = MTYPE;
                (*m).sub_id = -1;
                (*m).len = size as c_int;
                let ts = mono_ns().to_le_bytes();
                std::ptr::copy_nonoverlapping(ts.as_ptr(), (*m).payload, 8.min(size));
                m = (lib.send)(ctx, m);
                if m.is_null() {
                    eprintln!("send returned nil");
                    std::process::exit(2);
                }
                match (*m).state {
                    RMR_OK => break,
                    RMR_ERR_RETRY => retries += 1,
                    _ => {
                        failures += 1;
                        if failures > 100_000 {
                            eprintln!("send keeps failing: state {}", (*m).state);
                            std::process::exit(2);
                        }
                        std::thread::sleep(Duration::from_micros(200));
                    }
                }
            }
            sent += 1;
        }
        let secs = start.elapsed().as_secs_f64();
        // Let the kernel drain before the context goes away.
        std::thread::sleep(Duration::from_millis(300));
        (lib.free)(m);
        (lib.close)(ctx);
        println!(
            "{{\"sent\": {sent}, \"seconds\": {secs:.6}, \"retries\": {retries}, \"failures\": {failures}}}"
        );
    }
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let usage = || -> ! {
        eprintln!("usage: rmr_bench recv LIB PORT COUNT | send LIB PORT COUNT SIZE RATE");
        std::process::exit(2)
    };
    if a.len() < 5 {
        usage();
    }
    let lib = load(&a[2]);
    let count: usize = a[4].parse().unwrap_or_else(|_| usage());
    match a[1].as_str() {
        "recv" => recv(&lib, &a[3], count),
        "send" if a.len() >= 7 => {
            let size: usize = a[5].parse().unwrap_or_else(|_| usage());
            let rate: f64 = a[6].parse().unwrap_or_else(|_| usage());
            send(&lib, &a[3], count, size.max(8), rate)
        }
        _ => usage(),
    }
}
