//! Mutation fuzzing of the native KPM decoder: `kpm_fuzz [INPUTS] [SEED] [pdu]` (default 10 M).
//! Seeds are `seeds/*.bin` (valid Format 3 messages written by octoric's encoder) or, with
//! `pdu`, `seeds/*.pdu` (whole E2AP RIC indications around them, for `ricind::parse` and then
//! the message decode, as `octo_ric_indication_decode` runs them); each input flips bits,
//! overwrites bytes with hostile length octets, truncates, extends or splices.
//! A finding is a panic (the C ABI would answer "fallback", but a panic is a bug) or a decode
//! that takes over 50 ms. Prints the counts; exit 1 on a finding.
use octo_e2sm::{decode_format3, ricind, Parsed};
use std::time::Instant;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const HOSTILE: [u8; 8] = [0x00, 0x7F, 0x80, 0xBF, 0xC0, 0xC1, 0xC4, 0xFF];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let inputs: u64 = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000);
    let mut rng = Rng(args
        .get(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x0C70_121C)
        | 1);
    let pdu = args.get(3).is_some_and(|s| s == "pdu");
    let ext = if pdu { "pdu" } else { "bin" };
    let decode = |d: &[u8], out: &mut Parsed| -> Result<(), per_fallback::Fallback> {
        if pdu {
            let (_, msg) = ricind::parse(d).map_err(|_| per_fallback::Fallback)?;
            decode_format3(&msg, out).map_err(|_| per_fallback::Fallback)
        } else {
            decode_format3(d, out).map_err(|_| per_fallback::Fallback)
        }
    };
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/seeds");
    let mut seeds: Vec<Vec<u8>> = std::fs::read_dir(dir)
        .expect("seeds/ missing")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == ext))
        .map(|e| std::fs::read(e.path()).expect("read seed"))
        .collect();
    seeds.sort();
    assert!(!seeds.is_empty(), "no seeds in {dir}");
    let mut out = Parsed::default();
    for s in &seeds {
        decode(s, &mut out).expect("every seed decodes");
    }
    let (mut decoded, mut refused, mut slowest) = (0u64, 0u64, 0f64);
    let start = Instant::now();
    for i in 0..inputs {
        let mut d = seeds[rng.below(seeds.len())].clone();
        for _ in 0..[1, 1, 1, 2, 3, 8][rng.below(6)] {
            match rng.below(6) {
                0 if !d.is_empty() => {
                    let k = rng.below(d.len());
                    d[k] ^= 1 << rng.below(8)
                }
                1 if !d.is_empty() => {
                    let k = rng.below(d.len());
                    d[k] = rng.next() as u8
                }
                2 if !d.is_empty() => {
                    let k = rng.below(d.len());
                    d[k] = HOSTILE[rng.below(8)]
                }
                3 => d.truncate(rng.below(d.len() + 1)),
                4 => d.extend((0..rng.below(16)).map(|_| rng.next() as u8)),
                _ => {
                    let other = &seeds[rng.below(seeds.len())];
                    let a = rng.below(d.len() + 1);
                    let b = rng.below(other.len() + 1);
                    d.truncate(a);
                    d.extend_from_slice(&other[b..]);
                }
            }
        }
        let t = Instant::now();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| decode(&d, &mut out)));
        let dt = t.elapsed().as_secs_f64();
        slowest = slowest.max(dt);
        match r {
            Ok(Ok(())) => decoded += 1,
            Ok(Err(_)) => refused += 1,
            Err(_) => {
                eprintln!("finding: panic on input {i}: {}", hex(&d));
                std::process::exit(1);
            }
        }
        if dt > 0.05 {
            eprintln!("finding: {dt:.3} s on input {i}: {}", hex(&d));
            std::process::exit(1);
        }
    }
    println!(
        "kpm_fuzz ({ext}): {inputs} inputs, {decoded} decoded, {refused} refused, 0 findings, slowest {:.1} us, {:.1} s",
        slowest * 1e6,
        start.elapsed().as_secs_f64()
    );
}

mod per_fallback {
    /// Either decoder's refusal (the caller would take the Python path).
    #[derive(Debug)]
    pub struct Fallback;
}

fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}
