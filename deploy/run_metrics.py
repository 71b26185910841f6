"""The run dashboard's ``/metrics``: what the simulator measured (the ground truth the xApps'
KPIs are compared with in Grafana) and the dashboard's own request counters.

Read from the newest row of ``sim-series.jsonl`` at scrape time (per UE the delivered
throughput and the simulator's capacity line, per video flow its sender's target rate and the
packets dropped at the gNB) and from each component's ``failed()``. Per-UE and per-flow series
are bounded like the xApps' (``MAX_SERIES``: lowest ids first)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

MAX_SERIES = 256  # UEs, and flows, with series (as the xApps' per-UE cap)


@dataclass
class RunView:
    """What the collector reads, each a callable so a scrape sees the newest."""

    latest_row: Callable[[], dict[str, Any] | None]  # the newest sim-series.jsonl row
    components: Callable[[], list[tuple[str, bool]]]  # (name, failed)
    requests: Callable[[], tuple[int, int, int]]  # (requests, bad requests, Host refused)


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


class RunCollector(Collector):
    def __init__(self, view: RunView) -> None:
        self.view = view

    def collect(self) -> Iterator[Metric]:
        req, bad, refused = self.view.requests()
        for name, value, doc in (
            ("requests", req, "HTTP requests the run dashboard answered"),
            ("bad_requests", bad, "dashboard requests refused as malformed (4xx)"),
            ("host_refused", refused, "dashboard requests refused for a foreign Host header"),
        ):
            c = CounterMetricFamily(f"octoric_dashboard_{name}", doc)
            c.add_metric([], float(value))
            yield c
        failed = GaugeMetricFamily(
            "octoric_run_component_failed",
            "1 while a component of the run (ric, sim, an xApp, ...) has failed, else 0",
            labels=["component"],
        )
        for name, is_failed in self.view.components():
            failed.add_metric([name], 1.0 if is_failed else 0.0)
        yield failed
        yield from self._sim(self.view.latest_row() or {})

    def _sim(self, row: dict[str, Any]) -> Iterator[Metric]:
        t = _num(row.get("sim_seconds"))
        if t is not None:
            g = GaugeMetricFamily("octoric_sim_time_seconds", "simulated time of the run now")
            g.add_metric([], t)
            yield g
        ho = row.get("handovers")
        if isinstance(ho, int):
            c = CounterMetricFamily(
                "octoric_sim_handovers", "handovers the simulator made (the ground truth)"
            )
            c.add_metric([], float(ho))
            yield c
        ues = [u for u in row.get("ue_rates") or [] if isinstance(u, dict) and "ue" in u]
        ues = sorted(ues, key=lambda u: str(u["ue"]))[:MAX_SERIES]
        for key, name, doc in (
            ("throughput_kbps", "ue_throughput_bits_per_second",
             "the UE's delivered downlink throughput over the last second, as the simulator "
             "measured it, bit/s"),
            ("capacity_kbps", "ue_capacity_bits_per_second",
             "the simulator's capacity line for the UE over the last second (docs/sim.md), bit/s"),
        ):  # fmt: skip
            g = GaugeMetricFamily(f"octoric_sim_{name}", doc, labels=["ue"])
            for u in ues:
                v = _num(u.get(key))
                if v is not None:
                    g.add_metric([str(u["ue"])], v * 1e3)
            yield g
        flows = [f for f in row.get("flow_rates") or [] if isinstance(f, dict) and "flow" in f]
        flows = sorted(flows, key=lambda f: str(f["flow"]))[:MAX_SERIES]
        labels = ["flow", "ue", "scheme"]
        target = GaugeMetricFamily(
            "octoric_sim_flow_target_bits_per_second",
            "a video flow's sender target rate now (OCC-fed or GCC), bit/s",
            labels=labels,
        )
        dropped = CounterMetricFamily(
            "octoric_sim_flow_dropped_packets",
            "a video flow's packets dropped at the gNB by Octopus's dropper",
            labels=labels,
        )
        for f in flows:
            lv = [str(f["flow"]), str(f.get("ue")), str(f.get("scheme"))]
            if (v := _num(f.get("target_kbps"))) is not None:
                target.add_metric(lv, v * 1e3)
            if (v := _num(f.get("dropped_pkts"))) is not None:
                dropped.add_metric(lv, v)
        yield target
        yield dropped
