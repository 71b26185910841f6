"""Scenarios: what to simulate, as dataclasses; loaded from YAML or built in by name.

YAML errors name the file and line of the offending key (see docs/sim.md for the format).
"""

from __future__ import annotations

import copy
import dataclasses
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from octoric import typed
from octoric.sim.dash import DashConfig, config_errors
from octoric.sim.errors import ScenarioError
from octoric.sim.mobility import PROFILES, MobilityConfig
from octoric.sim.video import VideoConfig, WiredPathConfig

ChannelKind = Literal["constant", "pulse", "fading", "mahimahi", "cqi", "route", "steps"]


@dataclass
class ChannelSpec:
    kind: ChannelKind = "fading"
    rate_mbps: float | None = None  # constant: whole-cell rate (else ``mcs``)
    mcs: int | None = None
    high_mbps: float = 3.0  # pulse (and steps: a rate drawn in [low, high] every switch_s)
    low_mbps: float = 0.5
    switch_s: float = 40.0
    mean_snr_db: float = 20.0  # fading
    std_db: float = 4.0
    corr_time_s: float = 1.0
    step_ms: float = 1.0
    path: str | None = None  # mahimahi / cqi (a CSV, or archive.zip::member.csv)
    offset: int = 0  # mahimahi: ms, cqi: s into the trace
    csi_period_ms: int = 20  # mahimahi: reported MCS = capacity of the previous period (0: raw)
    route: str = "good"  # route: an OCC over-the-air route (sim/channels/route.py)
    # mahimahi: what the gNB reports. "capacity": the previous period's capacity as the UE's
    # bits per PRB on every PRB (0 in a period without deliveries); "gnb": an MCS and a PRB
    # share per period carrying its bytes, others' PRBs, noValue without a grant
    # (sim/channels/gnb_view.py; one UE in an FDD cell)
    report: Literal["capacity", "gnb"] = "capacity"


@dataclass
class FlowSpec:
    # video: frames from the encoder, paced at the rate scheme's target; bulk: a TCP-like
    # transfer on the packet-level transport with a window scheme (cubic, bbr, ...);
    # backlogged: the gNB queue always holds data (no sender); none: no traffic; real: a real
    # application's packets through the live real-UE path (`sim run --live`, root; sim/realue);
    # dash: a DASH VoD client fetching segments over the transport (``dash``, sim/dash.py)
    traffic: Literal["video", "bulk", "backlogged", "none", "real", "dash"] = "video"
    scheme: str = "gcc"  # a rate scheme for video, a window scheme for bulk and dash
    params: dict[str, Any] = field(default_factory=dict)  # the scheme's options
    # bulk: a file download of this many MB (10^6 bytes; the summary's download_completion_s),
    # None: a transfer for the whole run
    size_mb: float | None = None
    start_mbps: float = 0.3
    min_mbps: float = 0.05
    max_mbps: float = 100.0
    rate_mbps: float | None = None  # fixed scheme's rate (default: start_mbps)
    start_s: float = 0.0
    stop_s: float | None = None  # the sender stops generating frames here
    feedback_ms: float = 50.0  # receiver feedback interval
    uplink_ms: float = 5.0  # UE -> gNB air delay of feedback (added to the wired RTT/2)
    # the UE's feedback waits while it is detached (handover interruption, link failure)
    # and leaves when it is attached again: the delayed ACKs of ToN'22 §II-B
    uplink_held_in_handover: bool = True
    video: VideoConfig = field(default_factory=VideoConfig)
    dash: DashConfig = field(default_factory=DashConfig)  # traffic: dash
    path: WiredPathConfig = field(default_factory=WiredPathConfig)


@dataclass
class MobilitySpec:
    """A profile (static, walking, driving, hsr) plus any of its fields overridden."""

    profile: str = "static"
    speed_kmh: float | None = None
    cell_spacing_m: float | None = None
    ho_interval_s: float | None = None
    pingpong_fraction: float | None = None
    ho_duration_ms: float | None = None
    ho_duration_cv: float | None = None
    failure_prob: float | None = None
    rlf_outage_ms: float | None = None
    model: Literal["stats", "a3"] | None = None
    a3_offset_db: float | None = None
    a3_ttt_ms: float | None = None
    meas_period_ms: float | None = None
    shadow_std_db: float | None = None
    shadow_decorr_m: float | None = None
    meas_noise_db: float | None = None

    def resolve(self, where: str = "mobility") -> MobilityConfig:
        if self.profile not in PROFILES:
            raise ScenarioError(
                f"unknown mobility profile {self.profile!r} (known: {', '.join(PROFILES)})", where
            )
        cfg = copy.deepcopy(PROFILES[self.profile])
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name != "profile" and v is not None:
                setattr(cfg, f.name, v)
        return cfg


