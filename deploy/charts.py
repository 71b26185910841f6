"""``make charts``: the Helm charts of the three xApps, checked the way a platform team would.

For every chart under ``charts/`` (occ, handover, octopus) and every values file of
``charts/ci/`` (the chart's defaults, a production-like install, other ports and namespaces):

1. ``helm lint --strict`` (the real helm, v3.16.4);
2. ``helm template`` and a strict schema check of every rendered object
   (``charts/tools/k8svalidate``: decoding into the Kubernetes API types with unknown fields
   rejected);
3. a policy scan with checkov (its Kubernetes checks; accepted findings and their reasons in
   ``charts/.checkov.yaml``);
4. the descriptor the chart renders into its ConfigMap: valid against O-RAN SC's descriptor
   schema (``../shared/reference/oran-sc/xapp-descriptor-embedded-schema.json``) with the
   xApp's controls schema merged in as the onboarder does, and its rx/tx message types equal to
   what the xApp's code declares (``RX_MESSAGES`` / ``TX_MESSAGES``, enforced by the shell).

Tools are installed on first use into ``build/tools`` (helm and k8svalidate with ``go``,
checkov with pip in its own venv). Exit status 0 when all pass; each problem is one line.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from octoric.contracts import message_types as mt

REPO = Path(__file__).resolve().parent.parent
CHARTS = REPO / "charts"
TOOLS = REPO / "build" / "tools"
HELM_VERSION = "v3.16.4"
XAPPS = ("occ", "handover", "octopus")
EMBEDDED_SCHEMA = "reference/oran-sc/xapp-descriptor-embedded-schema.json"


class ChartToolError(RuntimeError):
    """A tool is missing and cannot be installed here (the message says what to do)."""


@dataclass
class Report:
    problems: list[str] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)

    def fail(self, msg: str) -> None:
        self.problems.append(msg)


def _run(cmd: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def helm() -> str:
    found = shutil.which("helm") or (str(TOOLS / "helm") if (TOOLS / "helm").exists() else None)
    if found:
        return found
    if not shutil.which("go"):
        raise ChartToolError("helm not found and no go to install it (install Go, or helm)")
    print(f"installing helm {HELM_VERSION} into {TOOLS} (go install)", file=sys.stderr)
    TOOLS.mkdir(parents=True, exist_ok=True)
    r = _run(["go", "install", f"helm.sh/helm/v3/cmd/helm@{HELM_VERSION}"],
             env={**os.environ, "GOBIN": str(TOOLS)})  # fmt: skip
    if r.returncode != 0:
        raise ChartToolError(f"go install helm failed: {r.stderr.strip()[-500:]}")
    return str(TOOLS / "helm")


def k8svalidate() -> str:
    exe = TOOLS / "k8svalidate"
    src = CHARTS / "tools" / "k8svalidate"
    newest = max(p.stat().st_mtime for p in src.iterdir())
    if exe.exists() and exe.stat().st_mtime >= newest:
        return str(exe)
    if not shutil.which("go"):
        raise ChartToolError("go not found: it builds charts/tools/k8svalidate")
    TOOLS.mkdir(parents=True, exist_ok=True)
    r = _run(["go", "build", "-o", str(exe), "."], cwd=src)
    if r.returncode != 0:
        raise ChartToolError(f"building k8svalidate failed: {r.stderr.strip()[-800:]}")
    return str(exe)


def checkov() -> str:
    exe = TOOLS / "checkov" / "bin" / "checkov"
    if exe.exists():
        return str(exe)
    print(f"installing checkov into {exe.parent.parent} (pip)", file=sys.stderr)
    venv = TOOLS / "checkov"
    r = _run([sys.executable, "-m", "venv", str(venv)])
    if r.returncode == 0:
        r = _run([str(venv / "bin" / "pip"), "install", "-q", "checkov==3.3.30"])
    if r.returncode != 0:
        raise ChartToolError(f"installing checkov failed: {(r.stderr or r.stdout).strip()[-500:]}")
    return str(exe)


def charts() -> list[Path]:
    return sorted(p.parent for p in CHARTS.glob("*/Chart.yaml"))


def values_files(chart: Path | None = None) -> list[Path]:
    """``charts/ci/*.yaml`` for every chart, plus the chart's own ``<chart>/ci/*.yaml`` (what
    only it supports, e.g. OCC's replicas)."""
    own = sorted((chart / "ci").glob("*.yaml")) if chart is not None else []
    return sorted((CHARTS / "ci").glob("*.yaml")) + own


def _docs(rendered: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(rendered) if isinstance(d, dict)]


def check_descriptor(name: str, descriptor: dict[str, Any], shared: Path, report: Report) -> None:
    """Onboarder-valid (controls schema merged) and rx/tx equal to the code's declaration."""
    path = shared / EMBEDDED_SCHEMA
    if not path.exists():
        report.fail(f"{name}: {path} not found (../shared beside the project)")
        return
    schema = json.loads(path.read_text())
    schema["properties"]["controls"] = json.loads(
        (REPO / "xapps" / name / "schema.json").read_text()
    )
    v = jsonschema.validators.validator_for(schema)(schema)
    for e in v.iter_errors(descriptor):
        where = "/".join(str(p) for p in e.absolute_path) or "(top)"
        report.fail(f"{name}: descriptor at /{where}: {e.message}")
    mod = importlib.import_module(f"octoric.xapps.{name}.xapp")
    rx = {mt.name(t) for t in mod.RX_MESSAGES}
    tx = {mt.name(t) for t in mod.TX_MESSAGES}
    ports = descriptor.get("messaging", {}).get("ports", [])
    port: dict[str, Any] = next((p for p in ports if p.get("name") == "rmr-data"), {})
    if set(port.get("rxMessages", [])) != rx:
        report.fail(f"{name}: descriptor rxMessages {sorted(port.get('rxMessages', []))} "
                    f"!= the code's {sorted(rx)}")  # fmt: skip
    if set(port.get("txMessages", [])) != tx:
        report.fail(f"{name}: descriptor txMessages {sorted(port.get('txMessages', []))} "
                    f"!= the code's {sorted(tx)}")  # fmt: skip


def check(chart_dirs: list[Path] | None = None, shared: Path | None = None) -> Report:
    report = Report()
    shared = shared or (REPO.parent / "shared")
    helm_exe, validator, checkov_exe = helm(), k8svalidate(), checkov()
    with tempfile.TemporaryDirectory(prefix="octoric-charts-") as tmp:
        for chart in chart_dirs or charts():
            name = chart.name
            for vf in values_files(chart):
                tag = f"{name} [{vf.stem}]"
                report.checked.append(tag)
                r = _run([helm_exe, "lint", "--strict", str(chart), "-f", str(vf)])
                if r.returncode != 0:
                    lines = [
                        ln for ln in r.stdout.splitlines() if "[ERROR]" in ln or "[WARNING]" in ln
                    ]
                    report.fail(
                        f"{tag}: helm lint --strict: {'; '.join(lines) or r.stderr.strip()[-300:]}"
                    )
                    continue
                r = _run([helm_exe, "template", "t", str(chart), "-f", str(vf),
                          "--namespace", "ricxapp"])  # fmt: skip
                if r.returncode != 0:
                    report.fail(f"{tag}: helm template: {r.stderr.strip()[-400:]}")
                    continue
                out = Path(tmp) / f"{name}-{vf.stem}.yaml"
                out.write_text(r.stdout)
                v = _run([validator, str(out)])
                if v.returncode != 0:
                    report.problems += [f"{tag}: {ln}" for ln in v.stdout.splitlines() if ln]
                c = _run([checkov_exe, "-f", str(out), "--framework", "kubernetes", "--quiet",
                          "--compact", "--skip-download", "--config-file",
                          str(CHARTS / ".checkov.yaml"), "-o", "json"],
                         env={**os.environ, "BC_SKIP_MAPPING": "TRUE"})  # fmt: skip
                try:
                    res = json.loads(c.stdout) if c.stdout.strip() else {}
                except ValueError:
                    report.fail(f"{tag}: checkov gave no JSON: {c.stderr.strip()[-300:]}")
                    res = {}
                failed = (
                    (res.get("results") or {}).get("failed_checks", [])
                    if isinstance(res, dict)
                    else []
                )
                for f in failed:
                    report.fail(f"{tag}: checkov {f['check_id']} {f['check_name']} "
                                f"({f.get('resource')})")  # fmt: skip
                if c.returncode not in (0, 1) or (c.returncode == 1 and not failed):
                    report.fail(f"{tag}: checkov exited {c.returncode}: {c.stderr.strip()[-300:]}")
                cms = [d for d in _docs(r.stdout) if d.get("kind") == "ConfigMap"
                       and "config-file.json" in (d.get("data") or {})]  # fmt: skip
                if len(cms) != 1:
                    report.fail(f"{tag}: want one ConfigMap with config-file.json, got {len(cms)}")
                    continue
                check_descriptor(
                    name, json.loads(cms[0]["data"]["config-file.json"]), shared, report
                )
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m octoric.deploy.charts", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("charts", nargs="*", type=Path, help="chart folders (default: charts/*)")
    args = ap.parse_args(argv)
    try:
        report = check(args.charts or None)
    except ChartToolError as e:
        print(f"make charts: {e}", file=sys.stderr)
        return 2
    for p in report.problems:
        print(p)
    n = len(report.checked)
    if report.problems:
        print(
            f"make charts: {len(report.problems)} problem(s) in {n} chart x values renders",
            file=sys.stderr,
        )
        return 1
    print(f"make charts: {n} chart x values renders pass lint --strict, the schema check, "
          "checkov and the descriptor checks")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
