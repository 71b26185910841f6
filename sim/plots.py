"""PNG plots of a run (matplotlib, Agg backend): throughput vs capacity, latency CDF,
target/ABW vs true capacity."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from octoric.sim.engine import Engine


def write_plots(eng: Engine, stem: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out: list[Path] = []
    bins = np.asarray(eng._ts_bins)
    if bins.size < 2:
        return out
    dt = np.diff(bins)
    deliv = np.diff(np.asarray(eng.ts_ue_delivered, dtype=float), axis=0) * 8 / dt[:, None] / 1e6
    cap = np.diff(np.asarray(eng.ts_ue_capacity, dtype=float), axis=0) * 8 / dt[:, None] / 1e6
    t = bins[1:]

    fig, ax = plt.subplots(figsize=(9, 4))
    for i in range(deliv.shape[1]):
        (line,) = ax.plot(t, cap[:, i], lw=0.8, ls="--", label=f"UE{i} capacity")
        ax.plot(t, deliv[:, i], lw=1.0, color=line.get_color(), label=f"UE{i} throughput")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("Mbit/s")
    ax.set_title(f"{eng.sc.name}: throughput vs capacity")
    if deliv.shape[1] <= 4:
        ax.legend(fontsize=7)
    fig.tight_layout()
    p = Path(f"{stem}.throughput.png")
    fig.savefig(p, dpi=110)
    plt.close(fig)
    out.append(p)

    fig, ax = plt.subplots(figsize=(6, 4))
    any_lat = False
    for f in eng.flows:
        if f.receiver is None or not f.receiver.frame_latency_ms:
            continue
        lat = np.sort(np.asarray(f.receiver.frame_latency_ms))
        ax.plot(lat, np.arange(1, lat.size + 1) / lat.size, label=f"flow{f.idx} ({f.spec.scheme})")
        any_lat = True
    if any_lat:
        ax.axvline(150, color="grey", ls=":", lw=0.8)
        ax.set_xscale("log")
        ax.set_xlabel("frame latency (ms)")
        ax.set_ylabel("CDF")
        ax.legend(fontsize=7)
        fig.tight_layout()
        p = Path(f"{stem}.latency_cdf.png")
        fig.savefig(p, dpi=110)
        out.append(p)
    plt.close(fig)

    abw_flows = [f for f in eng.flows if any(not np.isnan(x) for x in f.ts_abw)]
    rate_flows = [f for f in eng.flows if f.ctrl is not None]
    if rate_flows:
        fig, ax = plt.subplots(figsize=(9, 4))
        for f in rate_flows:
            tgt = np.asarray(f.ts_target[1:]) / 1e6
            (line,) = ax.plot(t, tgt, lw=1.0, label=f"flow{f.idx} target ({f.spec.scheme})")
            if f in abw_flows:
                ax.plot(t, np.asarray(f.ts_abw[1:]) / 1e6, lw=0.8, ls="-.",
                        color=line.get_color(), label=f"flow{f.idx} ABW report")  # fmt: skip
            ax.plot(t, cap[:, f.ue], lw=0.8, ls="--", color="grey")
        ax.set_xlabel("time (s)")
        ax.set_ylabel("Mbit/s")
        ax.set_title("sender target / ABW vs true capacity (grey, dashed)")
        if len(rate_flows) <= 4:
            ax.legend(fontsize=7)
        fig.tight_layout()
        p = Path(f"{stem}.abw.png")
        fig.savefig(p, dpi=110)
        plt.close(fig)
        out.append(p)
    return out