@dataclass
class UeSpec:
    count: int = 1
    cell: int = 0
    channel: ChannelSpec = field(default_factory=ChannelSpec)
    flows: list[FlowSpec] = field(default_factory=lambda: [FlowSpec()])
    mobility: MobilitySpec = field(default_factory=MobilitySpec)
    dropper: bool = False  # Octopus dropper on this UE's DL queue
    pdrop: bool = False  # or PDrop (SEC'23 §7.2's baseline) at queue_limit_bytes
    # Carry Octopus headers as bytes and parse them at the gNB (exercises the codec on the
    # data path, as the real gNB does; slower). Off: the parsed header rides with the packet.
    wire_headers: bool = False
    queue_limit_bytes: int = 4_000_000
    # Or a buffer in time: this many ms at the UE's capacity, re-sized every second (the
    # channel's block), as a tc/netem buffer of "300 ms" re-set with each new link rate is.
    queue_limit_ms: float | None = None


@dataclass
class RanSpec:
    cells: int = 1
    cells_per_gnb: int = 1
    n_prb: int = 106
    slot_ms: float = 1.0
    tdd: str = "D"
    special_dl: float = 0.6
    mcs_table: Literal["qam64", "qam256"] = "qam256"
    layers: int = 1
    scheduler: Literal["rr", "pf"] = "pf"
    harq_bler: float = 0.0  # optional HARQ: TB error rate (0 = off)
    harq_rtt_ms: float = 8.0
    harq_max_tx: int = 4


@dataclass
class Scenario:
    name: str = "custom"
    duration_s: float = 30.0
    ran: RanSpec = field(default_factory=RanSpec)
    ues: list[UeSpec] = field(default_factory=lambda: [UeSpec()])
    kpm_period_ms: float = 10.0  # E2 reporting period of the per-slot records
    e2_delay_ms: float = 5.0  # modelled gNB -> RIC -> xApp delay of each report
    timeseries_ms: float = 100.0
    # ABW source of `occ` flows: the labelled stand-in, or the OCC xApp's engine in-process
    abw_source: Literal["stand-in", "occ-engine"] = "stand-in"


# --- YAML -------------------------------------------------------------------------------
T = typing.TypeVar("T")


def build(cls: type[T], data: dict[str, Any], where: str = "") -> T:
    return typed.build(cls, data, where, ScenarioError)


def load_file(path: str | Path) -> Scenario:
    src = str(path)
    data, lines = typed.read_yaml_mapping(path, ScenarioError, "scenario")
    data.setdefault("name", Path(path).stem)
    try:
        sc = build(Scenario, data)
        validate(sc)
        return sc
    except ScenarioError as e:
        msg = str(e).split(": ", 1)[1] if e.where else str(e)
        line = typed.line_of(e.where or "", lines)
        where = f"{src}:{line} ({e.where})" if line else f"{src} ({e.where})" if e.where else src
        raise ScenarioError(msg, where) from None


