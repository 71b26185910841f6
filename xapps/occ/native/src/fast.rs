//! The indication path without Python: one RMR payload (E2AP RICindication with an E2SM-KPM
//! Format 3 message) -> the engine -> feedback datagrams -> the 30500 report. It takes the
//! usual indication only: anything the Python path would treat differently (another RAN
//! function or format, a missing measurement, a noValue or bad value, a UE it cannot key or
//! names twice, a KPM v02.03 node, a time stamp ahead or behind) is *declined*, with nothing
//! changed, and the xApp's Python handler takes it, on the same engine and feedback state.

use crate::engine::{Engine, Out};
use crate::feedback::{guami_str, pack_guami, wall_s, Feedback, Guami};
use crate::kernel as K;
use octo_e2sm::{decode_format3, ricind, Parsed};
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

const NTP_UNIX_OFFSET: i64 = 2_208_988_800;

/// What the Python xApp configures (`OccXappConfig`), and the measurement names.
pub struct Config {
    pub ran_function: u16,
    pub granularity_ms: i64,
    pub max_clock_ahead_ms: f64,
    pub max_time_overlap_ms: i64,
    pub publish_reports: bool,
    pub block_names: Vec<String>, // metrics.BLOCK_ROWS (the last: P_total, optional)
    pub shown: Vec<String>,       // kpm_input.SHOWN (kept for the KPIs)
    pub schema: String,
    pub version: i64,
}

/// A node's latest handled indication, for the xApp's records and KPIs (taken by Python).
#[derive(Default, Clone)]
pub struct Latest {
    pub ues: Vec<i64>,
    pub guamis: Vec<Option<Guami>>,
    pub out: Out,
    pub t0_ms: i64,
    pub sn: Option<u16>,
    pub at: f64,
    /// (n_metrics, n_ue, g) of `names`: the engine's block plus the shown ones present
    pub metrics: Vec<f64>,
    pub names: Vec<String>,
    pub fresh: bool,
}

/// Deltas since Python last took them.
#[derive(Default)]
pub struct Taken {
    pub indications: u64,
    pub ue_samples: u64,
    pub time_overlap_shifted: u64,
    pub reports_sent: u64,
    pub reports_unsent: u64,
    pub reports_skipped_no_route: u64,
    pub declined: u64,
    pub declined_by: HashMap<&'static str, u64>,
    pub by_instance: HashMap<i32, u64>,
    pub latency_ns: Vec<u64>,
}

pub type SendReport = dyn FnMut(&[u8], &str, i32) -> ReportSent + Send;

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum ReportSent {
    Ok,
    NoRoute,
    Failed,
}

pub struct Fast {
    pub cfg: Config,
    pub engine: Engine,
    pub fb: Feedback,
    pub next_t0: HashMap<String, i64>,
    /// nodes announcing E2SM-KPM v02.03, whose stamps have whole seconds only
    pub whole_second_nodes: HashSet<String>,
    pub latest: HashMap<String, Latest>,
    pub taken: Taken,
    pub reporter: Option<Box<SendReport>>,
    pub trace: Option<crate::trace::Trace>,
    /// tests: the reports, kept here instead of sent (`occ_capture_reports`)
    pub captured: Option<Vec<Vec<u8>>>,
    /// CLOCK_MONOTONIC ns when the feedback of the last handled indication was sent
    fb_sent_ns: u64,
    no_route_until: f64,
    parsed: Parsed,
    out: Out,
    ids: Vec<i64>,
    guamis: Vec<Option<Guami>>,
    blk: Vec<f64>,
    json: String,
    seen: rustc_hash::FxHashSet<i64>,
}

/// `contracts.ue_key.du_key`.
pub fn du_key(meid: &str, f1ap: u64) -> i64 {
    let tag = (crate::trace::crc32(meid.as_bytes()) & 0xF_FFFF) as i64;
    (1i64 << 40) + (tag << 32) + f1ap as i64
}

impl Fast {
    pub fn new(cfg: Config, engine: Engine, fb: Feedback) -> Fast {
        Fast {
            cfg,
            engine,
            fb,
            next_t0: HashMap::new(),
            whole_second_nodes: HashSet::new(),
            latest: HashMap::new(),
            taken: Taken::default(),
            reporter: None,
            trace: crate::trace::Trace::from_env(),
            captured: None,
            fb_sent_ns: 0,
            no_route_until: 0.0,
            parsed: Parsed::default(),
            out: Out::default(),
            ids: Vec::new(),
            guamis: Vec::new(),
            blk: Vec::new(),
            json: String::new(),
            seen: rustc_hash::FxHashSet::default(),
        }
    }

