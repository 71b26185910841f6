//! `OccEngine` (xapps/occ/engine.py) natively: per-UE state slots, `ingest` of one validated
//! block, handovers, expiry, export and import of a UE's state in the Python engine's layout.

use crate::kernel::{self as K, Params, Slot};
use rustc_hash::FxHashMap;
use std::collections::HashMap;

/// `batch.Bottleneck.INTERNET`.
const INTERNET: i64 = 2;

#[derive(Default, Clone, Copy, Debug)]
pub struct Stats {
    pub batches: u64,
    pub ue_samples: u64,
    pub ues_created: u64,
    pub ues_expired: u64,
    pub handover_events: u64,
}

/// One ingested block's results, per UE row (the `AbwBatch` columns the xApp uses).
#[derive(Default, Debug, Clone)]
pub struct Out {
    pub n: usize,
    pub g: usize,
    pub t_ms: i64,
    pub last: Vec<f64>,   // n x N_O
    pub target: Vec<f64>, // n x g
    pub b: Vec<f64>,      // n x g
    pub cp: Vec<f64>,     // n x g
    pub state: Vec<i8>,
    pub ho: Vec<bool>,
    pub outage: Vec<bool>,
    pub fallback: Vec<bool>,
}

impl Out {
    pub fn target_last(&self, i: usize) -> f64 {
        self.target[i * self.g + self.g - 1]
    }
}

/// A batch refused as a whole: the reason (the Python engine's `OccInputError.reason`) and
/// the UEs at fault.
#[derive(Debug)]
pub struct Refused {
    pub reason: &'static str,
    pub bad: Vec<i64>,
}

pub struct Engine {
    params: Vec<f64>,
    hist: usize,
    lw: usize,
    pub expire_ms: i64,
    pub prb_total: f64,
    // FxHash: integer UE keys, looked up once per UE and indication; SipHash was ~5 % of the path
    slot_of: FxHashMap<i64, usize>,
    free: Vec<usize>,
    n_slots: usize,
    ist: Vec<i64>,
    fst: Vec<f64>,
    ring_u: Vec<f64>,
    ring_a: Vec<f64>,
    ring_c: Vec<i64>,
    dq_t: Vec<i64>,
    dq_v: Vec<f64>,
    ho: Vec<bool>,
    touch: Vec<i64>,
    in_use: Vec<bool>,
    last_out: Vec<f64>, // x 2
    last_r: Vec<f64>,
    now: i64,
    pub stats: Stats,
    slots_scratch: Vec<usize>,
}

impl Engine {
    pub fn new(params: &[f64], hist: usize, lw: usize, expire_ms: i64, prb_total: f64) -> Engine {
        Engine {
            params: params.to_vec(),
            hist,
            lw,
            expire_ms,
            prb_total,
            slot_of: FxHashMap::default(),
            free: Vec::new(),
            n_slots: 0,
            ist: Vec::new(),
            fst: Vec::new(),
            ring_u: Vec::new(),
            ring_a: Vec::new(),
            ring_c: Vec::new(),
            dq_t: Vec::new(),
            dq_v: Vec::new(),
            ho: Vec::new(),
            touch: Vec::new(),
            in_use: Vec::new(),
            last_out: Vec::new(),
            last_r: Vec::new(),
            now: -1,
            stats: Stats::default(),
            slots_scratch: Vec::new(),
        }
    }

    pub fn params(&self) -> &[f64] {
        &self.params
    }
    pub fn hist(&self) -> usize {
        self.hist
    }
    pub fn lw(&self) -> usize {
        self.lw
    }
    pub fn len(&self) -> usize {
        self.slot_of.len()
    }
    pub fn is_empty(&self) -> bool {
        self.slot_of.is_empty()
    }

