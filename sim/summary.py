"""The run summary (JSON) and the time series written beside it.

Every figure in the summary is a function of the scenario and the seed only, except
``wall_seconds`` (how long the run took on this machine).
"""

from __future__ import annotations

import csv
import itertools
import json
import math
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from octoric.sim import quality
from octoric.sim.engine import Engine
from octoric.sim.receiver import STALL_MS, VideoReceiver
from octoric.sim.video import VideoSender


def _r(x: float, nd: int = 3) -> float | None:
    return None if x is None or math.isnan(x) else round(float(x), nd)


FREEZE_WINDOW = 30  # rendered frames the average frame duration is taken over
FREEZE_MIN_SAMPLES = 5  # before this many, no freeze is counted (Chromium's observer)


def freezes(decoded_at: Sequence[tuple[int, int]]) -> tuple[int, float]:
    """(count, seconds) of video freezes as the W3C webrtc-stats ``freezeCount`` defines them
    and Chromium's getStats() reports them: a rendered frame's duration (the time since the
    previous rendered frame) of at least max(3 x avg, avg + 150 ms), avg being the mean over
    the last 30 frame durations. A frame is rendered when decoded after every newer one
    already shown (an older one is dropped, as libwebrtc's frame buffer does)."""
    last_f, last_t = -1, -1
    durs: list[float] = []
    count, total = 0, 0.0
    for f, t in decoded_at:
        if f <= last_f:
            continue
        if last_t >= 0:
            d = (t - last_t) / 1000.0
            if len(durs) >= FREEZE_MIN_SAMPLES:
                avg = sum(durs[-FREEZE_WINDOW:]) / len(durs[-FREEZE_WINDOW:])
                if d >= max(3 * avg, avg + 150.0):
                    count += 1
                    total += d / 1000.0
            durs.append(d)
        last_f, last_t = f, t
    return count, total


def _pct(values: Sequence[float]) -> dict[str, float | None]:
    if not len(values):
        return {"p50": None, "p95": None, "p99": None, "mean": None}
    a = np.asarray(values)
    return {
        "p50": _r(float(np.percentile(a, 50))),
        "p95": _r(float(np.percentile(a, 95))),
        "p99": _r(float(np.percentile(a, 99))),
        "mean": _r(float(a.mean())),
    }


def handover_stats(eng: Engine) -> dict[str, Any]:
    hs = eng.handovers
    if not hs:
        return {"count": 0}
    by_ue: dict[int, list[float]] = {}
    for h in hs:
        by_ue.setdefault(h.ue, []).append(h.start_s)
    n_int = sum(len(v) - 1 for v in by_ue.values())
    span = sum(v[-1] - v[0] for v in by_ue.values())
    sim_s = eng.slot * eng.slot_us / 1e6
    return {
        "count": len(hs),
        "ues": len(by_ue),
        "mean_interval_s": _r(span / n_int) if n_int else None,
        "rate_interval_s": _r(sim_s * len(eng.ues) / len(hs)),
        "mean_duration_ms": _r(sum(h.duration_ms for h in hs) / len(hs)),
        "failure_rate": _r(sum(h.failed for h in hs) / len(hs), 4),
        "pingpong_fraction": _r(sum(h.pingpong for h in hs) / len(hs), 4),
        "share_intervals_below_2s": _r(
            sum(1 for v in by_ue.values() for a, b in itertools.pairwise(v) if b - a < 2.0)
            / n_int, 4,
        ) if n_int else None,
    }  # fmt: skip


CONVERGED = 0.9  # convergence: this share of the UE's capacity ...
SUSTAIN_S = 2.0  # ... in a time-series bin and on average over this long from it


def convergence_s(eng: Engine, ue: int, start_s: float) -> float | None:
    """Seconds from ``start_s`` until the UE's delivered rate first reaches 90 % of its
    capacity, in a time-series bin and on average over the 2 s from it (the Dumbo thesis's
    convergence time, with the capacity series for the link's rate: a standing queue's drain
    at the link rate lasts well under 2 s, so it is not taken for convergence); None if it
    never does (an application-limited flow)."""
    t = np.asarray(eng._ts_bins)
    if t.size < 3:
        return None
    dlv = np.diff([row[ue] for row in eng.ts_ue_delivered])
    cap = np.diff([row[ue] for row in eng.ts_ue_capacity])
    t0 = t[:-1]
    k = max(1, round(SUSTAIN_S / max(float(t[1] - t[0]), 1e-9)))
    for i in np.nonzero((t0 >= start_s) & (cap > 0) & (dlv >= CONVERGED * cap))[0]:
        if i + k > dlv.size:
            break
        if dlv[i : i + k].sum() >= CONVERGED * cap[i : i + k].sum():
            return round(float(t0[i] - start_s), 3)
    return None


# frames captured in the run's last second are not scored: most are still in flight
QUALITY_TAIL_S = 1.0


