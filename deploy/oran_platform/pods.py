"""An xApp's pod as its chart makes it, for a process outside Kubernetes.

``helm template`` renders the xApp's chart (``charts/<name>``, values as given); from the objects
this takes what the pod would get: the container's arguments and environment (its ``env``, the
``-appenv`` ConfigMap it loads, ``$(POD_IP)`` and ``status.podIP`` as ``--pod-ip``), its host
name, the files it mounts (the ``-appconfig`` ConfigMap's config-file.json and schema.json, the
API token Secret) written under ``--out`` with the environment's paths pointed there, and the
variables Kubernetes gives every pod for each Service of its namespace
(``SERVICE_RICXAPP_OCC_RMR_PORT=tcp://<ip>:4560``, ...), with the pod's own address for the
Service's (ricxappframe registers with appmgr what these say).

``python -m octoric.deploy.oran_platform.pods occ --pod-ip 10.41.0.21 --out DIR [--set k=v]``
writes ``DIR/env`` (``KEY=value`` lines), ``DIR/args`` (one argument a line; the image's
entrypoint, ``python -m octoric.xapps.occ``, comes first) and prints what it wrote.
"""

from __future__ import annotations

import argparse
import json
import re
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from octoric.deploy.charts import CHARTS, helm

ENTRYPOINT = {  # charts/Dockerfile
    "occ": ["python", "-m", "octoric.xapps.occ"],
    "handover": ["python", "-m", "octoric.xapps.handover"],
    "octopus": ["python", "-m", "octoric.xapps.octopus"],
}


def render(name: str, namespace: str, sets: list[str]) -> list[dict[str, Any]]:
    cmd = [helm(), "template", name, str(CHARTS / name), "-n", namespace]
    for s in sets:
        cmd += ["--set", s]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return [d for d in yaml.safe_load_all(out) if isinstance(d, dict)]


def _service_env(svc: dict[str, Any], ip: str) -> dict[str, str]:
    """The variables kubelet sets for a Service (docker-links style), here with ``ip``."""
    key = svc["metadata"]["name"].upper().replace("-", "_")
    ports = svc["spec"]["ports"]
    env = {f"{key}_SERVICE_HOST": ip, f"{key}_SERVICE_PORT": str(ports[0]["port"])}
    env[f"{key}_PORT"] = f"tcp://{ip}:{ports[0]['port']}"
    for p in ports:
        proto = p.get("protocol", "TCP")
        base = f"{key}_PORT_{p['port']}_{proto}"
        env[base] = f"{proto.lower()}://{ip}:{p['port']}"
        env[f"{base}_PROTO"], env[f"{base}_PORT"], env[f"{base}_ADDR"] = (
            proto.lower(), str(p["port"]), ip
        )  # fmt: skip
        if p.get("name"):
            env[f"{key}_SERVICE_PORT_{p['name'].upper().replace('-', '_')}"] = str(p["port"])
    return env


def pod(name: str, pod_ip: str, out: Path, namespace: str, sets: list[str]) -> dict[str, Any]:
    out = out.absolute()
    docs = render(name, namespace, sets)
    kind = {(d["kind"], d["metadata"]["name"]): d for d in docs}
    dep = next(d for d in docs if d["kind"] == "Deployment")
    spec = dep["spec"]["template"]["spec"]
    ctr = spec["containers"][0]
    out.mkdir(parents=True, exist_ok=True)
    env: dict[str, str] = {"HOSTNAME": spec.get("hostname", name)}
    for svc in (d for d in docs if d["kind"] == "Service"):
        env.update(_service_env(svc, pod_ip))
    mounts = {m["name"]: m["mountPath"] for m in ctr.get("volumeMounts", [])}
    remap: dict[str, str] = {}  # mount path in the pod -> directory here
    for vol in spec.get("volumes", []):
        where = mounts.get(vol["name"])
        if where is None:
            continue
        here = out / vol["name"]
        here.mkdir(exist_ok=True)
        if "configMap" in vol:
            for k, v in kind[("ConfigMap", vol["configMap"]["name"])]["data"].items():
                (here / k).write_text(v)
        elif "secret" in vol:  # the chart's token Secret: helm's random value, or ours
            sec = kind.get(("Secret", vol["secret"]["secretName"]))
            data = (sec or {}).get("stringData") or {}
            for k in data or {"token": ""}:
                f = here / k
                f.write_text(secrets.token_hex(16))
                f.chmod(0o600)
        remap[where] = str(here)
    for ref in ctr.get("envFrom", []):
        cm = kind[("ConfigMap", ref["configMapRef"]["name"])]
        env.update({k: str(v) for k, v in cm.get("data", {}).items()})
    for e in ctr.get("env", []):
        if "value" in e:
            env[e["name"]] = str(e["value"])
        elif e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "status.podIP":
            env[e["name"]] = pod_ip
    for k, v in list(env.items()):
        for where, here in remap.items():
            if v.startswith(where + "/"):
                env[k] = here + v[len(where) :]
    args = [a.replace("$(POD_IP)", pod_ip) for a in ctr.get("args", [])]
    argv = [*ENTRYPOINT[name], *args]
    (out / "env").write_text("".join(f"{k}={v}\n" for k, v in sorted(env.items())))
    (out / "args").write_text("".join(f"{a}\n" for a in argv))
    return {"env": env, "argv": argv, "files": remap}


