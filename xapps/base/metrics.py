"""Prometheus metrics of an xApp, read from its counters at scrape time (nothing to update
in the hot path beyond plain integer counters and a histogram's bucket).

``StatsCollector(prefix, source)``: ``source()`` returns name -> value; an int/float becomes a
gauge ``<prefix>_<name>`` (a counter when the name ends in ``_total``), a ``Counter`` a counter
family with one label (``labels[name]`` or "kind"; a gauge family for the names in
``levels``), a ``LatencyHistogram`` a histogram (``_bucket``, ``_count``, ``_sum``), a plain
``Quantiles`` a summary (quantiles 0.5/0.9/0.99, ``_count``, ``_sum``), and a ``Series`` a
family with several labels (per-UE and per-cell KPIs).
"""

from __future__ import annotations

import bisect
import threading
from collections import Counter, deque
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

# Upper bounds (seconds) for the latencies of a control loop with 1 ms and 2 ms targets (the
# OCC loop, handover detection): dense around both, so histogram_quantile(0.99, ...) tells
# whether the target holds; coarse beyond.
LOOP_BUCKETS_S: tuple[float, ...] = (
    0.0001, 0.00025, 0.0005, 0.00075, 0.001, 0.00125, 0.0015, 0.00175, 0.002, 0.0025, 0.003,
    0.005, 0.01, 0.025, 0.1, 1.0,
)  # fmt: skip


class Quantiles:
    """The latest ``size`` observations (e.g. processing latency, seconds)."""

    def __init__(self, size: int = 10_000) -> None:
        self._d: deque[float] = deque(maxlen=size)
        self.count = 0
        self.total = 0.0
        self._lock = threading.Lock()

    def observe(self, v: float) -> None:
        with self._lock:
            self._d.append(v)
            self.count += 1
            self.total += v

    def quantile(self, q: float) -> float | None:
        with self._lock:
            data = sorted(self._d)
        if not data:
            return None
        return data[min(len(data) - 1, int(q * len(data)))]


class LatencyHistogram(Quantiles):
    """``Quantiles`` (the status page's recent p50/p99) plus cumulative counts per bucket
    since start (Prometheus' histogram: quantiles over any window in PromQL)."""

    def __init__(self, buckets: tuple[float, ...] = LOOP_BUCKETS_S, size: int = 10_000) -> None:
        super().__init__(size)
        self.bounds = tuple(sorted(buckets))
        self._counts = [0] * (len(self.bounds) + 1)  # the last: above every bound

    def observe(self, v: float) -> None:
        i = bisect.bisect_left(self.bounds, v)  # v <= bound: Prometheus' "le"
        with self._lock:
            self._d.append(v)
            self.count += 1
            self.total += v
            self._counts[i] += 1

    def buckets(self) -> tuple[list[tuple[str, float]], float]:
        """Cumulative (le, count) pairs ending with +Inf, and the sum."""
        with self._lock:
            counts, total = list(self._counts), self.total
        out, acc = [], 0
        for bound, n in zip((*self.bounds, float("inf")), counts, strict=True):
            acc += n
            out.append(("+Inf" if bound == float("inf") else repr(bound), float(acc)))
        return out, total


@dataclass
class Series:
    """One metric family with several labels, e.g. a KPI per (meid, ue)."""

    kind: Literal["gauge", "counter"]
    labels: tuple[str, ...]
    samples: list[tuple[tuple[str, ...], float]] = field(default_factory=list)


class RateMeter:
    """Events per second over the last ``window_s`` (e.g. UE samples/s)."""

    def __init__(self, window_s: float = 10.0) -> None:
        self.window_s = window_s
        self._d: deque[tuple[float, int]] = deque()
        self._lock = threading.Lock()

    def add(self, now: float, n: int) -> None:
        with self._lock:
            self._d.append((now, n))
            while self._d and self._d[0][0] < now - self.window_s:
                self._d.popleft()

    def rate(self, now: float) -> float:
        with self._lock:
            while self._d and self._d[0][0] < now - self.window_s:
                self._d.popleft()
            if not self._d:
                return 0.0
            span = max(now - self._d[0][0], 1e-3)
            return sum(n for _, n in self._d) / max(span, min(self.window_s, 1.0))


class StatsCollector(Collector):
    def __init__(
        self,
        prefix: str,
        source: Callable[[], dict[str, Any]],
        labels: dict[str, str] | None = None,
        help_text: dict[str, str] | None = None,
        levels: Collection[str] = (),
    ) -> None:
        """``levels``: names whose ``Counter`` holds levels (e.g. subscriptions by state), not
        counts: exported as a gauge family."""
        self.prefix, self.source = prefix, source
        self.labels = labels or {}
        self.help = help_text or {}
        self.levels = frozenset(levels)

    def collect(self) -> Iterator[Metric]:
        for name, value in self.source().items():
            full = f"{self.prefix}_{name}"
            doc = self.help.get(name, name.replace("_", " "))
            if isinstance(value, Series):
                fam: Metric
                if value.kind == "counter":
                    fam = CounterMetricFamily(full, doc, labels=list(value.labels))
                else:
                    fam = GaugeMetricFamily(full, doc, labels=list(value.labels))
                for lv, v in value.samples:
                    fam.add_metric(list(lv), v)
                yield fam
            elif isinstance(value, Counter):
                label = [self.labels.get(name, "kind")]
                if name in self.levels:
                    fam = GaugeMetricFamily(full, doc, labels=label)
                else:
                    fam = CounterMetricFamily(full, doc, labels=label)
                for k, v in sorted(value.items()):
                    fam.add_metric([str(k)], float(v))
                yield fam
            elif isinstance(value, LatencyHistogram):
                buckets, total = value.buckets()
                h = HistogramMetricFamily(full, doc)
                h.add_metric([], buckets, total)
                yield h
            elif isinstance(value, Quantiles):
                yield _summary(full, doc, value)
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                if name.endswith("_total"):  # a count that only grows: a counter
                    c = CounterMetricFamily(full, doc)
                    c.add_metric([], float(value))
                    yield c
                else:
                    g = GaugeMetricFamily(full, doc)
                    g.add_metric([], float(value))
                    yield g


def _summary(name: str, doc: str, q: Quantiles) -> Metric:
    """A summary with its recent quantiles (prometheus_client's SummaryMetricFamily has no
    quantile samples)."""
    m = Metric(name, doc, "summary")
    for p in (0.5, 0.9, 0.99):
        v = q.quantile(p)
        if v is not None:
            m.add_sample(name, {"quantile": str(p)}, v)
    m.add_sample(f"{name}_count", {}, float(q.count))
    m.add_sample(f"{name}_sum", {}, q.total)
    return m
