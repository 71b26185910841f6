"""A real srsRAN_Project gNB as a component of a run: no radio (``ru_dummy``), DU test-mode UEs,
CU-UP test mode, no core, E2 to this run's RIC (``srsran_agent/configs/gnb_rfless.yml``).

The gNB must come from ``srsran_agent/build.sh`` (release_25_10 + octoric's patch series):
patch 0011 gives it ``e2.transport: tcp``, which is how it reaches the RIC on a kernel without
SCTP. Its console takes commands on standard input (``ho <pci> <rnti hex> <pci>``,
``command``); its E2AP PDUs, sent and received, go to ``gnb-e2ap-du.pcap`` and
``gnb-e2ap-cu-cp.pcap`` in the run folder (srsRAN's own pcap writer, DLT 155), which is how the
run counts what the gNB sent. Its JSON metrics come over its remote-control WebSocket
(``gnb_metrics``).
"""

from __future__ import annotations

import asyncio
import logging
import re
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from octoric.errors import OctoricError
from octoric.redis_server import free_port
from octoric.supervisor import ChildProcess, RunContext

log = logging.getLogger("testbed.gnb")
REPO = Path(__file__).resolve().parents[2]
CONFIG_TEMPLATE = REPO / "srsran_agent" / "configs" / "gnb_rfless.yml"
N3_PORT = 2152  # srsRAN's GTP-U port, fixed (its CU-UP binds it at start)
# what patch 0011 adds to the gNB's help text: a binary without it rejects e2.transport
TCP_MARKER = b"Transport to the RIC"


@dataclass(frozen=True)
class GnbOptions:
    """What a run chooses about the gNB; the rest is ``gnb_rfless.yml``."""

    build_dir: Path
    ues_per_cell: int = 2
    time_scaling: float = 1.0
    cells: int = 2  # PCIs 1..cells on the template's carrier
    extra: dict[str, Any] = field(default_factory=dict)  # YAML overrides, e.g. {"log": {...}}


def gnb_binary(build_dir: Path) -> Path:
    """``apps/gnb/gnb`` of a build.sh build directory, checked to carry E2 over TCP."""
    exe = Path(build_dir) / "apps" / "gnb" / "gnb"
    if not exe.is_file():
        raise OctoricError(
            f"no gnb at {exe}: build it with `srsran_agent/build.sh SRC_DIR {build_dir}` "
            "(a checkout of srsRAN_Project release_25_10; docs/testbed.md)"
        )
    if TCP_MARKER not in exe.read_bytes():
        raise OctoricError(
            f"{exe} has no E2 over TCP (patch 0011 of srsran_agent/patches): rebuild it with "
            "srsran_agent/build.sh from a checkout with the whole series"
        )
    return exe


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def render_config(
    opts: GnbOptions, run_dir: Path, ric_port: int, transport: str, ws_port: int
) -> dict[str, Any]:
    """The gNB's YAML for this run: the template with this run's RIC address, files, ports."""
    cfg: dict[str, Any] = yaml.safe_load(CONFIG_TEMPLATE.read_text())
    cfg["e2"].update({"addr": "127.0.0.1", "port": ric_port, "transport": transport})
    cfg["remote_control"].update({"bind_addr": "127.0.0.1", "port": ws_port})
    cfg["log"]["filename"] = str(run_dir / "gnb-srsran.log")
    cfg["pcap"] = {
        "e2ap_enable": True,
        "e2ap_du_filename": str(run_dir / "gnb-e2ap-du.pcap"),
        "e2ap_cu_cp_filename": str(run_dir / "gnb-e2ap-cu-cp.pcap"),
    }
    cfg["test_mode"]["test_ue"]["nof_ues"] = opts.ues_per_cell
    if opts.cells != len(cfg["cells"]):
        cfg["cells"] = cells_config(opts.cells)
    cfg["ru_dummy"]["time_scaling"] = opts.time_scaling
    return _merge(cfg, opts.extra)


MAX_CELLS = 4


def cells_config(n: int) -> list[dict[str, Any]]:
    """``n`` cells on the template's carrier, PCIs 1..n, PRACH root sequences 64 apart (distinct
    only to silence srsRAN's same-frequency warning: ru_dummy detects no PRACH). srsRAN's test
    mode puts as many UEs on every cell, so one UE a cell is how a UE gets a cell of its own."""
    if not 1 <= n <= MAX_CELLS:
        raise OctoricError(f"cells must be 1..{MAX_CELLS}, got {n}")
    return [
        {"pci": i + 1, "prach": {"prach_root_sequence_index": 1 if i == 0 else 64 * i}}
        for i in range(n)
    ]