    fn slot(&mut self, s: usize) -> Slot<'_> {
        let (h, lw) = (self.hist, self.lw);
        Slot {
            ist: &mut self.ist[s * K::N_I..(s + 1) * K::N_I],
            fst: &mut self.fst[s * K::N_F..(s + 1) * K::N_F],
            ring_u: &mut self.ring_u[s * h..(s + 1) * h],
            ring_a: &mut self.ring_a[s * h..(s + 1) * h],
            ring_c: &mut self.ring_c[s * h..(s + 1) * h],
            dq_t: &mut self.dq_t[s * 3 * lw..(s + 1) * 3 * lw],
            dq_v: &mut self.dq_v[s * 3 * lw..(s + 1) * 3 * lw],
        }
    }

    fn grow(&mut self) {
        let s = self.n_slots + 1;
        let (h, lw) = (self.hist, self.lw);
        self.ist.resize(s * K::N_I, 0);
        self.fst.resize(s * K::N_F, 0.0);
        self.ring_u.resize(s * h, 0.0);
        self.ring_a.resize(s * h, 0.0);
        self.ring_c.resize(s * h, 0);
        self.dq_t.resize(s * 3 * lw, 0);
        self.dq_v.resize(s * 3 * lw, 0.0);
        self.ho.push(false);
        self.touch.push(-1);
        self.in_use.push(false);
        self.last_out.extend_from_slice(&[0.0, 0.0]);
        self.last_r.push(0.0);
    }

    fn reset_estimator(&mut self, s: usize) {
        let sl = self.slot(s);
        sl.ist[K::I_IDLE_RUN] = 0;
        sl.ist[K::I_LAST_START] = -1;
        sl.ist[K::I_PREV_START] = -1;
        sl.ist[K::I_CNT] = 0;
        sl.ist[K::I_PF_INIT] = 0;
        sl.ist[K::I_PREV_CNT] = 0;
        sl.fst[K::F_PREV_A] = 0.0;
        sl.ist[K::I_DQ_HEAD..K::I_DQ_HEAD + 3].fill(0);
        sl.ist[K::I_DQ_SIZE..K::I_DQ_SIZE + 3].fill(0);
        sl.fst[K::F_SUM_U] = 0.0;
        sl.fst[K::F_SUM_A] = 0.0;
        sl.fst[K::F_RBAR] = 0.0;
        sl.fst[K::F_OUT] = 0.0;
        sl.ring_u.fill(0.0);
        sl.ring_a.fill(0.0);
        sl.ring_c.fill(0);
        self.last_r[s] = 0.0;
    }

    fn new_slot(&mut self, ue: i64, now: i64) -> usize {
        let s = match self.free.pop() {
            Some(s) => s,
            None => {
                self.grow();
                self.n_slots += 1;
                self.n_slots - 1
            }
        };
        {
            let sl = self.slot(s);
            sl.ist.fill(0);
            sl.ist[K::I_LAST_T] = -1;
            sl.fst.fill(0.0);
        }
        self.reset_estimator(s);
        self.ho[s] = false;
        self.touch[s] = now;
        self.in_use[s] = true;
        self.last_out[2 * s] = f64::NAN;
        self.last_out[2 * s + 1] = 0.0;
        self.slot_of.insert(ue, s);
        self.stats.ues_created += 1;
        s
    }

    fn fallback_of(&self, s: usize) -> bool {
        self.ho[s]
            || self.ist[s * K::N_I + K::I_STATE] == INTERNET
            || self.ist[s * K::N_I + K::I_OUTAGE] > 0
    }

    /// UEs that have state, in no particular order.
    pub fn ue_ids(&self) -> Vec<i64> {
        self.slot_of.keys().copied().collect()
    }

    pub fn last_r(&self, ue: i64) -> f64 {
        self.slot_of.get(&ue).map_or(0.0, |&s| self.last_r[s])
    }

    /// Forget UEs without a sample or event for `expire_ms`; their ids.
    pub fn expire(&mut self, now_ms: i64) -> Vec<i64> {
        let limit = now_ms - self.expire_ms;
        let mut gone_slots = Vec::new();
        for s in 0..self.n_slots {
            if self.in_use[s] && self.touch[s] < limit {
                gone_slots.push(s);
            }
        }
        if gone_slots.is_empty() {
            return Vec::new();
        }
        // the Python engine drops them in slot order (np.flatnonzero), so the free list ends
        // the same and later UEs land in the same slots
        let inv: HashMap<usize, i64> = self.slot_of.iter().map(|(&u, &s)| (s, u)).collect();
        let mut gone = Vec::with_capacity(gone_slots.len());
        for s in gone_slots {
            let ue = inv[&s];
            self.slot_of.remove(&ue);
            self.in_use[s] = false;
            self.free.push(s);
            gone.push(ue);
        }
        self.stats.ues_expired += gone.len() as u64;
        gone
    }

    pub fn on_handover(&mut self, ue: i64, start: bool, t_ms: Option<i64>) {
        let now = t_ms.unwrap_or(self.now);
        let s = match self.slot_of.get(&ue) {
            Some(&s) => s,
            None => self.new_slot(ue, now),
        };
        self.touch[s] = self.touch[s].max(now);
        self.stats.handover_events += 1;
        if start {
            self.ho[s] = true;
        } else {
            if self.ho[s] {
                self.reset_estimator(s);
            }
            self.ho[s] = false;
        }
        self.last_out[2 * s + 1] = if self.fallback_of(s) { 1.0 } else { 0.0 };
    }

    /// (target goodput, fallback) of the UE's latest sample.
    pub fn latest(&self, ue: i64) -> Option<(f64, bool)> {
        let &s = self.slot_of.get(&ue)?;
        Some((self.last_out[2 * s], self.fallback_of(s)))
    }

    /// Run one block: `blk` is (N_ROWS, n, g) row-major, already checked (finite, >= 0; no
    /// UE twice). Refuses it whole, changing nothing, when a known UE has a sample at or
    /// after `t0` (`time`).
    pub fn ingest(
        &mut self,
        ids: &[i64],
        t0: i64,
        blk: &[f64],
        g: usize,
        out: &mut Out,
    ) -> Result<(), Refused> {
        let n = ids.len();
        debug_assert_eq!(blk.len(), K::N_ROWS * n * g);
        let mut slots = std::mem::take(&mut self.slots_scratch);
        slots.clear();
        let mut late = Vec::new();
        for &u in ids {
            match self.slot_of.get(&u) {
                Some(&s) => {
                    if self.ist[s * K::N_I + K::I_LAST_T] >= t0 {
                        late.push(u);
                    }
                    slots.push(s);
                }
                None => slots.push(usize::MAX),
            }
        }
        if !late.is_empty() {
            self.slots_scratch = slots;
            return Err(Refused {
                reason: "time",
                bad: late,
            });
        }
        for i in 0..n {
            if slots[i] == usize::MAX {
                slots[i] = self.new_slot(ids[i], t0);
            }
        }
        out.n = n;
        out.g = g;
        out.last.clear();
        out.last.resize(n * K::N_O, 0.0);
        for v in [&mut out.target, &mut out.b, &mut out.cp] {
            v.clear();
            v.resize(n * g, 0.0);
        }
        let p = Params::new(&self.params);
        let plane = n * g;
        for (i, &s) in slots.iter().enumerate() {
            let row = i * g;
            let mut sl = self.slot(s);
            K::step_ue(
                &mut sl,
                &p,
                t0,
                g,
                |r, j| blk[r * plane + row + j],
                &mut out.target[row..row + g],
                &mut out.b[row..row + g],
                &mut out.cp[row..row + g],
                &mut out.last[i * K::N_O..(i + 1) * K::N_O],
            );
        }
        let t_last = t0 + g as i64 - 1;
        self.now = self.now.max(t_last);
        out.t_ms = t_last;
        out.state.clear();
        out.ho.clear();
        out.outage.clear();
        out.fallback.clear();
        for (i, &s) in slots.iter().enumerate() {
            self.touch[s] = t_last;
            // the latest granule with an MCS (bits per PRB > 0)
            let r_row = 3 * plane + i * g;
            if let Some(j) = (0..g).rev().find(|&j| blk[r_row + j] > 0.0) {
                self.last_r[s] = blk[r_row + j];
            }
            let st = self.ist[s * K::N_I + K::I_STATE];
            let ho = self.ho[s];
            let outage = self.ist[s * K::N_I + K::I_OUTAGE] > 0;
            let fb = ho || st == INTERNET || outage;
            out.state.push(st as i8);
            out.ho.push(ho);
            out.outage.push(outage);
            out.fallback.push(fb);
            self.last_out[2 * s] = out.target[i * g + g - 1];
            self.last_out[2 * s + 1] = if fb { 1.0 } else { 0.0 };
        }
        self.stats.batches += 1;
        self.stats.ue_samples += (n * g) as u64;
        self.slots_scratch = slots;
        self.expire(self.now);
        Ok(())
    }

    /// Sizes of one UE's exported arrays: ist, fst, ring (x3), dq (x2), flags, last_out.
    pub fn state_sizes(&self) -> [usize; 9] {
        [
            K::N_I,
            K::N_F,
            self.hist,
            self.hist,
            self.hist,
            3 * self.lw,
            3 * self.lw,
            2,
            2,
        ]
    }

    /// Copy UE `ue`'s state into the given rows; false when the UE is unknown.
    #[allow(clippy::too_many_arguments)]
    pub fn export_ue(
        &self,
        ue: i64,
        ist: &mut [i64],
        fst: &mut [f64],
        ring_u: &mut [f64],
        ring_a: &mut [f64],
        ring_c: &mut [i64],
        dq_t: &mut [i64],
        dq_v: &mut [f64],
        flags: &mut [i64],
        last_out: &mut [f64],
    ) -> bool {
        let Some(&s) = self.slot_of.get(&ue) else {
            return false;
        };
        let (h, lw) = (self.hist, self.lw);
        ist.copy_from_slice(&self.ist[s * K::N_I..(s + 1) * K::N_I]);
        fst.copy_from_slice(&self.fst[s * K::N_F..(s + 1) * K::N_F]);
        ring_u.copy_from_slice(&self.ring_u[s * h..(s + 1) * h]);
        ring_a.copy_from_slice(&self.ring_a[s * h..(s + 1) * h]);
        ring_c.copy_from_slice(&self.ring_c[s * h..(s + 1) * h]);
        dq_t.copy_from_slice(&self.dq_t[s * 3 * lw..(s + 1) * 3 * lw]);
        dq_v.copy_from_slice(&self.dq_v[s * 3 * lw..(s + 1) * 3 * lw]);
        flags[0] = self.ho[s] as i64;
        flags[1] = self.touch[s];
        last_out.copy_from_slice(&self.last_out[2 * s..2 * s + 2]);
        true
    }

    /// Restore a UE from `export_ue` rows (shapes are the caller's to check).
    #[allow(clippy::too_many_arguments)]
    pub fn import_ue(
        &mut self,
        ue: i64,
        ist: &[i64],
        fst: &[f64],
        ring_u: &[f64],
        ring_a: &[f64],
        ring_c: &[i64],
        dq_t: &[i64],
        dq_v: &[f64],
        flags: &[i64],
        last_out: &[f64],
    ) {
        let s = match self.slot_of.get(&ue) {
            Some(&s) => s,
            None => {
                let s = self.new_slot(ue, flags[1]);
                self.stats.ues_created -= 1; // a restored UE is not a new one
                s
            }
        };
        let (h, lw) = (self.hist, self.lw);
        self.ist[s * K::N_I..(s + 1) * K::N_I].copy_from_slice(ist);
        self.fst[s * K::N_F..(s + 1) * K::N_F].copy_from_slice(fst);
        self.ring_u[s * h..(s + 1) * h].copy_from_slice(ring_u);
        self.ring_a[s * h..(s + 1) * h].copy_from_slice(ring_a);
        self.ring_c[s * h..(s + 1) * h].copy_from_slice(ring_c);
        self.dq_t[s * 3 * lw..(s + 1) * 3 * lw].copy_from_slice(dq_t);
        self.dq_v[s * 3 * lw..(s + 1) * 3 * lw].copy_from_slice(dq_v);
        self.ho[s] = flags[0] != 0;
        self.touch[s] = flags[1];
        self.last_out[2 * s..2 * s + 2].copy_from_slice(last_out);
        self.now = self
            .now
            .max(self.ist[s * K::N_I + K::I_LAST_T])
            .max(flags[1]);
    }
}
