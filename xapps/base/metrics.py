"""Prometheus metrics of an xApp, read from its counters at scrape time (nothing to update
in the hot path beyond plain integer counters).

``StatsCollector(prefix, source)``: ``source()`` returns name -> value; an int/float becomes a
gauge ``<prefix>_<name>``, a ``Counter`` a counter family with one label (``labels[name]`` or
"kind"), a ``Quantiles`` a summary (quantiles 0.5/0.9/0.99 plus _count and _sum).
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
    SummaryMetricFamily,
)
from prometheus_client.registry import Collector


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
    ) -> None:
        self.prefix, self.source = prefix, source
        self.labels = labels or {}
        self.help = help_text or {}

    def collect(self) -> Iterator[Metric]:
        for name, value in self.source().items():
            full = f"{self.prefix}_{name}"
            doc = self.help.get(name, name.replace("_", " "))
            if isinstance(value, Counter):
                fam = CounterMetricFamily(full, doc, labels=[self.labels.get(name, "kind")])
                for k, v in sorted(value.items()):
                    fam.add_metric([str(k)], float(v))
                yield fam
            elif isinstance(value, Quantiles):
                qs = [(str(q), value.quantile(q)) for q in (0.5, 0.9, 0.99)]
                s = SummaryMetricFamily(full, doc)
                s.add_metric([], count_value=value.count, sum_value=value.total)
                yield s
                g = GaugeMetricFamily(
                    f"{full}_quantile", f"{doc} (recent quantiles)", labels=["quantile"]
                )
                for q, qv in qs:
                    if qv is not None:
                        g.add_metric([q], qv)
                yield g
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                if name.endswith("_total"):  # a count that only grows: a counter
                    c = CounterMetricFamily(full, doc)
                    c.add_metric([], float(value))
                    yield c
                else:
                    g = GaugeMetricFamily(full, doc)
                    g.add_metric([], float(value))
                    yield g
