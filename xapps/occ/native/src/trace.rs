//! `contracts/latency_trace.py` natively: with `OCTORIC_LATENCY_TRACE` set, the native path
//! appends `<point> <CLOCK_MONOTONIC ns> <crc32:len>` lines for the indications it handles
//! (`occ_in` at the tap's entry, `occ_out` once the feedback datagrams are sent), written after
//! the sends, so the benchmark's breakdown covers the native path as it did the Python one.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;

pub use octo_rmr_client::monotonic_ns;

/// zlib's CRC-32 (crc32fast: PCLMULQDQ where the CPU has it; a 20 kB indication in ~1 us).
pub fn crc32(data: &[u8]) -> u32 {
    crc32fast::hash(data)
}

pub struct Trace {
    inp: File,
    out: File,
}

impl Trace {
    /// The two files under `$OCTORIC_LATENCY_TRACE`, or None when it is unset (or unusable).
    pub fn from_env() -> Option<Trace> {
        let dir = std::env::var_os("OCTORIC_LATENCY_TRACE")?;
        if dir.is_empty() {
            return None;
        }
        let dir = std::path::PathBuf::from(dir);
        std::fs::create_dir_all(&dir).ok()?;
        let pid = std::process::id();
        let open = |point: &str| {
            OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o600)
                .open(dir.join(format!("{point}-{pid}.trace")))
                .ok()
        };
        Some(Trace {
            inp: open("occ_in")?,
            out: open("occ_out")?,
        })
    }

    pub fn mark(&mut self, payload: &[u8], t_in: u64, t_out: u64) {
        let key = format!("{:08x}:{}", crc32(payload), payload.len());
        let _ = self
            .inp
            .write_all(format!("occ_in {t_in} {key}\n").as_bytes());
        let _ = self
            .out
            .write_all(format!("occ_out {t_out} {key}\n").as_bytes());
    }
}
