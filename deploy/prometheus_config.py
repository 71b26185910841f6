"""``<run_dir>/prometheus.yml``: a Prometheus scrape configuration for one ``octoric run``,
listing the run's actual ``/metrics`` endpoints (the RIC's four HTTP services, each xApp's
HTTP port, the dashboard), each labelled ``component``.

Written by the dashboard once it listens (its port may be chosen at start). Use it as is
(``prometheus --config.file=<run_dir>/prometheus.yml``) or copy its ``scrape_configs`` into
your own Prometheus; ``deploy/grafana/octoric.json`` is the dashboard for what it scrapes
(docs/ric.md, "Prometheus and Grafana").
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from octoric.config import RicConfig

FILE = "prometheus.yml"
JOB = "octoric"
SCRAPE_INTERVAL_S = 5  # the xApps' KPIs change every report; 5 s keeps a day's data small
_ANY = ("0.0.0.0", "::", "")


@dataclass(frozen=True)
class Target:
    component: str
    address: str  # host:port


def _host(bind: str) -> str:
    return "127.0.0.1" if bind in _ANY else bind


def targets(ric: RicConfig, xapp_urls: dict[str, str], dashboard: str | None) -> list[Target]:
    """The run's /metrics endpoints: the RIC's from its config, each xApp's from its status
    URL (the port it was given), the dashboard's ``host:port`` when it runs."""
    h = _host(ric.bind_address)
    out = [
        Target("appmgr", f"{h}:{ric.appmgr_port}"),
        Target("e2term", f"{h}:{ric.e2term_http_port}"),
        Target("submgr", f"{h}:{ric.submgr_rest_port}"),
        Target("a1", f"{h}:{ric.a1_rest_port}"),
    ]
    for name, url in sorted(xapp_urls.items()):
        u = urllib.parse.urlsplit(url)
        out.append(Target(f"xapp-{name}", f"{u.hostname}:{u.port}"))
    if dashboard:
        out.append(Target("dashboard", dashboard))
    return out


def config(tgts: list[Target], interval_s: float = SCRAPE_INTERVAL_S) -> dict[str, Any]:
    every = f"{interval_s:g}s"
    return {
        "global": {"scrape_interval": every, "evaluation_interval": every},
        "scrape_configs": [{
            "job_name": JOB,
            "metrics_path": "/metrics",
            "static_configs": [
                {"targets": [t.address], "labels": {"component": t.component}} for t in tgts
            ],
        }],
    }  # fmt: skip


def write(run_dir: Path, tgts: list[Target]) -> Path:
    path = run_dir / FILE
    head = (
        f"# Prometheus scrape configuration for the octoric run in {run_dir}\n"
        f"# prometheus --config.file={path}  (docs/ric.md, Prometheus and Grafana)\n"
    )
    path.write_text(head + yaml.safe_dump(config(tgts), sort_keys=False))
    return path
