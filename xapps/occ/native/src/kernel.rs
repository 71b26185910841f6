//! The OCC kernel: `xapps/occ/kernel.py`'s `step_batch` (the numba-compiled reference) for one
//! UE row, operation for operation in the same order, so both give the same doubles. State
//! layout and column names are the Python module's (a checkpoint of one reads in the other).

pub const I_LAST_T: usize = 0;
pub const I_IDLE_RUN: usize = 1;
pub const I_LAST_START: usize = 2;
pub const I_PREV_START: usize = 3;
pub const I_CNT: usize = 4;
pub const I_NB: usize = 5;
pub const I_STATE: usize = 6;
pub const I_PF_INIT: usize = 7;
pub const I_DQ_HEAD: usize = 8;
pub const I_DQ_SIZE: usize = 11;
pub const I_PREV_CNT: usize = 14;
pub const I_OUTAGE: usize = 15;
pub const N_I: usize = 16;

pub const F_SUM_U: usize = 0;
pub const F_SUM_A: usize = 1;
pub const F_RBAR: usize = 2;
pub const F_DUTY: usize = 3;
pub const F_ARR: usize = 4;
pub const F_BUF: usize = 5;
pub const F_PREV_A: usize = 6;
pub const F_OUT: usize = 7;
pub const N_F: usize = 8;

pub const P_K: usize = 0;
pub const P_EPS: usize = 1;
pub const P_MIN_IDLE: usize = 2;
pub const P_MIN_FRAME: usize = 3;
pub const P_MAX_FRAME: usize = 4;
pub const P_D_TH: usize = 5;
pub const P_BETA: usize = 6;
pub const P_PF: usize = 7;
pub const P_PF_ALPHA: usize = 8;
pub const P_L: usize = 9;
pub const P_PROBE: usize = 10;
pub const P_GOODPUT: usize = 11;
pub const P_BN_ALPHA: usize = 12;
pub const P_DUTY_ON: usize = 13;
pub const P_DUTY_OFF: usize = 14;
pub const P_QTH: usize = 15;
pub const P_BN_MIN: usize = 16;
pub const P_OUTAGE: usize = 17;
pub const N_P: usize = 18;

pub const O_CP: usize = 0;
pub const O_B: usize = 1;
pub const O_CF: usize = 2;
pub const O_CPP: usize = 3;
pub const O_D: usize = 4;
pub const O_AWARE: usize = 5;
pub const N_O: usize = 6;

pub const STATE_INTERNET: i64 = 2;
pub const STATE_WIRELESS: i64 = 1;
const REBASE_AT: f64 = 1.0e9;

/// The block's row order (`metrics.BLOCK_ROWS`).
pub const N_ROWS: usize = 7;

/// One UE slot's state: views into the engine's arrays.
pub struct Slot<'a> {
    pub ist: &'a mut [i64],    // N_I
    pub fst: &'a mut [f64],    // N_F
    pub ring_u: &'a mut [f64], // hist
    pub ring_a: &'a mut [f64], // hist
    pub ring_c: &'a mut [i64], // hist
    pub dq_t: &'a mut [i64],   // 3 x lw
    pub dq_v: &'a mut [f64],   // 3 x lw
}

/// The kernel's parameters, read once per batch as `step_batch` reads them.
pub struct Params {
    k: f64,
    eps: f64,
    min_idle: i64,
    min_frame: i64,
    max_frame: i64,
    d_th: i64,
    beta: f64,
    pf: bool,
    pf_alpha: f64,
    probe: bool,
    goodput: f64,
    bn_alpha: f64,
    duty_on: f64,
    duty_off: f64,
    qth: f64,
    bn_min: i64,
    outage_fb: bool,
}

impl Params {
    pub fn new(p: &[f64]) -> Params {
        Params {
            k: p[P_K],
            eps: p[P_EPS],
            min_idle: p[P_MIN_IDLE] as i64,
            min_frame: p[P_MIN_FRAME] as i64,
            max_frame: p[P_MAX_FRAME] as i64,
            d_th: p[P_D_TH] as i64,
            beta: p[P_BETA],
            pf: p[P_PF] > 0.5,
            pf_alpha: p[P_PF_ALPHA],
            probe: p[P_PROBE] > 0.5,
            goodput: p[P_GOODPUT],
            bn_alpha: p[P_BN_ALPHA],
            duty_on: p[P_DUTY_ON],
            duty_off: p[P_DUTY_OFF],
            qth: p[P_QTH],
            bn_min: p[P_BN_MIN] as i64,
            outage_fb: p[P_OUTAGE] > 0.5,
        }
    }
}

/// Python's `%` for a positive modulus.
#[inline]
fn pm(a: i64, m: usize) -> usize {
    a.rem_euclid(m as i64) as usize
}