    /// `OccXapp._continue_small_overlap`: the start to use, and whether it moved.
    pub fn continued(&self, meid: &str, t0: i64) -> (i64, bool) {
        if let Some(&nxt) = self.next_t0.get(meid) {
            if 0 < nxt - t0 && nxt - t0 <= self.cfg.max_time_overlap_ms {
                return (nxt, true);
            }
        }
        (t0, false)
    }

    /// `OccXapp._whole_second_start`: a v02.03 report on a whole second that holds the end of
    /// the node's previous report continues it.
    pub fn whole_second_start(&self, meid: &str, t0: i64) -> i64 {
        if t0 % 1000 == 0 {
            if let Some(&nxt) = self.next_t0.get(meid) {
                if t0 <= nxt && nxt < t0 + 1000 {
                    return nxt;
                }
            }
        }
        t0
    }

    /// Handle one indication; false: declined (nothing changed; the Python path takes it).
    pub fn handle(&mut self, payload: &[u8], meid: &str, sub_id: i32, t_in: u64) -> bool {
        match self.try_handle(payload, meid, sub_id) {
            Ok(()) => {
                let done = crate::trace::monotonic_ns();
                self.taken.latency_ns.push(done.saturating_sub(t_in));
                if let Some(tr) = self.trace.as_mut() {
                    tr.mark(payload, t_in, self.fb_sent_ns);
                }
                true
            }
            Err(why) => {
                self.taken.declined += 1;
                *self.taken.declined_by.entry(why).or_insert(0) += 1;
                false
            }
        }
    }