def platform_pod(rendered: Path, pod_ip: str, out: Path, extra_env: list[str]) -> dict[str, Any]:
    """The same for a platform component from ``helm template`` of its ric-dep chart: its
    ConfigMap files where the container mounts them (``items`` and ``subPath`` honoured), its
    environment (``envFrom`` ConfigMaps of the chart, then ``extra_env``: those of other charts,
    such as dbaas's), its command and arguments; every mounted path, in the environment, the
    arguments and the files' contents, pointed at its copy under ``out``."""
    out = out.absolute()
    text = rendered.read_text().replace("\t", "  ")  # ric-dep's submgr ConfigMap has tabs
    docs = [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]
    cms = {d["metadata"]["name"]: d.get("data") or {} for d in docs if d["kind"] == "ConfigMap"}
    dep = next(d for d in docs if d["kind"] == "Deployment")
    spec = dep["spec"]["template"]["spec"]
    ctr = spec["containers"][0]
    vols = {v["name"]: v for v in spec.get("volumes", [])}
    files: dict[str, str] = {}  # path in the pod -> content
    for m in ctr.get("volumeMounts", []):
        cm = vols.get(m["name"], {}).get("configMap")
        if cm is None or cm["name"] not in cms:
            continue
        data = cms[cm["name"]]
        if m.get("subPath"):
            files[m["mountPath"]] = data[m["subPath"]]
            continue
        for it in cm.get("items") or [{"key": k, "path": k} for k in data]:
            files[f"{m['mountPath'].rstrip('/')}/{it['path']}"] = data[it["key"]]
    env: dict[str, str] = {}
    for ref in ctr.get("envFrom", []):
        env.update({k: str(v) for k, v in cms.get(ref["configMapRef"]["name"], {}).items()})
    for kv in extra_env:
        k, _, v = kv.partition("=")
        env[k] = v
    for e in ctr.get("env", []):
        if "value" in e:
            env[e["name"]] = str(e["value"])
        elif e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "status.podIP":
            env[e["name"]] = pod_ip
    root = out / "root"

    def here(v: str) -> str:  # absolute paths of the pod's files into ``root``
        for where in sorted(files, key=len, reverse=True):
            v = v.replace(where, str(root) + where)
        for where in ("/cfg/", "/db/", "/etc/config/", "/opt/ric/config/"):
            v = re.sub(rf"(?<![\w/.]){re.escape(where)}", str(root) + where, v)
        return v

    for path, content in files.items():
        f = root / path.lstrip("/")
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(here(content))
    (root / "db").mkdir(parents=True, exist_ok=True)
    env = {k: here(v) for k, v in env.items()}
    argv = [here(a) for a in [*(ctr.get("command") or []), *(ctr.get("args") or [])]]
    (out / "env").write_text("".join(f"{k}={v}\n" for k, v in sorted(env.items())))
    (out / "args").write_text("".join(f"{a}\n" for a in argv))
    return {"env": env, "argv": argv, "files": sorted(files)}


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["platform"]:
        pp = argparse.ArgumentParser(prog="python -m octoric.deploy.oran_platform.pods platform")
        pp.add_argument("rendered", type=Path, help="helm template output of a ric-dep chart")
        pp.add_argument("--pod-ip", required=True)
        pp.add_argument("--out", type=Path, required=True)
        pp.add_argument("--env", action="append", default=[], help="KEY=VALUE from other charts")
        a = pp.parse_args(argv[1:])
        json.dump(platform_pod(a.rendered, a.pod_ip, a.out, a.env), sys.stdout, indent=1)
        print()
        return 0
    ap = argparse.ArgumentParser(prog="python -m octoric.deploy.oran_platform.pods")
    ap.add_argument("name", choices=sorted(ENTRYPOINT))
    ap.add_argument("--pod-ip", required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--namespace", default="ricxapp")
    ap.add_argument("--set", action="append", default=[], help="helm --set key=value")
    args = ap.parse_args(argv)
    r = pod(args.name, args.pod_ip, args.out, args.namespace, args.set)
    json.dump(r, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
