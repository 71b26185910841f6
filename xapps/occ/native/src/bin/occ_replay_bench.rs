//! Times the native indication path on recorded PDUs (`u32 LE length + PDU` records):
//! `occ_replay_bench <file> [rounds]`. For profiling (perf record); the benchmark of record is
//! `octoric bench loop`.

use octo_occ::engine::Engine;
use octo_occ::fast::{Config, Fast};
use octo_occ::feedback::Feedback;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let data = std::fs::read(&args[1]).expect("the PDU file");
    let rounds: usize = args.get(2).map_or(20, |s| s.parse().unwrap_or(20));
    let mut pdus = Vec::new();
    let mut at = 0;
    while at + 4 <= data.len() {
        let n = u32::from_le_bytes(data[at..at + 4].try_into().unwrap()) as usize;
        pdus.push(&data[at + 4..at + 4 + n]);
        at += 4 + n;
    }
    // OccConfig's defaults (engine.params_vector)
    let mut p = vec![0.0; octo_occ::kernel::N_P];
    p[0] = 1000.0;
    p[1] = 100.0;
    p[2] = 2.0;
    p[3] = 5.0;
    p[4] = 200.0;
    p[5] = 40.0;
    p[6] = 0.5;
    p[9] = 100.0;
    p[11] = 0.95;
    p[12] = 1.0 / 200.0;
    let names = [
        "RRU.PrbUsedDl",
        "RRU.PrbAvailDl",
        "OCC.ActiveUesDl",
        "OCC.BitsPerPrbDl",
        "OCC.DlBufferBytes",
        "OCC.DlArrivedBytes",
        "OCC.PrbTotalDl",
    ];
    let mut total = 0u128;
    let mut handled = 0usize;
    for _ in 0..rounds {
        let cfg = Config {
            ran_function: 2,
            granularity_ms: 1,
            max_clock_ahead_ms: 5000.0,
            max_time_overlap_ms: 2,
            publish_reports: false,
            block_names: names.iter().map(|s| s.to_string()).collect(),
            shown: vec!["OCC.McsDl".into(), "DRB.UEThpDl".into()],
            schema: "octoric.abw_report".into(),
            version: 1,
        };
        let mut f = Fast::new(
            cfg,
            Engine::new(&p, 400, 100, 5000, 52.0),
            Feedback::default(),
        );
        let t = std::time::Instant::now();
        for pdu in &pdus {
            handled += f.handle(pdu, "gnb1", 1, octo_occ::trace::monotonic_ns()) as usize;
        }
        total += t.elapsed().as_nanos();
    }
    let n = rounds * pdus.len();
    println!(
        "{handled} of {n} handled; {:.1} us per indication",
        total as f64 / n as f64 / 1e3
    );
}
