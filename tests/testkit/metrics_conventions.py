"""Prometheus' conventions, checked over one /metrics text (issues #16 and #42): counts that only
grow are counters (``_total``, and only counters end so), levels are gauges, latencies are in
seconds and are histograms or summaries, no unit or percentile but base units in names, help
texts that explain in a sentence, per-UE and per-cell series labelled by node."""

from __future__ import annotations

import re

from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

BAD_NAME = re.compile(r"_(us|ms|usec|msec|percent|kbps|mbps)(_|$)|_p\d\d|percentile")
# levels that were once exported as counters (issue #42): gauges, whatever their prefix
# names kept as they were for their readers: e2term's recent quantiles as a gauge family
# (ric/bench.py and experiments/bench.py read it), beside its summary
KEPT = frozenset({"octoric_e2term_forward_latency_seconds_quantile"})
KPI = re.compile(r"_ue_(prb|mcs|throughput|buffer|abw)")
LEVELS = re.compile(r"_(subscriptions|policies|flows|ues|clients)$")


def families(text: str) -> dict[str, Metric]:
    return {
        f.name: f
        for f in text_string_to_metric_families(text)
        if not f.name.startswith(("python_", "process_"))
    }


def check(text: str, where: str) -> int:
    """Assert the conventions over every family of ``text`` (every breach named at once); the
    number of families."""
    fams = families(text)
    bad: list[str] = []
    for name, fam in fams.items():
        bad += [f"{where}: {name}: {why}" for why in _breaches(name, fam)]
    assert not bad, "\n".join(bad)
    return len(fams)


def _breaches(name: str, fam: Metric) -> list[str]:
    out = []
    if BAD_NAME.search(name):
        out.append("a unit or percentile in the name")
    if fam.type not in ("counter", "gauge", "summary", "histogram"):
        out.append(f"untyped ({fam.type})")
    doc = fam.documentation.strip()
    if len(doc.split()) < 3 or doc == name.split("_", 2)[-1].replace("_", " "):
        out.append(f"help {doc!r} explains nothing")
    if fam.type != "counter" and (
        name.endswith("_total") or any(s.name.endswith("_total") for s in fam.samples)
    ):
        out.append(f"a {fam.type} named like a counter (_total)")
    if LEVELS.search(name) and fam.type != "gauge":
        out.append(f"a level typed {fam.type}")
    if ("latency" in name or "seconds" in name) and "seconds" not in name:
        out.append("a latency not in seconds")
    if "latency" in name and fam.type not in ("histogram", "summary") and name not in KEPT:
        out.append(f"a latency typed {fam.type}")
    labels = set(fam.samples[0].labels) if fam.samples else set()
    # an xApp's UE is seen through a node (the simulator's truth, octoric_sim_*, has no node)
    if (
        KPI.search(name)
        and not name.startswith("octoric_sim_")
        and fam.samples
        and not {"meid", "ue"} <= labels
    ):
        out.append("per-UE KPI without meid and ue labels")
    if "ue" in labels and "meid" not in labels and not name.startswith("octoric_sim_"):
        out.append("a ue label without its node (meid)")
    if "_cell_" in name and fam.samples and "meid" not in labels:
        out.append("per-cell series without a meid label")
    return out


def buckets(fam: Metric) -> dict[float, float]:
    """A histogram family's cumulative counts by upper bound."""
    return {float(s.labels["le"]): s.value for s in fam.samples if s.name.endswith("_bucket")}
