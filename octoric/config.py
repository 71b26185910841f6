"""The typed configuration of ``octoric run``: a YAML file plus ``--set key=value`` overrides.

Every field has a default, so no file is needed. Unknown keys and wrong types are errors that
name the file and line (or the override), never silently ignored.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from octoric import typed
from octoric.contracts import ports
from octoric.errors import ConfigError


@dataclass
class RedisConfig:
    host: str = "127.0.0.1"
    port: int = ports.REDIS  # 0: the embedded server picks a free port
    external: bool = False  # True: use a Redis already listening at host:port
    # the private server: ACL users with per-run passwords (0600 files in the run folder), the
    # default user off (docs/ric.md "Security"); false: no password (anyone on the host may
    # read and write the RIC's state)
    auth: bool = True
    # an external Redis that wants a password: its ACL user (empty: ``default``, as with
    # ``requirepass``) and a file whose first line is the password (never the password itself:
    # the config goes into report.json)
    username: str = ""
    password_file: str = ""


@dataclass
class LogConfig:
    format: Literal["console", "json", "auto"] = "auto"
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"


@dataclass
class DashboardConfig:
    """The live web dashboard of ``octoric run`` (read-only; loopback unless opened)."""

    enabled: bool = True
    host: str = ports.LOOPBACK
    port: int = ports.DASHBOARD  # 0: a free port (printed at start)


@dataclass
class RicConfig:
    """Embedded RIC ports (loopback), as in ARCHITECTURE.md."""

    # where every listener of the embedded RIC and its xApps binds (E2, RMR data and route
    # ports, REST): loopback unless you open it, e.g. --set ric.bind_address=0.0.0.0
    bind_address: str = ports.LOOPBACK
    e2_port: int = ports.E2
    e2_transport: Literal["auto", "sctp", "tcp"] = "auto"
    e2term_rmr_port: int = ports.E2TERM_RMR
    submgr_rmr_port: int = ports.SUBMGR_RMR
    submgr_rest_port: int = ports.SUBMGR_REST
    a1_rest_port: int = ports.A1_REST
    a1_rmr_port: int = ports.A1_RMR
    appmgr_port: int = ports.APPMGR_REST
    rtmgr_rest_port: int = ports.RTMGR_REST
    rtmgr_rmr_port: int = ports.RTMGR_RMR
    e2term_http_port: int = ports.E2TERM_HTTP  # e2term's /metrics
    # E2 admission (docs/ric.md "E2 admission"): seconds to complete E2 Setup, seconds for a
    # started PDU to complete, connections allowed to wait for setup, and how long a connected
    # node must be silent before a newcomer with its ID may take over
    e2_setup_timeout_s: float = 10.0
    e2_read_timeout_s: float = 10.0
    e2_max_half_open: int = 64
    e2_idle_takeover_s: float = 15.0
    # Host names every HTTP listener of the run (RIC, xApps, dashboard) answers beyond
    # localhost/127.0.0.1/[::1]: "name" (any port), "name:port", or "*" for any; empty: only
    # loopback names, or any Host on a listener bound to a non-loopback address (docs/running.md)
    allowed_hosts: list[str] = field(default_factory=list)


@dataclass
class SimConfig:
    # the default, ``demo``, shows all three xApps at work (docs/running.md): OCC-fed and GCC
    # flows side by side, UEs handed over between two gNBs, a flow for the Octopus dropper
    scenario: str = "demo"
    # None: the scenario's own layout; a number re-lays it out (its UE kinds repeated in order,
    # UE i in cell i mod cells; every cell on one gNB unless cells_per_gnb says otherwise)
    cells: int | None = None
    cells_per_gnb: int | None = None
    ues: int | None = None
    seed: int = 1
    traffic: Literal["video", "backlogged"] = "video"
    # every video flow's rate control; auto: a scenario that names OCC-fed flows (scheme occ,
    # as the demo does) keeps its schemes, any other has all its video flows OCC-fed while the
    # OCC xApp runs
    scheme: str = "auto"
    # video layering of every flow (scenario: each flow's own; none keeps OCC's single-layer
    # flows) and the Octopus header on every packet (harmless while no policy switches a
    # dropper on)
    svc: Literal["scenario", "none", "temporal", "spatial"] = "scenario"
    octopus_header: bool = True
    # the first N UEs carry real applications' packets through network namespaces (root;
    # docs/emulated-cell.md): `--set sim.real_ues=1`
    real_ues: int = 0


@dataclass
class A1PolicyConfig:
    """An A1 policy instance the run creates once its a1 is up, as an operator would
    (``A1-P PUT /A1-P/v2/policytypes/{type}/policies/{id}``). ``type``: the policy type's
    name (``octopus-drop-policy``, docs/octopus.md) or its id as a number."""

    id: str = "octopus-demo"
    type: str = "octopus-drop-policy"
    body: dict[str, Any] = field(default_factory=dict)


def _demo_policies() -> list[A1PolicyConfig]:
    # the demo scenario's Octopus flow (sim.scenario.DEMO_OCTOPUS_UE): the dropper from the start
    return [A1PolicyConfig(body={"scope": {"ues": [1006]}, "enable": True})]


@dataclass
class XappsConfig:
    enabled: list[str] = field(default_factory=lambda: ["occ", "handover", "octopus"])
    # per xApp, ``controls`` that override its descriptor's, e.g.
    # --set xapps.controls.handover.detection=kpm (the xApp validates them when it starts)
    controls: dict[str, dict[str, Any]] = field(default_factory=dict)
    # processes per xApp, e.g. --set xapps.replicas.occ=3: the OCC replicas split the E2
    # nodes between them (xapps/occ/shards.py); 1 (unset) runs one, unsharded
    replicas: dict[str, int] = field(default_factory=dict)


@dataclass
class RunConfig:
    duration: float | None = None  # seconds; None runs until Ctrl-C
    status_interval: float = 1.0
    report_dir: str = "build/run"
    redis: RedisConfig = field(default_factory=RedisConfig)
    log: LogConfig = field(default_factory=LogConfig)
    ric: RicConfig = field(default_factory=RicConfig)
    sim: SimConfig = field(default_factory=SimConfig)
    xapps: XappsConfig = field(default_factory=XappsConfig)
    # created after the xApps start (a policy of a type whose xApp is not enabled is skipped);
    # [] for none: --set a1_policies=[]
    a1_policies: list[A1PolicyConfig] = field(default_factory=_demo_policies)
    dashboard: DashboardConfig = field(default_factory=DashboardConfig)
    # restart the xApps and e2term from a process already past its imports (octoric.spare):
    # ~1 s less per restart, ~170 MB per xApp and ~90 MB for e2term
    warm_spares: bool = True

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def parse_override(text: str) -> tuple[list[str], Any]:
    """``ric.e2_port=36422`` -> (['ric', 'e2_port'], 36422). Values are YAML scalars."""
    if "=" not in text:
        raise ConfigError("an override must look like key.path=value", f"--set {text}")
    key, raw = text.split("=", 1)
    if not key or any(not part for part in key.split(".")):
        raise ConfigError("empty key in override", f"--set {text}")
    try:
        value = yaml.safe_load(raw) if raw != "" else ""
    except yaml.YAMLError as e:
        raise ConfigError(f"value is not valid YAML: {e}", f"--set {text}") from e
    return key.split("."), value


def load(path: str | Path | None = None, overrides: list[str] | None = None) -> RunConfig:
    """Defaults, then the YAML file (if any), then ``key=value`` overrides."""
    data: dict[str, Any] = {}
    lines: dict[str, int] = {}
    source = ""
    if path is not None:
        source = str(path)
        data, lines = typed.read_yaml_mapping(path, ConfigError, "config file")
    for ov in overrides or []:
        keys, value = parse_override(ov)
        cur = data
        for k in keys[:-1]:
            nxt = cur.setdefault(k, {})
            if not isinstance(nxt, dict):
                raise ConfigError(f"{k} is not a section", f"--set {ov}")
            cur = nxt
        cur[keys[-1]] = value
    try:
        return typed.build(RunConfig, data, "", ConfigError)
    except ConfigError as e:
        # point at the file line when the failing key itself came from the file (an override
        # inside a section the file also sets must not be blamed on the file)
        line = lines.get(e.where.split("[")[0]) if e.where else None
        if line is not None:
            raise ConfigError(str(e).split(": ", 1)[1], f"{source}:{line} ({e.where})") from None
        raise


def dump(cfg: RunConfig) -> str:
    return yaml.safe_dump(cfg.to_dict(), sort_keys=False)