    fn try_handle(&mut self, payload: &[u8], meid: &str, sub_id: i32) -> Result<(), &'static str> {
        let Ok((ind, msg)) = ricind::parse(payload) else {
            return Err("envelope");
        };
        if ind.ran_function != self.cfg.ran_function {
            return Err("not_kpm");
        }
        let mut parsed = std::mem::take(&mut self.parsed);
        let res = match decode_format3(&msg, &mut parsed) {
            Ok(()) => self.run(&parsed, ind.ntp, ind.sn, meid, sub_id),
            Err(_) => Err("message"),
        };
        self.parsed = parsed;
        res
    }

    fn run(
        &mut self,
        p: &Parsed,
        ntp: u64,
        sn: Option<u16>,
        meid: &str,
        sub_id: i32,
    ) -> Result<(), &'static str> {
        let Some(first) = p.ues.first() else {
            return Err("message");
        };
        let g = first.n_rec as usize;
        if g == 0
            || p.ues
                .iter()
                .any(|u| u.n_rec as usize != g || u.names != first.names)
        {
            return Err("shape");
        }
        let mut dup = first.names.clone();
        dup.sort_unstable();
        dup.dedup();
        if dup.len() != first.names.len() {
            return Err("shape");
        }
        if let Some(u) = p.ues.iter().find(|u| u.gp >= 0) {
            if u.gp != self.cfg.granularity_ms {
                return Err("granularity");
            }
        }
        // column of each name in a UE's values (metric-major: values[m * g + j])
        let col = |name: &str| -> Option<usize> {
            first
                .names
                .iter()
                .position(|&i| p.names[i as usize] == name)
        };
        let nb = self.cfg.block_names.len();
        let mut cols: Vec<Option<usize>> = self.cfg.block_names.iter().map(|n| col(n)).collect();
        if cols[..nb - 1].iter().any(Option::is_none) {
            return Err("missing_metric"); // a missing measurement (or the degraded mode): Python decides
        }
        // (index in cfg.shown, column) of the shown measurements present
        let shown: Vec<(usize, usize)> = self
            .cfg
            .shown
            .iter()
            .enumerate()
            .filter_map(|(k, n)| col(n).map(|c| (k, c)))
            .collect();
        let n = p.ues.len();
        // UE keys
        self.ids.clear();
        self.guamis.clear();
        self.seen.clear();
        for u in &p.ues {
            let (key, gm) = if !u.du {
                (
                    u.amf as i64,
                    Some(pack_guami(u.plmn, u.region, u.set, u.pointer)),
                )
            } else if u.f1ap.len() == 1 && u.f1ap[0] <= u32::MAX as u64 {
                (du_key(meid, u.f1ap[0]), None)
            } else {
                return Err("ue_key");
            };
            if !self.seen.insert(key) {
                return Err("duplicate_ue");
            }
            self.ids.push(key);
            self.guamis.push(gm);
        }
        // the block (rows x UE x granule) and the check of every value Python would stack
        let plane = n * g;
        self.blk.clear();
        self.blk.resize(K::N_ROWS * plane, 0.0);
        let prb_total = self.engine.prb_total;
        for (r, c) in cols.iter_mut().enumerate() {
            for (i, u) in p.ues.iter().enumerate() {
                for j in 0..g {
                    let v = match c {
                        Some(c) => u.values[*c * g + j],
                        None => prb_total,
                    };
                    if v.is_nan() {
                        return Err("no_value"); // noValue: Python fills it (fill_no_value)
                    }
                    if !(0.0..f64::INFINITY).contains(&v) {
                        return Err("bad_value");
                    }
                    self.blk[r * plane + i * g + j] = v;
                }
            }
        }
        for (_, c) in &shown {
            if p.ues
                .iter()
                .any(|u| u.values[c * g..(c + 1) * g].iter().any(|v| v.is_nan()))
            {
                return Err("no_value");
            }
        }
        let secs = (ntp >> 32) as i64 - NTP_UNIX_OFFSET;
        let start = secs as f64 + (ntp & 0xFFFF_FFFF) as f64 / 4_294_967_296.0;
        let t0_raw = (start * 1000.0).round_ties_even();
        if !(0.0..9.0e15).contains(&t0_raw) {
            return Err("time_stamp");
        }
        let mut t0 = t0_raw as i64;
        if self.whole_second_nodes.contains(meid) {
            t0 = self.whole_second_start(meid, t0);
        }
        let (t0, shifted) = self.continued(meid, t0);
        let ahead = (t0 + g as i64 * self.cfg.granularity_ms) as f64 - wall_s() * 1000.0;
        if ahead > self.cfg.max_clock_ahead_ms {
            return Err("clock_ahead");
        }
        let mut out = std::mem::take(&mut self.out);
        if self
            .engine
            .ingest(&self.ids, t0, &self.blk, g, &mut out)
            .is_err()
        {
            self.out = out;
            return Err("engine_time");
        }
        // committed from here on
        self.next_t0
            .insert(meid.to_string(), t0 + g as i64 * self.cfg.granularity_ms);
        if shifted {
            self.taken.time_overlap_shifted += 1;
        }
        let gg = out.g;
        self.fb.update_batch(
            &self.ids,
            |i| out.target[i * gg + gg - 1],
            &out.fallback,
            &self.guamis,
            out.t_ms,
        );
        if self.trace.is_some() {
            self.fb_sent_ns = crate::trace::monotonic_ns();
        }
        let at = wall_s();
        if self.cfg.publish_reports {
            self.report(&out, meid, sub_id, sn, g, at);
        }
        self.taken.indications += 1;
        self.taken.ue_samples += plane as u64;
        *self.taken.by_instance.entry(sub_id).or_insert(0) += 1;
        if !self.latest.contains_key(meid) {
            self.latest.insert(meid.to_string(), Latest::default());
        }
        let l = self.latest.get_mut(meid).expect("inserted above");
        l.ues.clone_from(&self.ids);
        l.guamis.clone_from(&self.guamis);
        l.out.clone_from(&out);
        l.t0_ms = t0;
        l.sn = sn;
        l.at = at;
        let nb = self.cfg.block_names.len();
        let same = l.names.len() == nb + shown.len()
            && shown
                .iter()
                .enumerate()
                .all(|(i, &(k, _))| l.names[nb + i] == self.cfg.shown[k]);
        if !same {
            // the node's measurement names: rebuilt only when its shown ones change
            l.names.clear();
            l.names.extend(self.cfg.block_names.iter().cloned());
            l.names
                .extend(shown.iter().map(|&(k, _)| self.cfg.shown[k].clone()));
        }
        l.metrics.clear();
        l.metrics.extend_from_slice(&self.blk);
        for &(_, c) in &shown {
            for u in &p.ues {
                l.metrics.extend_from_slice(&u.values[c * g..(c + 1) * g]);
            }
        }
        l.fresh = true;
        self.out = out;
        Ok(())
    }

    fn report(&mut self, out: &Out, meid: &str, sub_id: i32, sn: Option<u16>, g: usize, at: f64) {
        if at < self.no_route_until {
            self.taken.reports_skipped_no_route += 1;
            return;
        }
        if self.captured.is_none() && self.reporter.is_none() {
            return;
        }
        let mut s = std::mem::take(&mut self.json);
        encode_report(
            &mut s,
            &self.cfg,
            out,
            &self.ids,
            &self.guamis,
            meid,
            sub_id,
            sn,
            g,
            at,
        );
        if let Some(c) = self.captured.as_mut() {
            c.push(s.as_bytes().to_vec());
            self.json = s;
            return;
        }
        let Some(mut send) = self.reporter.take() else {
            self.json = s;
            return;
        };
        match send(s.as_bytes(), meid, sub_id) {
            ReportSent::Ok => self.taken.reports_sent += 1,
            ReportSent::NoRoute => {
                self.taken.reports_unsent += 1;
                self.no_route_until = at + 1.0;
            }
            ReportSent::Failed => self.taken.reports_unsent += 1,
        }
        self.json = s;
        self.reporter = Some(send);
    }
}