def video_quality(snd: VideoSender, r: VideoReceiver, sim_s: float) -> dict[str, Any]:
    """Picture quality of one video flow (sim/quality.py): SSIM/PSNR of decoded frames from
    the measured rate -> quality curve, and SQI-SSIM."""
    cfg = snd.cfg
    fr = snd.frames
    q = quality.flow_quality(quality.QualityInputs(
        model=cfg.quality_model, pixels_per_s=cfg.width * cfg.height * cfg.fps,
        svc=cfg.svc, svc_overhead=cfg.svc_overhead,
        spatial_cumulative=tuple(cfg.spatial_cumulative), decay_s=cfg.sqi_decay_s,
        frame_enc_us=fr.enc_us, frame_quality_bps=fr.quality_bps, frame_base_msg=fr.base_msg,
        frame_nmsgs=fr.nmsgs, msg_decoded_us=r.decoded_us, skipped_us=snd.skipped_us,
        until_us=int((sim_s - QUALITY_TAIL_S) * 1e6),
    ))  # fmt: skip

    def rounded(v: Any) -> Any:
        if isinstance(v, float):
            return _r(v, 4)
        if isinstance(v, list):
            return [rounded(x) for x in v]
        if isinstance(v, dict):
            return {k: rounded(x) for k, x in v.items()}
        return v

    return rounded(q)  # type: ignore[no-any-return]


def build_summary(eng: Engine, wall_seconds: float) -> dict[str, Any]:
    sim_s = eng.slot * eng.slot_us / 1e6
    sc = eng.sc
    ues = []
    for u in eng.ues:
        starts = [f.spec.start_s for f in eng.flows if f.ue == u.idx]
        n_ho = sum(1 for h in eng.handovers if h.ue == u.idx)
        ues.append({
            "ue": u.idx,
            "amf_ue_ngap_id": u.amf_ue_ngap_id,
            "capacity_bytes": round(u.cap_bytes),
            "delivered_bytes": int(u.delivered_bytes),
            "prbs_used": u.prb_total,
            "utilization": _r(u.delivered_bytes / u.cap_bytes, 4) if u.cap_bytes > 0 else None,
            "convergence_s": convergence_s(eng, u.idx, min(starts)) if starts else None,
            "handovers": n_ho,
            "handover_failures": sum(1 for h in eng.handovers if h.ue == u.idx and h.failed),
            "dropper": None if u.queue.dropper is None else asdict(u.queue.dropper.stats),
            "malformed_headers": u.queue.header_counters.malformed,
        })  # fmt: skip
    flows = []
    for f in eng.flows:
        d: dict[str, Any] = {"flow": f.idx, "ue": f.ue, "traffic": f.spec.traffic}
        if f.sender is not None and f.receiver is not None:
            r, snd = f.receiver, f.sender
            lat = r.frame_latency_ms
            dur = max(sim_s - f.spec.start_s, 1e-9)
            wants_abw = f.ctrl is not None and f.ctrl.wants_abw
            d.update({
                "scheme": f.ctrl.name if f.ctrl is not None else f.spec.scheme,
                "abw_source": eng.abw.name if eng.abw is not None and wants_abw else None,
                "frames_sent": len(snd.frames.enc_us),
                "frames_skipped": snd.skipped_frames,
                "frames_decoded": len(lat),
                "frame_latency_ms": _pct(lat),
                "network_latency_ms": _pct(r.net_latency_ms),
                "stall_rate": _r(sum(x > STALL_MS for x in lat) / len(lat), 4) if lat else None,
                "freezes": dict(zip(("count", "seconds"), freezes(r.frame_decoded_at),
                                    strict=True)),
                "valid_bitrate_kbps": _r(r.valid_bits / dur / 1000.0),
                "frame_bitrate_kbps": _r(snd.sent_bytes * 8 / dur / 1000.0),
                "received_frame_bitrate_kbps": _r(r.complete_bits() / dur / 1000.0),
                "decoded_bitrate_kbps": _r(r.decoded_bits / dur / 1000.0),
                "aoi_ms": _pct(r.aoi_ms),
                "dropped_packets": f.dropped_pkts,
                "tail_dropped_packets": f.tail_dropped_pkts,
                "harq_lost_packets": f.harq_lost_pkts,
                "wired_lost_packets": f.wired_lost_pkts,
                "feedback_held": f.feedback_held,
                "undecodable_messages": r.undecodable_complete(),
                "keyframe_requests": r.plis,  # PLIs sent (``video.keyframe_on_loss``)
                "keyframes_on_request": snd.keyframes_requested,
                "quality": video_quality(f.sender, r, sim_s),
            })  # fmt: skip
            if f.ice_srv is not None:
                # ICE (video.ice_checks): the sender's time unwritable, the media packets it
                # discarded and the feedback reports the receiver could not send meanwhile
                down = f.ice_srv.unwritable_us(int(sim_s * 1e6))
                d["ice"] = {"unwritable_s": _r(down / 1e6, 3),
                            "discarded_packets": f.ice_discarded_pkts,
                            "discarded_feedback": f.ice_discarded_feedback}  # fmt: skip
        if f.tx is not None and f.sender is not None:  # video on the packet-level transport
            sent = f.tx.media_bytes + f.tx.padding_bytes
            d.update({
                "transport": "packet",
                "window_scheme": f.tx.scheme.name,
                "padding": f.tx.padding,
                "padding_share": _r(f.tx.padding_bytes / sent, 4) if sent else None,
                "rtt_ms": _pct(f.tx.rtt_samples_ms),
                **f.tx.stats(),
            })  # fmt: skip
        elif f.tx is not None and f.tx_sink is not None:
            dur = max(sim_s - f.spec.start_s, 1e-9)
            rcv = f.tx_sink
            d.update({
                "scheme": f.tx.scheme.name,
                "transport": "packet",
                "goodput_kbps": _r(rcv.received_bytes * 8 / dur / 1000.0),
                # a file download (``size_mb``): from the flow's start to its last byte's ACK
                "download_bytes": f.tx.limit_bytes,
                "download_completion_s": (
                    _r(f.tx.done_us / 1e6 - f.spec.start_s) if f.tx.done_us is not None else None
                ),
                "network_latency_ms": _pct(rcv.net_latency_ms),
                "queue_delay_ms": _pct(rcv.queue_delay_ms),
                "rtt_ms": _pct(f.tx.rtt_samples_ms),
                **f.tx.stats(),
                "tail_dropped_packets": f.tail_dropped_pkts,
                "harq_lost_packets": f.harq_lost_pkts,
                "wired_lost_packets": f.wired_lost_pkts,
            })  # fmt: skip
        if f.dash is not None:  # a DASH client: ToN'22 Table VII's metrics (sim/dash.py)
            d["dash"] = f.dash.summary(eng.slot * eng.slot_us)
        flows.append(d)
    cells = [
        {"cell": c.idx, "gnb": c.gnb, "cell_id": c.cell_id, "handovers": c.handovers_out,
         "handovers_in": c.handovers_in}
        for c in eng.cells
    ]  # fmt: skip
    return {
        "scenario": sc.name,
        "seed": eng.seed,
        "sim_seconds": _r(sim_s),
        "wall_seconds": round(wall_seconds, 3),
        "slot_ms": sc.ran.slot_ms,
        "n_prb": sc.ran.n_prb,
        "scheduler": sc.ran.scheduler,
        "ues": ues,
        "flows": flows,
        "cells": cells,
        "handover_stats": handover_stats(eng),
    }


