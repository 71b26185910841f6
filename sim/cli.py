"""``octoric sim ...``: run scenarios offline, list them, check files."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

from octoric.contracts import ports
from octoric.e2sm.kpm_version import KpmVersion
from octoric.sim.errors import SimError
from octoric.sim.scenario import BUILTIN, Scenario, load


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("sim", help="the RAN and real-time-video simulator")
    sub = p.add_subparsers(dest="sim_command", metavar="SUBCOMMAND")
    r = sub.add_parser("run", help="run a scenario (offline: simulated time, as fast as possible)")
    r.add_argument(
        "--scenario",
        default="static",
        help=f"a YAML file or a built-in: {', '.join(BUILTIN)} (default: static)",
    )
    r.add_argument(
        "--traffic",
        choices=["video", "bulk", "backlogged", "dash"],
        help="override every flow's traffic (bulk: a transfer on the packet-level transport; "
        "dash: a dash.js VoD client over it, CUBIC unless --scheme names a window scheme)",
    )
    r.add_argument(
        "--scheme",
        help="override every video flow's rate-control scheme; a window scheme (cubic, bbr, "
        "bbr-h, bbr+, copa, rocc) turns the video flows into bulk transfers on the packet-level "
        "transport, unless --traffic video is given (then the video goes over the transport); "
        "copa+dumbo, rocc+dumbo: video over the transport with Dumbo's padding; octobbr: the "
        "Octopus transport (BBR, Algorithm 1 in its send buffer); awstream, salsify: frame-rate "
        "adaptation at a fixed quality (over TCP BBR; Salsify's own transport)",
    )
    r.add_argument(
        "--abw",
        choices=["stand-in", "occ-engine"],
        help="ABW source of occ flows: the labelled stand-in (default) or the OCC xApp engine",
    )
    r.add_argument("--duration", type=float, metavar="SECONDS", help="simulated seconds")
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--json", metavar="OUT", help="write the summary here (time series beside it)")
    r.add_argument("--plot", action="store_true", help="write PNG plots beside OUT")
    r.add_argument("--cells", type=int, help="number of cells (all on one gNB by default)")
    r.add_argument("--cells-per-gnb", type=int, help="cells per gNB (one E2 node per gNB)")
    r.add_argument("--ues", type=int, help="number of UEs (the scenario's UE kinds repeated)")
    r.add_argument("--mobility", help="every UE's mobility profile (static/walking/driving/hsr)")
    r.add_argument(
        "--svc", choices=("none", "temporal", "spatial"),
        help="every video flow's layering (SEC'23 §6.1/§6.2 message policies)",
    )  # fmt: skip
    r.add_argument(
        "--octopus-header", action="store_true",
        help="mark every video packet with the Octopus header (docs/octopus-header.md)",
    )  # fmt: skip
    live = r.add_argument_group("live mode (wall clock, E2 to the RIC; docs/sim.md)")
    live.add_argument(
        "--live", action="store_true", help="run in real time as E2 nodes of a RIC (--ric-e2)"
    )
    live.add_argument(
        "--ric-e2",
        metavar="HOST:PORT",
        help=f"the RIC's E2 endpoint (e2term; default: the embedded RIC's, "
        f"{ports.LOOPBACK}:{ports.E2})",
    )
    live.add_argument(
        "--e2-transport", choices=["auto", "sctp", "tcp"], default="auto",
        help="E2 transport (auto: SCTP when the kernel has it, else octoric's TCP framing)",
    )  # fmt: skip
    live.add_argument(
        "--kpm-version", metavar="V[,V...]", default="4.00",
        help="E2SM-KPM version the gNBs speak (2.03, 3.00, 4.00, 5.00); a list is cycled over "
        "the gNBs (default 4.00)",
    )  # fmt: skip
    live.add_argument(
        "--status-file", metavar="PATH", help="rewrite a JSON status here every second"
    )
    live.add_argument(
        "--series", metavar="PATH",
        help="append the status's per-UE rates here every second (JSON lines; for reports)",
    )  # fmt: skip
    live.add_argument(
        "--handover-log", metavar="PATH",
        help="write the ground truth here: one JSON line per handover start and end",
    )  # fmt: skip
    live.add_argument(
        "--feedback-port", type=int, metavar="PORT",
        help="UDP port (127.0.0.1) for the OCC xApp's JSON feedback to occ senders (0: any)",
    )  # fmt: skip
    live.add_argument(
        "--occ-register", metavar="URL",
        help="register the occ flows' feedback address here (the OCC xApp's /occ/v1/flows)",
    )  # fmt: skip
    live.add_argument(
        "--real-ues", type=int, metavar="N",
        help="the first N UEs carry real applications' packets through network namespaces "
        "(root; docs/emulated-cell.md)",
    )  # fmt: skip
    r.add_argument("--quiet", action="store_true", help="no progress line on stderr")
    r.set_defaults(func=_cmd_run)
    ls = sub.add_parser("scenarios", help="list the built-in scenarios and schemes")
    ls.set_defaults(func=_cmd_list)
    sch = sub.add_parser(
        "schemes", help="every rate-control scheme: its module, what it follows, what it reads"
    )
    sch.add_argument("--json", action="store_true", help="one JSON list instead of a table")
    sch.set_defaults(func=_cmd_schemes)
    conv = sub.add_parser(
        "mahimahi-from-csv",
        help="write Mahimahi traces (*.down) from per-second throughput logs (e.g. the 5G "
        "production dataset's DL_bitrate)",
    )
    conv.add_argument("inputs", nargs="+", metavar="CSV",
                      help="a CSV, or ARCHIVE.zip (every CSV in it whose path contains "
                      "--match), or ARCHIVE.zip::MEMBER.csv")  # fmt: skip
    conv.add_argument("--out", required=True, metavar="DIR", help="folder for the .down files")
    conv.add_argument("--column", default="DL_bitrate", help="throughput column, kbit/s")
    conv.add_argument("--match", default="", help="with a .zip: only members containing this")
    conv.add_argument("--row-ms", type=int, default=1000, help="time one row covers (ms)")
    conv.set_defaults(func=_cmd_mahimahi_from_csv)

    def _help(args: argparse.Namespace) -> int:
        p.print_help()
        return 2

    p.set_defaults(func=_help)


# video on the packet-level transport with more than a window scheme: the Dumbo thesis's
# padding (``NAME+dumbo``, sim/cc/dumbo.py), the Octopus transport (sim/cc/octobbr.py),
# AWStream's frame-rate adaptation over BBR (sim/cc/awstream.py) and Salsify* (sim/cc/salsify.py)
TRANSPORT_VIDEO_SCHEMES = {"copa+dumbo": "dumbo", "rocc+dumbo": "dumbo", "octobbr": "octobbr",
                           "awstream": "awstream", "salsify": "salsify"}  # fmt: skip


def _cmd_list(args: argparse.Namespace) -> int:
    from octoric.sim.cc import SCHEMES, WINDOW_SCHEMES

    print("scenarios:", ", ".join(BUILTIN), "(or a YAML file; see docs/sim.md)")
    print("schemes:  ", ", ".join(sorted(SCHEMES)), "(video)")
    print(
        "           ",
        ", ".join(sorted(WINDOW_SCHEMES)),
        "(bulk, packet-level transport;",
        "video over it with --traffic video)",
    )
    print(
        "           ",
        ", ".join(TRANSPORT_VIDEO_SCHEMES),
        "(video on the transport: Dumbo's padding, the Octopus transport, AWStream, Salsify*)",
    )
    return 0


def scheme_table() -> list[dict[str, object]]:
    """Each registered scheme: name, class, module file, the first paragraph of its
    docstring (the paper or reference implementation it follows and its parameters), and
    whether it reads receiver feedback or ABW reports."""
    import inspect

    from octoric.sim.cc import SCHEMES, WINDOW_SCHEMES

    out: list[dict[str, object]] = []
    both: dict[str, Any] = {**SCHEMES, **WINDOW_SCHEMES}
    for name in sorted(both):
        factory = both[name]
        own = factory.__dict__.get("__doc__") if hasattr(factory, "__dict__") else None
        doc = inspect.cleandoc(own) if isinstance(own, str) else ""  # not a base class's
        module = inspect.getmodule(factory)
        path = getattr(module, "__file__", "") or ""
        out.append({
            "name": name,
            "class": getattr(factory, "__qualname__", repr(factory)),
            "module": "sim/cc/" + path.rsplit("/", 1)[-1] if path else None,
            "follows": " ".join(doc.split("\n\n", 1)[0].split()) or None,
            "reads_feedback": bool(getattr(factory, "wants_feedback", False)),
            "reads_abw": bool(getattr(factory, "wants_abw", False)),
            "traffic": "bulk" if name in WINDOW_SCHEMES else "video",
        })  # fmt: skip
    import importlib

    for name, mod in TRANSPORT_VIDEO_SCHEMES.items():
        m = importlib.import_module(f"octoric.sim.cc.{mod}")
        doc = " ".join(inspect.cleandoc(m.__doc__ or "").split("\n\n", 1)[0].split())
        out.append({
            "name": name, "class": None, "module": f"sim/cc/{mod}.py", "follows": doc,
            "reads_feedback": False, "reads_abw": False, "traffic": "video (packet transport)",
        })  # fmt: skip
    return out


def _cmd_schemes(args: argparse.Namespace) -> int:
    rows = scheme_table()
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for r in rows:
        acks = r["traffic"] != "video"
        reads = [k for k, v in (("feedback", r["reads_feedback"]), ("ABW", r["reads_abw"]),
                                ("per-packet ACKs", acks)) if v]  # fmt: skip
        print(f"{r['name']:<13} {r['module']}  reads: {', '.join(reads) or 'nothing'}")
        print(textwrap.fill(str(r["follows"] or "(no description)"), 96,
                            initial_indent="    ", subsequent_indent="    "))  # fmt: skip
    return 0


def _scenario(args: argparse.Namespace) -> Scenario:
    from octoric.sim.cc import WINDOW_SCHEMES
    from octoric.sim.overrides import apply_layout

    sc = load(args.scenario)
    if args.duration is not None:
        if args.duration <= 0:
            raise SimError("--duration must be > 0")
        sc.duration_s = args.duration
    if args.abw:
        sc.abw_source = args.abw
    apply_layout(sc, args.cells, args.cells_per_gnb, args.ues, args.mobility)
    for ue in sc.ues:
        for f in ue.flows:
            if args.traffic:
                f.traffic = args.traffic
            if args.scheme:
                f.scheme = args.scheme
                if args.scheme in WINDOW_SCHEMES and f.traffic == "video" and not args.traffic:
                    f.traffic = "bulk"  # a window scheme runs a bulk transfer, unless told
            if f.traffic == "dash" and f.scheme not in WINDOW_SCHEMES:
                if args.scheme:
                    raise SimError(f"--traffic dash downloads over a window scheme (cubic, bbr, "
                                   f"...), not {args.scheme!r}")  # fmt: skip
                f.scheme = "cubic"  # the TCP below DASH in ToN'22
            if getattr(args, "svc", None):
                f.video.svc = args.svc
            if getattr(args, "octopus_header", False):
                f.video.octopus = True
    return sc


def ric_endpoint(arg: str | None) -> tuple[str, int]:
    """``--ric-e2 HOST:PORT``; without it, the embedded RIC's E2 endpoint (127.0.0.1:36421)."""
    if arg is None:
        return ports.LOOPBACK, ports.E2
    host, _, port = arg.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise SimError(f"--ric-e2 must be HOST:PORT, got {arg!r}")
    return host, int(port)