/// JSON string contents as orjson writes them.
pub fn json_escape(s: &mut String, v: &str) {
    s.push('"');
    for ch in v.chars() {
        match ch {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\r' => s.push_str("\\r"),
            '\t' => s.push_str("\\t"),
            '\u{8}' => s.push_str("\\b"),
            '\u{c}' => s.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(s, "\\u{:04x}", c as u32);
            }
            c => s.push(c),
        }
    }
    s.push('"');
}

/// `messages._rates` for one value: an int, or null where not finite or beyond int64.
fn rate(s: &mut String, x: f64) {
    if (-(2f64.powi(63))..2f64.powi(63)).contains(&x) {
        s.push_str(&crate::feedback::py_round_int(x));
    } else {
        s.push_str("null");
    }
}

const BOTTLENECK: [&str; 3] = ["unknown", "wireless", "internet"];

/// `messages.abw_report` + `messages.encode` (orjson): the 30500 payload, byte for byte.
#[allow(clippy::too_many_arguments)]
pub fn encode_report(
    s: &mut String,
    cfg: &Config,
    out: &Out,
    ids: &[i64],
    guamis: &[Option<Guami>],
    meid: &str,
    sub_id: i32,
    sn: Option<u16>,
    g: usize,
    at: f64,
) {
    s.clear();
    s.push_str("{\"schema\":");
    json_escape(s, &cfg.schema);
    let _ = write!(s, ",\"version\":{},\"meid\":", cfg.version);
    json_escape(s, meid);
    let _ = write!(s, ",\"sub_id\":{sub_id},\"sn\":");
    match sn {
        Some(v) => {
            let _ = write!(s, "{v}");
        }
        None => s.push_str("null"),
    }
    let t0 = out.t_ms - g as i64 + 1;
    let _ = write!(
        s,
        ",\"t0_ms\":{t0},\"t_ms\":{},\"granule_ms\":1,\"n_granules\":{g},\"sent_at\":{},\"ues\":[",
        out.t_ms,
        crate::feedback::py_round6_repr(at)
    );
    let b = |v: bool| if v { "true" } else { "false" };
    for i in 0..out.n {
        if i > 0 {
            s.push(',');
        }
        let last = &out.last[i * K::N_O..(i + 1) * K::N_O];
        let _ = write!(s, "{{\"ue\":{},\"guami\":", ids[i]);
        match guamis[i] {
            Some(gm) => json_escape(s, &guami_str(gm)),
            None => s.push_str("null"),
        }
        s.push_str(",\"target_bps\":");
        rate(s, out.target_last(i));
        let st = out.state[i] as usize;
        let _ = write!(
            s,
            ",\"fallback\":{},\"handover\":{},\"outage\":{},\"bottleneck\":\"{}\",\"cp_bps\":",
            b(out.fallback[i]),
            b(out.ho[i]),
            b(out.outage[i]),
            BOTTLENECK.get(st).copied().unwrap_or("unknown")
        );
        rate(s, last[K::O_CP]);
        s.push_str(",\"frame_abw_bps\":");
        rate(s, last[K::O_B]);
        s.push_str(",\"fair_share_bps\":");
        rate(s, last[K::O_CF]);
        s.push_str(",\"cp_prime_bps\":");
        rate(s, last[K::O_CPP]);
        let _ = write!(
            s,
            ",\"frame_interval_ms\":{},\"frame_aware\":{},\"target_bps_granules\":[",
            last[K::O_D] as i64,
            b(last[K::O_AWARE] > 0.5)
        );
        for j in 0..out.g {
            if j > 0 {
                s.push(',');
            }
            let v = out.target[i * out.g + j];
            if v.is_finite() && v >= 0.0 && v < 2f64.powi(62) {
                s.push_str(&crate::feedback::py_round_int(v));
            } else {
                s.push_str("null");
            }
        }
        s.push_str("]}");
    }
    s.push_str("]}");
}