def n3_port_free() -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.bind(("127.0.0.1", N3_PORT))
        except OSError:
            return False
    return True


@dataclass(frozen=True)
class ModeUe:
    """A DU test-mode UE: cell ``pci``, C-RNTI, and (srsRAN's test adapter counts them from
    0 in creation order) its gNB-CU-UE-F1AP-ID, which is how the DU's E2 agent names it."""

    pci: int
    rnti: int
    cu_f1ap_id: int | None = None


# srsRAN's F1AP log line for each test UE's injected RRC Setup (log.f1ap_level: info)
_F1AP_DL_RRC = re.compile(r"ue=(\d+) cu_ue=(\d+) du_ue=(\d+).*DLRRCMessageTransfer")
_F1AP_UE = re.compile(r"ue=(\d+) c-rnti=0x([0-9a-fA-F]+) du_ue=(\d+).*F1 UE context created")


def ues_from_f1ap_log(text: str, cells: list[int], rnti0: int, per_cell: int) -> list[ModeUe]:
    """The test UEs and their gNB-CU-UE-F1AP-IDs as srsRAN's F1AP log shows them: the DU UE
    index joins the 'F1 UE context created' line (its C-RNTI) and the DL RRC Message Transfer
    line (its CU F1AP ID). UEs not logged yet come without an F1AP ID."""
    rnti_of: dict[int, int] = {}
    for m in _F1AP_UE.finditer(text):
        rnti_of[int(m.group(1))] = int(m.group(2), 16)
    cu_of_rnti: dict[int, int] = {}
    for m in _F1AP_DL_RRC.finditer(text):
        ue = int(m.group(1))
        if ue in rnti_of:
            cu_of_rnti[rnti_of[ue]] = int(m.group(2))
    out = []
    for i, pci in enumerate(cells):
        for k in range(per_cell):
            rnti = rnti0 + i * per_cell + k
            out.append(ModeUe(pci, rnti, cu_of_rnti.get(rnti)))
    return out