def _cmd_run(args: argparse.Namespace) -> int:
    if args.live:
        return _cmd_live(args)
    for opt in ("ric_e2", "status_file", "feedback_port", "occ_register", "real_ues"):
        if getattr(args, opt) is not None:
            raise SimError(f"--{opt.replace('_', '-')} needs --live")
    from octoric.sim.runner import run_offline
    from octoric.sim.summary import write_outputs

    if args.plot and not args.json:
        raise SimError("--plot writes its PNGs beside the summary: give --json OUT too")
    sc = _scenario(args)
    if any(f.traffic == "real" for u in sc.ues for f in u.flows):
        raise SimError("a `traffic: real` flow carries real packets: run it with --live (root)")
    progress = (not args.quiet and sys.stderr.isatty()) or (not args.quiet and sc.duration_s >= 60)
    res = run_offline(sc, args.seed, progress=progress)
    speed = res.summary["sim_seconds"] / max(res.wall_seconds, 1e-9)
    print(
        f"sim: {sc.name}: {res.summary['sim_seconds']} s simulated in {res.wall_seconds:.2f} s "
        f"({speed:.0f}x real time)", file=sys.stderr,
    )  # fmt: skip
    if args.json:
        out = Path(args.json)
        files = write_outputs(res.engine, res.summary, out)
        if args.plot:
            from octoric.sim.plots import write_plots

            files += write_plots(res.engine, out.with_suffix(""))
        for path in files:
            print(f"wrote {path}", file=sys.stderr)
    else:
        print(json.dumps(res.summary, indent=2))
    return 0


