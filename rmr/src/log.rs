//! Minimal levelled logging to stderr (RMR_LOG_VLEVEL / rmr_set_vlevel: 0 off .. 5 debug).

use std::io::Write;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Once;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Crit = 1,
    Err = 2,
    Warn = 3,
    Info = 4,
    Debug = 5,
}

static VLEVEL: AtomicI32 = AtomicI32::new(-1);
static INIT: Once = Once::new();

pub fn set_level(l: i32) {
    INIT.call_once(|| {});
    VLEVEL.store(l.clamp(0, 5), Ordering::Relaxed);
}

fn level() -> i32 {
    INIT.call_once(|| {
        if VLEVEL.load(Ordering::Relaxed) < 0 {
            let l = std::env::var("RMR_LOG_VLEVEL")
                .ok()
                .and_then(|v| v.trim().parse::<i32>().ok())
                .unwrap_or(2);
            VLEVEL.store(l.clamp(0, 5), Ordering::Relaxed);
        }
    });
    VLEVEL.load(Ordering::Relaxed)
}

pub fn log(l: Level, msg: &str) {
    if (l as i32) <= level() {
        let name = match l {
            Level::Crit => "CRIT",
            Level::Err => "ERR",
            Level::Warn => "WARN",
            Level::Info => "INFO",
            Level::Debug => "DEBUG",
        };
        let ts = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        let _ = writeln!(std::io::stderr(), "{ts} {name} [octoric-rmr] {msg}");
    }
}