fn dq_expire(s: &mut Slot, q: usize, t: i64, lw: usize) {
    let mut head = s.ist[I_DQ_HEAD + q] as usize;
    let mut size = s.ist[I_DQ_SIZE + q];
    while size > 0 && s.dq_t[q * lw + head] <= t - lw as i64 {
        head += 1;
        if head == lw {
            head = 0;
        }
        size -= 1;
    }
    s.ist[I_DQ_HEAD + q] = head as i64;
    s.ist[I_DQ_SIZE + q] = size;
}

fn dq_push_min(s: &mut Slot, q: usize, t: i64, v: f64, lw: usize) -> f64 {
    dq_expire(s, q, t, lw);
    let head = s.ist[I_DQ_HEAD + q] as usize;
    let mut size = s.ist[I_DQ_SIZE + q] as usize;
    while size > 0 {
        let mut back = head + size - 1;
        if back >= lw {
            back -= lw;
        }
        if s.dq_v[q * lw + back] >= v {
            size -= 1;
        } else {
            break;
        }
    }
    let mut pos = head + size;
    if pos >= lw {
        pos -= lw;
    }
    s.dq_t[q * lw + pos] = t;
    s.dq_v[q * lw + pos] = v;
    size += 1;
    s.ist[I_DQ_SIZE + q] = size as i64;
    s.dq_v[q * lw + head]
}

fn window_min(s: &mut Slot, t: i64, lw: usize) -> f64 {
    dq_expire(s, 0, t, lw);
    if s.ist[I_DQ_SIZE] == 0 {
        return 0.0;
    }
    s.dq_v[s.ist[I_DQ_HEAD] as usize]
}

fn bottleneck_step(s: &mut Slot, p: &Params, arr: f64, buf: f64) {
    let ind = if arr > p.eps { 1.0 } else { 0.0 };
    let f = &mut *s.fst;
    let i = &mut *s.ist;
    if i[I_NB] == 0 {
        f[F_DUTY] = ind;
        f[F_ARR] = arr;
        f[F_BUF] = buf;
    } else {
        f[F_DUTY] += (ind - f[F_DUTY]) * p.bn_alpha;
        f[F_ARR] += (arr - f[F_ARR]) * p.bn_alpha;
        f[F_BUF] += (buf - f[F_BUF]) * p.bn_alpha;
    }
    i[I_NB] += 1;
    if i[I_NB] >= p.bn_min && f[F_ARR] > p.eps {
        let qdelay = f[F_BUF] / f[F_ARR];
        let duty = f[F_DUTY];
        let st = i[I_STATE];
        if st != STATE_INTERNET && duty >= p.duty_on && qdelay <= p.qth {
            i[I_STATE] = STATE_INTERNET;
        } else if st != STATE_WIRELESS && (duty <= p.duty_off || qdelay > 2.0 * p.qth) {
            i[I_STATE] = STATE_WIRELESS;
        }
    }
}