LIVE_DEFAULT_S = 24 * 3600.0  # a live run without --duration lasts until SIGTERM (or a day)


def _kpm_versions(text: str) -> tuple[KpmVersion, ...]:
    try:
        return tuple(KpmVersion.parse(v) for v in text.split(",") if v.strip())
    except ValueError as e:
        raise SimError(f"--kpm-version: {e}") from None


def _print_real_ues(path: Any) -> None:
    """Where the applications of a real-UE run go (``RealUePath``)."""
    from octoric.sim.realue.netns import SERVER_ADDR

    ns = path.ns
    print(f"sim live: real UEs up; the server side is netns {ns.server_ns} ({SERVER_ADDR}):",
          file=sys.stderr)  # fmt: skip
    for u in path.ues:
        amf = path.engine.ues[u.engine_ue].amf_ue_ngap_id
        print(f"  UE {amf}: netns {u.netns}, address {u.address}", file=sys.stderr)
    py = sys.executable
    print(f"  e.g. ip netns exec {ns.ue_ns[0]} {py} -m octoric.sim.realue.udp_tool recv\n"
          f"       ip netns exec {ns.server_ns} {py} -m octoric.sim.realue.udp_tool send "
          f"--to {path.ues[0].address} --mbps 20", file=sys.stderr, flush=True)  # fmt: skip