def write_outputs(eng: Engine, summary: dict[str, Any], out: Path) -> list[Path]:
    """Write the summary and, beside it, ``<stem>.timeseries.csv`` and ``<stem>.frames.csv``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    stem = out.with_suffix("")
    ts = Path(f"{stem}.timeseries.csv")
    fr = Path(f"{stem}.frames.csv")
    summary = dict(summary)
    summary["files"] = {"timeseries": ts.name, "frames": fr.name}
    out.write_text(json.dumps(summary, indent=2) + "\n")
    bins = eng._ts_bins
    with ts.open("w", newline="") as fh:
        w = csv.writer(fh)
        head = ["t_s"]
        head += [f"ue{u.idx}_thp_kbps" for u in eng.ues] + [f"ue{u.idx}_cap_kbps" for u in eng.ues]
        head += [f"flow{f.idx}_target_kbps" for f in eng.flows]
        head += [f"flow{f.idx}_abw_kbps" for f in eng.flows]
        w.writerow(head)
        for k in range(1, len(bins)):
            dt = bins[k] - bins[k - 1]
            if dt <= 0:
                continue
            row: list[Any] = [round(bins[k], 4)]
            row += [
                round((eng.ts_ue_delivered[k][i] - eng.ts_ue_delivered[k - 1][i]) * 8 / dt / 1e3, 2)
                for i in range(len(eng.ues))
            ]
            row += [
                round((eng.ts_ue_capacity[k][i] - eng.ts_ue_capacity[k - 1][i]) * 8 / dt / 1e3, 2)
                for i in range(len(eng.ues))
            ]
            row += [
                "" if math.isnan(f.ts_target[k]) else round(f.ts_target[k] / 1e3, 2)
                for f in eng.flows
            ]
            row += [
                "" if math.isnan(f.ts_abw[k]) else round(f.ts_abw[k] / 1e3, 2) for f in eng.flows
            ]
            w.writerow(row)
    with fr.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["flow", "frame", "encode_s", "size_bytes", "target_kbps", "latency_ms"])
        for f in eng.flows:
            if f.sender is None or f.receiver is None:
                continue
            lat = {
                fi: (t - f.sender.frames.enc_us[fi]) / 1000.0
                for fi, t in f.receiver.frame_decoded_at
            }
            frames = f.sender.frames
            for fi in range(len(frames.enc_us)):
                v = lat.get(fi)
                w.writerow([
                    f.idx, fi, round(frames.enc_us[fi] / 1e6, 4), frames.size[fi],
                    round(frames.target_bps[fi] / 1e3, 1), "" if v is None else round(v, 3),
                ])  # fmt: skip
    return [out, ts, fr]