/// Granules t0 .. t0+g-1 of one UE row: `blk(r, j)` is row r (of `N_ROWS`), granule j.
/// Writes the per-granule outputs into `target`, `b_out`, `cp_out` (g each) and the latest
/// into `last` (N_O).
#[allow(clippy::too_many_arguments)]
pub fn step_ue(
    s: &mut Slot,
    p: &Params,
    t0: i64,
    g: usize,
    blk: impl Fn(usize, usize) -> f64,
    target: &mut [f64],
    b_out: &mut [f64],
    cp_out: &mut [f64],
    last_out: &mut [f64],
) {
    let hist = s.ring_u.len();
    let lw = s.dq_t.len() / 3;
    let out_alpha = 1.0 / lw as f64;
    let mut cp = 0.0;
    let mut b = 0.0;
    let mut cf = 0.0;
    let mut cpp = 0.0;
    let mut d = p.d_th;
    let mut aware = 0i64;
    for j in 0..g {
        let t = t0 + j as i64;
        let pu = blk(0, j);
        let pa = blk(1, j);
        let na = blk(2, j);
        let bpp = blk(3, j);
        let buf = blk(4, j);
        let arr = blk(5, j);
        let ptot = blk(6, j);
        let last = s.ist[I_LAST_T];
        if last >= 0 && t > last + 1 {
            let gap = t - last - 1;
            s.ist[I_IDLE_RUN] += gap;
            let fill = if gap < hist as i64 { gap } else { hist as i64 };
            for m in 0..fill {
                let tau = t - 1 - m;
                let h = pm(tau, hist);
                s.ring_u[h] = s.fst[F_SUM_U];
                s.ring_a[h] = s.fst[F_SUM_A];
                s.ring_c[h] = s.ist[I_CNT];
            }
        }
        if s.fst[F_SUM_U] > REBASE_AT || s.fst[F_SUM_A] > REBASE_AT {
            let su = s.fst[F_SUM_U];
            let sa = s.fst[F_SUM_A];
            for m in 0..hist {
                s.ring_u[m] -= su;
                s.ring_a[m] -= sa;
            }
            s.fst[F_SUM_U] = 0.0;
            s.fst[F_SUM_A] = 0.0;
        }
        let active = pu > 0.0 || buf > 0.0 || arr > 0.0;
        let mut n_eff = if active { na } else { na + 1.0 };
        if n_eff < 1.0 {
            n_eff = 1.0;
        }
        let u = pu + pa / n_eff;
        let r = bpp * p.k;
        cp = u * r;
        s.fst[F_SUM_U] += u;
        s.fst[F_SUM_A] += pu;
        s.ist[I_CNT] += 1;
        let h = pm(t, hist);
        s.ring_u[h] = s.fst[F_SUM_U];
        s.ring_a[h] = s.fst[F_SUM_A];
        s.ring_c[h] = s.ist[I_CNT];
        if arr > p.eps {
            let ls = s.ist[I_LAST_START];
            if s.ist[I_IDLE_RUN] >= p.min_idle && (ls < 0 || t - ls >= p.min_frame) {
                if ls >= 0 && t - ls <= p.max_frame {
                    let h1 = pm(t - 1, hist);
                    let h0 = pm(ls - 1, hist);
                    s.fst[F_PREV_A] = s.ring_a[h1] - s.ring_a[h0];
                    s.ist[I_PREV_CNT] = s.ring_c[h1] - s.ring_c[h0];
                } else {
                    s.ist[I_PREV_CNT] = 0;
                }
                s.ist[I_PREV_START] = ls;
                s.ist[I_LAST_START] = t;
            }
            s.ist[I_IDLE_RUN] = 0;
        } else {
            s.ist[I_IDLE_RUN] += 1;
        }
        let ls = s.ist[I_LAST_START];
        let ps = s.ist[I_PREV_START];
        if ps >= 0 && t - ls <= p.max_frame && ls - ps <= p.max_frame {
            d = ls - ps;
            if t - ls + 1 > d {
                d = t - ls + 1;
            }
            aware = 1;
        } else {
            d = p.d_th;
            aware = 0;
        }
        let hb = pm(t - d, hist);
        let cnt = (s.ist[I_CNT] - s.ring_c[hb]) as f64;
        let mean_u = (s.fst[F_SUM_U] - s.ring_u[hb]) / cnt;
        let mean_a = (s.fst[F_SUM_A] - s.ring_a[hb]) / cnt;
        b = mean_u * r;
        let mut avail = 1.0;
        if p.outage_fb {
            s.fst[F_OUT] += ((if r <= 0.0 { 1.0 } else { 0.0 }) - s.fst[F_OUT]) * out_alpha;
            avail = 1.0 - s.fst[F_OUT];
        }
        if p.outage_fb && r <= 0.0 {
            s.ist[I_OUTAGE] = 1;
            cf = 0.0;
            cpp = 0.0;
            target[j] = window_min(s, t, lw) * avail * p.goodput;
            b_out[j] = b;
            cp_out[j] = cp;
            bottleneck_step(s, p, arr, buf);
            s.ist[I_LAST_T] = t;
            continue;
        }
        s.ist[I_OUTAGE] = 0;
        let rf = if p.pf {
            if s.ist[I_PF_INIT] == 0 {
                s.fst[F_RBAR] = r;
                s.ist[I_PF_INIT] = 1;
            } else {
                s.fst[F_RBAR] += (r - s.fst[F_RBAR]) * p.pf_alpha;
            }
            if r < s.fst[F_RBAR] {
                r
            } else {
                s.fst[F_RBAR]
            }
        } else {
            r
        };
        cf = ptot / n_eff * rf;
        cpp = b + p.beta * (if cf > b { cf - b } else { 0.0 });
        let m_cpp = dq_push_min(s, 0, t, cpp, lw);
        let m_cf = dq_push_min(s, 1, t, cf, lw);
        let m_r = dq_push_min(s, 2, t, r, lw);
        let rate = if p.probe {
            let pc = s.ist[I_PREV_CNT];
            let own = if aware == 1 && pc > 0 {
                let cur_a = s.fst[F_SUM_A] - s.ring_a[pm(ls - 1, hist)];
                let own_a = if s.fst[F_PREV_A] > cur_a {
                    s.fst[F_PREV_A]
                } else {
                    cur_a
                };
                own_a / pc as f64 * m_r
            } else {
                mean_a * m_r
            };
            let mut q = own + p.beta * (if m_cf > own { m_cf - own } else { 0.0 });
            if q > m_cf {
                q = m_cf;
            }
            let hold = if m_cpp > q { m_cpp } else { q };
            if cpp < hold {
                cpp
            } else {
                hold
            }
        } else {
            m_cpp
        };
        target[j] = rate * avail * p.goodput;
        b_out[j] = b;
        cp_out[j] = cp;
        bottleneck_step(s, p, arr, buf);
        s.ist[I_LAST_T] = t;
    }
    last_out[O_CP] = cp;
    last_out[O_B] = b;
    last_out[O_CF] = cf;
    last_out[O_CPP] = cpp;
    last_out[O_D] = d as f64;
    last_out[O_AWARE] = aware as f64;
}