def _cmd_live(args: argparse.Namespace) -> int:
    import asyncio
    import signal

    # a SIGTERM before the loop's handlers exist (while importing, connecting) still ends the
    # run cleanly, with a summary
    early: list[int] = []
    signal.signal(signal.SIGTERM, lambda sig, frame: early.append(sig))

    from octoric.e2sm.transport import resolve
    from octoric.sim.live import LiveOptions, run_live

    host, port = ric_endpoint(args.ric_e2)
    if args.plot:
        raise SimError("--plot is for offline runs")
    if args.occ_register and args.feedback_port is None:
        raise SimError("--occ-register needs --feedback-port (where the feedback goes)")
    duration = args.duration
    args.duration = None
    sc = _scenario(args)
    if args.real_ues is not None:
        from octoric.sim.overrides import apply_real_ues

        apply_real_ues(sc, args.real_ues)
    if duration is None:
        sc.duration_s = LIVE_DEFAULT_S
    else:
        if duration <= 0:
            raise SimError("--duration must be > 0")
        sc.duration_s = duration
    opts = LiveOptions(
        ric_host=host, ric_port=port, transport=resolve(args.e2_transport),
        duration_s=duration, status_path=Path(args.status_file) if args.status_file else None,
        feedback_port=args.feedback_port, occ_register=args.occ_register,
        handover_log=Path(args.handover_log) if args.handover_log else None,
        series_path=Path(args.series) if args.series else None,
        kpm_versions=_kpm_versions(args.kpm_version),
        on_real_ready=None if args.quiet else _print_real_ues,
    )  # fmt: skip
    if not args.quiet:
        print(
            f"sim live: {sc.name}, {sc.ran.cells} cells, {sum(u.count for u in sc.ues)} UEs, "
            f"E2 to {host}:{port} ({opts.transport})", file=sys.stderr, flush=True,
        )  # fmt: skip
    res = asyncio.run(run_live(sc, args.seed, opts, stop_now=lambda: bool(early)))
    summary = res.summary
    if args.json:
        out = Path(args.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(json.dumps(summary, indent=2) + "\n")
        tmp.replace(out)
        print(f"wrote {out}", file=sys.stderr)
    else:
        print(json.dumps(summary, indent=2))
    print(
        f"sim live: stopped ({res.stopped_because}) after {summary['sim_seconds']} s; "
        f"{sum(n['indications'] for n in summary['live']['nodes'])} indications sent",
        file=sys.stderr,
    )
    return 0


def _cmd_mahimahi_from_csv(args: argparse.Namespace) -> int:
    import zipfile

    from octoric.sim.channels.traces import mahimahi_from_rates, read_rate_csv
    from octoric.sim.errors import TraceError

    sources: list[str] = []
    for item in args.inputs:
        if item.endswith(".zip"):
            try:
                with zipfile.ZipFile(item) as z:
                    names = sorted(n for n in z.namelist() if n.endswith(".csv")
                                   and "__MACOSX" not in n and args.match in n)  # fmt: skip
            except (OSError, zipfile.BadZipFile) as e:
                raise TraceError(f"cannot read archive: {e}", item) from e
            if not names:
                raise TraceError(f"no CSV in the archive matches {args.match!r}", item)
            sources.extend(f"{item}::{n}" for n in names)
        else:
            sources.append(item)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for src in sources:
        kbps = read_rate_csv(src, args.column)
        stamps = mahimahi_from_rates(kbps, args.row_ms)
        name = Path(src.split("::")[-1]).stem + ".down"
        (out / name).write_text("".join(f"{t}\n" for t in stamps))
        mean = float(kbps.mean()) / 1000
        print(f"{out / name}: {len(kbps)} rows, mean {mean:.1f} Mbit/s, {len(stamps)} packets")
    return 0