class GnbComponent:
    """The gNB process under the supervisor (no automatic restart: a gNB that dies is a finding
    to report, and ``restart()`` is the deliberate one)."""

    name = "gnb"

    def __init__(self, opts: GnbOptions) -> None:
        self.opts = opts
        self.exe = gnb_binary(opts.build_dir)
        self.child: ChildProcess | None = None
        self.ctx: RunContext | None = None
        self.ws_port = 0
        self.config: dict[str, Any] = {}
        self.config_path: Path | None = None
        self.starts = 0
        self._f1ap_offset = 0
        self._f1ap_lines: list[str] = []
        self._ues_done: list[ModeUe] | None = None

    @property
    def cells(self) -> list[int]:
        return [int(c["pci"]) for c in self.config.get("cells", [])]

    @property
    def first_rnti(self) -> int:
        r = self.config["test_mode"]["test_ue"]["rnti"]
        return int(r, 16) if isinstance(r, str) else int(r)

    @property
    def video_rnti(self) -> int | None:
        """The test UE whose DRB1 carries the CU-UP test mode's N3 traffic (patch 0016's
        ``test_mode.test_ue.cu_up_drb_5qi``: the first one), or None."""
        if self.config["test_mode"]["test_ue"].get("cu_up_drb_5qi") is None:
            return None
        return self.first_rnti

    def files(self, name: str) -> list[Path]:
        """One of the gNB's files (``gnb-e2ap-du.pcap``, ``gnb-srsran.log``) of every start, in
        order: a restart moves the previous start's aside (``gnb-e2ap-du.1.pcap``)."""
        assert self.ctx is not None
        cur = self.ctx.run_dir / name
        p = Path(name)
        old = [self.ctx.run_dir / f"{p.stem}.{i}{p.suffix}" for i in range(1, self.starts)]
        return [f for f in [*old, cur] if f.exists()]

    async def start(self, ctx: RunContext) -> None:
        from octoric.ric.services import RicRuntime

        self.ctx = ctx
        if not n3_port_free():
            raise OctoricError(
                f"UDP 127.0.0.1:{N3_PORT} (N3, GTP-U) is taken: another gNB or a UPF runs on this "
                "machine; stop it (srsRAN's CU-UP binds that port and exits if it cannot)"
            )
        rt = RicRuntime.read(ctx.run_dir / "ric.json")
        self.ws_port = free_port()
        self.config = render_config(
            self.opts, ctx.run_dir, rt.ric.e2_port, rt.transport, self.ws_port
        )
        self.config_path = ctx.run_dir / "gnb.yml"
        self.config_path.write_text(yaml.safe_dump(self.config, sort_keys=False))
        await self._spawn()

    async def _spawn(self) -> None:
        assert self.ctx is not None and self.config_path is not None
        self.child = ChildProcess(
            "gnb", [str(self.exe), "-c", str(self.config_path)], env=None, stdin_pipe=True
        )
        await self.child.start(self.ctx)
        self.starts += 1

    async def restart(self) -> None:
        """Stop the gNB and start it again with the same config (a gNB restart mid-run)."""
        if self.child is not None:
            await self.child.stop()
        assert self.ctx is not None
        # srsRAN truncates its log and pcaps at start: keep this start's beside them
        for name in ("gnb-srsran.log", "gnb-e2ap-du.pcap", "gnb-e2ap-cu-cp.pcap"):
            f, p = self.ctx.run_dir / name, Path(name)
            if f.exists():
                f.rename(f.with_name(f"{p.stem}.{self.starts}{p.suffix}"))
        self._ues_done, self._f1ap_lines, self._f1ap_offset = None, [], 0
        await self._spawn()

    async def command(self, line: str) -> None:
        """A console command (``ho 1 4601 2``, ``t``): one per write, as srsRAN reads them."""
        if self.child is None:
            raise OctoricError("the gNB is not running")
        await self.child.send_line(line)
        await asyncio.sleep(0.05)

    def console(self) -> str:
        """What the gNB printed so far (its standard output and error)."""
        if self.child is None or self.child.log_path is None or not self.child.log_path.exists():
            return ""
        return self.child.log_path.read_text(errors="replace")

    def srsran_log_path(self) -> Path:
        return Path(self.config.get("log", {}).get("filename", ""))

    def srsran_log_tail(self, offset: int) -> tuple[str, int]:
        """What srsRAN's log gained since byte ``offset``, and the new offset (the log grows by
        megabytes a minute: it is never read whole while the run goes on)."""
        path = self.srsran_log_path()
        if not path.is_file():
            return "", offset
        with path.open("rb") as f:
            f.seek(offset)
            data = f.read()
        # whole lines only: srsRAN writes its log in blocks, the last line may still be cut
        data = data[: data.rfind(b"\n") + 1]
        return data.decode(errors="replace"), offset + len(data)

    def test_ues(self) -> list[ModeUe]:
        """The test UEs and their F1AP IDs, from the F1AP lines srsRAN has logged so far (read
        incrementally; the answer is kept once every UE has its ID)."""
        per_cell = int(self.config["test_mode"]["test_ue"]["nof_ues"])
        if self._ues_done is not None:
            return self._ues_done
        text, self._f1ap_offset = self.srsran_log_tail(self._f1ap_offset)
        self._f1ap_lines += [ln for ln in text.splitlines() if "ue=" in ln and "[DU-F1" in ln]
        ues = ues_from_f1ap_log("\n".join(self._f1ap_lines), self.cells, self.first_rnti, per_cell)
        if ues and all(u.cu_f1ap_id is not None for u in ues):
            self._ues_done = ues
        return ues

    def running(self) -> bool:
        p = self.child.proc if self.child else None
        return p is not None and p.returncode is None

    async def stop(self) -> None:
        if self.child is not None:
            await self.child.stop()

    def status(self) -> str:
        if not self.running():
            return "gnb down"
        n = sum(1 for u in self.test_ues() if u.cu_f1ap_id is not None)
        return f"gnb {len(self.cells)} cells, {n} test UEs"

    def report(self) -> dict[str, Any]:
        return {
            "process": self.child.report() if self.child else None,
            "binary": str(self.exe),
            "config": str(self.config_path) if self.config_path else None,
            "starts": self.starts,
            "test_ues": [u.__dict__ for u in self.test_ues()],
        }

    def failed(self) -> str | None:
        if self.child is None or self.child.failed() is None:
            return None
        tail = " | ".join(self.console().strip().splitlines()[-3:])
        return f"{self.child.failed()}; it printed: {tail}"