def validate(sc: Scenario) -> None:
    r = sc.ran
    if r.slot_ms not in (1.0, 0.5):
        raise ScenarioError("slot_ms must be 1 or 0.5 (numerology 0/1 or 1/2)", "ran.slot_ms")
    if not 1 <= r.n_prb <= 275:
        raise ScenarioError("n_prb must be in 1..275", "ran.n_prb")
    if r.cells < 1 or r.cells_per_gnb < 1:
        raise ScenarioError("cells and cells_per_gnb must be >= 1", "ran.cells")
    if not 1 <= r.layers <= 4:
        raise ScenarioError("layers must be in 1..4", "ran.layers")
    if not 0.0 <= r.harq_bler < 1.0:
        raise ScenarioError("harq_bler must be in [0, 1)", "ran.harq_bler")
    if set(r.tdd) - set("DSU") or not r.tdd or "D" not in r.tdd + "S":
        raise ScenarioError("tdd must be a pattern of D, S, U with at least one D or S", "ran.tdd")
    if sc.duration_s <= 0:
        raise ScenarioError("duration_s must be > 0", "duration_s")
    for i, u in enumerate(sc.ues):
        w = f"ues[{i}]"
        if u.count < 1:
            raise ScenarioError("count must be >= 1", f"{w}.count")
        if not 0 <= u.cell < r.cells:
            raise ScenarioError(f"cell must be in 0..{r.cells - 1}", f"{w}.cell")
        ch = u.channel
        if ch.kind in ("mahimahi", "cqi") and not ch.path:
            raise ScenarioError(f"a {ch.kind} channel needs a path", f"{w}.channel.path")
        if ch.csi_period_ms < 0:
            raise ScenarioError("csi_period_ms must be >= 0", f"{w}.channel.csi_period_ms")
        if ch.report not in ("capacity", "gnb"):
            raise ScenarioError("report must be 'capacity' or 'gnb'", f"{w}.channel.report")
        if ch.report == "gnb":
            # others' PRBs are the rest of the cell: no second UE may be there, and every
            # slot carries downlink as the trace does
            if ch.kind != "mahimahi" or ch.csi_period_ms == 0:
                raise ScenarioError("report 'gnb' is for a mahimahi channel with a CSI period",
                                    f"{w}.channel.report")  # fmt: skip
            if sum(x.count for x in sc.ues) != 1 or set(r.tdd) != {"D"}:
                raise ScenarioError("report 'gnb' needs the UE alone in an all-downlink cell",
                                    f"{w}.channel.report")  # fmt: skip
        if ch.kind == "constant" and ch.rate_mbps is None and ch.mcs is None:
            raise ScenarioError("a constant channel needs rate_mbps or mcs", f"{w}.channel")
        if u.dropper and u.pdrop:
            raise ScenarioError("a UE's queue runs the Octopus dropper or PDrop, not both", w)
        if u.queue_limit_ms is not None and u.queue_limit_ms <= 0:
            raise ScenarioError("queue_limit_ms must be > 0 (or unset for queue_limit_bytes)",
                                f"{w}.queue_limit_ms")  # fmt: skip
        if ch.kind == "route":
            from octoric.sim.channels.route import ROUTES

            if ch.route not in ROUTES:
                raise ScenarioError(
                    f"unknown route {ch.route!r} (known: {', '.join(ROUTES)})", f"{w}.channel.route"
                )
        u.mobility.resolve(f"{w}.mobility.profile")
        for j, f in enumerate(u.flows):
            pw = f"{w}.flows[{j}].path"
            if not 0 <= f.path.loss < 1:
                raise ScenarioError("loss must be in [0, 1)", f"{pw}.loss")
            if f.path.rtt_max_ms is not None and f.path.rtt_max_ms < f.path.rtt_ms:
                raise ScenarioError("rtt_max_ms must be >= rtt_ms", f"{pw}.rtt_max_ms")
            if f.path.rtt_change_ms <= 0:
                raise ScenarioError("rtt_change_ms must be > 0", f"{pw}.rtt_change_ms")
            if f.video.fps <= 0:
                raise ScenarioError("fps must be > 0", f"{w}.flows[{j}].video.fps")
            _validate_quality(f, f"{w}.flows[{j}].video")
            if f.traffic == "dash":
                _validate_dash(f, f"{w}.flows[{j}]")
            if f.size_mb is not None and (f.traffic != "bulk" or not f.size_mb > 0):
                raise ScenarioError("size_mb: a bulk flow's download size, > 0",
                                    f"{w}.flows[{j}].size_mb")  # fmt: skip


def _validate_quality(f: FlowSpec, where: str) -> None:
    from octoric.sim.quality import model_names

    v = f.video
    if v.quality_model not in model_names():
        raise ScenarioError(
            f"unknown quality_model {v.quality_model!r} (known: {', '.join(model_names())})",
            f"{where}.quality_model",
        )
    if v.width <= 0 or v.height <= 0:
        raise ScenarioError("width and height must be > 0", f"{where}.width")
    if not 0 <= v.svc_overhead < 10:
        raise ScenarioError("svc_overhead must be in [0, 10)", f"{where}.svc_overhead")
    if not v.sqi_decay_s > 0:
        raise ScenarioError("sqi_decay_s must be > 0", f"{where}.sqi_decay_s")


def _validate_dash(f: FlowSpec, where: str) -> None:
    from octoric.sim.cc import WINDOW_SCHEMES

    if f.scheme not in WINDOW_SCHEMES:
        raise ScenarioError(
            f"a dash flow fetches its segments over the packet-level transport: scheme must be "
            f"a window scheme ({', '.join(sorted(WINDOW_SCHEMES))}; cubic is ToN'22's), "
            f"not {f.scheme!r}", f"{where}.scheme",
        )  # fmt: skip
    errors = config_errors(f.dash)
    if errors:
        key, msg = errors[0]
        raise ScenarioError(msg, f"{where}.dash.{key}")


# --- built-in scenarios -----------------------------------------------------------------
BUILTIN = ("demo", "static", "pulse", "trace:<path>", "route:<name>", "hsr", "multi-ue")
# the demo's UE that carries the Octopus-marked, temporal-SVC flow (its AMF-UE-NGAP-ID):
# `octoric run`'s default A1 policy switches the gNB's dropper on for it
DEMO_OCTOPUS_UE = 1006


def builtin(name: str) -> Scenario:
    if name == "static":
        return Scenario(
            name="static", ues=[UeSpec(channel=ChannelSpec("fading", mean_snr_db=18.0))]
        )
    if name == "pulse":
        ch = ChannelSpec("pulse", high_mbps=3.0, low_mbps=0.5, switch_s=40.0)
        return Scenario(name="pulse", duration_s=120.0, ues=[UeSpec(channel=ch)])
    if name.startswith("trace:"):
        path = name[len("trace:") :]
        if not path:
            raise ScenarioError("trace: needs a path, e.g. trace:traces/x.down", name)
        kind: ChannelKind = "cqi" if path.endswith(".csv") or "::" in path else "mahimahi"
        return Scenario(name=name, ues=[UeSpec(channel=ChannelSpec(kind, path=path))])
    if name.startswith("route:"):
        from octoric.sim.channels.route import ROUTES

        route = name[len("route:") :]
        if route not in ROUTES:
            raise ScenarioError(f"unknown route {route!r} (known: {', '.join(ROUTES)})", name)
        # the OCC testbed: 20 MHz, 51 PRB, one UE (OCC §6)
        return Scenario(name=name, ran=RanSpec(n_prb=51),
                        ues=[UeSpec(channel=ChannelSpec("route", route=route))])  # fmt: skip
    if name == "hsr":
        ran = RanSpec(cells=3, cells_per_gnb=1, n_prb=106)
        ue = UeSpec(
            count=4, channel=ChannelSpec("fading", mean_snr_db=14.0, std_db=6.0, corr_time_s=0.3),
            mobility=MobilitySpec("hsr"),
        )  # fmt: skip
        return Scenario(name="hsr", duration_s=60.0, ran=ran, ues=[ue])
    if name == "demo":
        return demo()
    if name == "multi-ue":
        ues = [
            UeSpec(count=2, channel=ChannelSpec("fading", mean_snr_db=snr))
            for snr in (8.0, 14.0, 20.0, 26.0)
        ]
        return Scenario(name="multi-ue", ran=RanSpec(n_prb=51), ues=ues)
    raise ScenarioError(
        f"unknown scenario {name!r}: give a YAML file or one of {', '.join(BUILTIN)}"
    )


def demo() -> Scenario:
    """``octoric run``'s default: all three xApps at work within its first 20 s.

    Two cells of 51 PRB on two gNBs (a handover crosses E2 nodes). In each cell an OCC-fed and
    a GCC video flow on UEs with the same channel statistics (cell 0 at 12 dB, cell 1 at
    20 dB), so the two schemes meet the same conditions side by side; a train of two UEs
    (OCC, GCC) crossing the cells at high speed (a handover every ~3 s per UE); and one
    GCC flow in temporal SVC with the Octopus header on a link that falls from 6 to 1 Mbit/s
    every 5 s, for the dropper an A1 policy switches on (UE ``DEMO_OCTOPUS_UE``). The static
    pairs come first: ``sim.ues=4`` keeps the two pairs.
    """
    ues = [
        UeSpec(cell=cell, channel=ChannelSpec("fading", mean_snr_db=snr),
               flows=[FlowSpec(scheme=scheme)])
        for cell, snr in ((0, 12.0), (1, 20.0)) for scheme in ("occ", "gcc")
    ]  # fmt: skip
    train = ChannelSpec("fading", mean_snr_db=16.0, std_db=6.0, corr_time_s=0.3)
    ues += [
        UeSpec(cell=i % 2, channel=train, flows=[FlowSpec(scheme=scheme)],
               mobility=MobilitySpec("hsr", ho_interval_s=3.0))
        for i, scheme in enumerate(("occ", "gcc"))
    ]  # fmt: skip
    octopus = FlowSpec(scheme="gcc", video=VideoConfig(svc="temporal", octopus=True))
    ues.append(UeSpec(cell=0, channel=ChannelSpec("pulse", high_mbps=6.0, low_mbps=1.0,
                                                  switch_s=5.0), flows=[octopus]))  # fmt: skip
    ran = RanSpec(cells=2, cells_per_gnb=1, n_prb=51)
    return Scenario(name="demo", duration_s=60.0, ran=ran, ues=ues)


def load(name_or_path: str) -> Scenario:
    if name_or_path.endswith((".yaml", ".yml")) or Path(name_or_path).is_file():
        return load_file(name_or_path)
    sc = builtin(name_or_path)
    validate(sc)
    return sc
