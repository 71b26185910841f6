"""What the real gNB sent and received over E2, from srsRAN's own E2AP pcap files.

srsRAN writes every E2AP PDU an agent sends or receives to a libpcap file with link type 155
(``PCAP_E2AP_DLT``: one record = one E2AP-PDU, no direction flag); ``gnb.py`` turns that on
for the DU and the CU-CP. A classic pcap file is a 24-byte header and 16-byte record headers:
read here with ``struct`` rather than a packet library, as nothing else is needed.

``tally`` counts the PDUs per kind (``E2SetupRequest``, ``RicIndication``, ...), which is the
gNB's own count of what it sent; ``samples`` keeps the first PDU of each kind for the test
vectors (``tests/e2sm/vectors/srsran-live``).
"""

from __future__ import annotations

import json
import struct
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from octoric.contracts.octopus_policy import DropCounters
from octoric.e2sm import e2ap
from octoric.e2sm.errors import E2smError
from octoric.xapps.octopus.xapp import drop_counters

E2AP_DLT = 155
_MAGIC = {0xA1B2C3D4: "<", 0xD4C3B2A1: ">", 0xA1B23C4D: "<", 0x4D3CB2A1: ">"}


class PcapError(ValueError):
    """Not a classic pcap file of E2AP PDUs (the message says what is wrong)."""


@dataclass(frozen=True)
class Pdu:
    t: float  # capture time (unix s)
    data: bytes


def read_pdus(path: Path) -> list[Pdu]:
    """Every record of an E2AP pcap; a record cut short at the end (the gNB still writing, or
    killed) is left out."""
    raw = Path(path).read_bytes()
    if len(raw) < 24:
        if not raw:
            return []
        raise PcapError(f"{path}: {len(raw)} bytes, shorter than a pcap header")
    (magic,) = struct.unpack("<I", raw[:4])
    endian = _MAGIC.get(magic)
    if endian is None:
        raise PcapError(f"{path}: not a pcap file (magic {magic:#010x})")
    nano = magic in (0xA1B23C4D, 0x4D3CB2A1)
    linktype = struct.unpack(endian + "I", raw[20:24])[0]
    if linktype != E2AP_DLT:
        raise PcapError(f"{path}: link type {linktype}, not E2AP ({E2AP_DLT})")
    out, pos = [], 24
    while pos + 16 <= len(raw):
        sec, frac, incl, _orig = struct.unpack(endian + "IIII", raw[pos : pos + 16])
        pos += 16
        if pos + incl > len(raw):
            break
        out.append(Pdu(sec + frac / (1e9 if nano else 1e6), raw[pos : pos + incl]))
        pos += incl
    return out


def kind(pdu: bytes) -> str:
    """The E2AP message's class name (``RicIndication``), or ``undecodable``."""
    try:
        return type(e2ap.decode_e2ap(pdu)).__name__
    except E2smError:
        return "undecodable"


def tally(path: Path) -> Counter[str]:
    """PDUs per kind in one pcap (an absent file: none)."""
    if not Path(path).exists():
        return Counter()
    return Counter(kind(p.data) for p in read_pdus(path))


def _messages(path: Path) -> Iterator[tuple[bytes, e2ap.E2apMessage]]:
    """(bytes, decoded message) of every decodable PDU in one pcap (none if it is absent)."""
    if not Path(path).exists():
        return
    for p in read_pdus(path):
        try:
            yield p.data, e2ap.decode_e2ap(p.data)
        except E2smError:
            continue


def indications_by_instance(path: Path) -> Counter[int]:
    """RIC indications per RIC instance ID (one per subscription submgr made) in one pcap."""
    return Counter(
        m.request_id.instance_id for _, m in _messages(path) if isinstance(m, e2ap.RicIndication)
    )


def control_outcomes(path: Path) -> list[tuple[float, DropCounters]]:
    """(capture time, the dropper counters) of every RIC CONTROL ACKNOWLEDGE in one DU pcap
    whose outcome carries them (E2SM-RC action 100, RAN parameters 8-11): what the gNB
    reported, in order."""
    if not Path(path).exists():
        return []
    out = []
    for p in read_pdus(path):
        # successfulOutcome (0x20) of RICcontrol (procedure code 4): skip the indications undecoded
        if p.data[:2] != b"\x20\x04":
            continue
        try:
            msg = e2ap.decode_e2ap(p.data)
        except E2smError:
            continue
        if isinstance(msg, e2ap.RicControlAcknowledge):
            c = drop_counters(msg.outcome)
            if c is not None:
                out.append((p.t, c))
    return out


def samples(path: Path) -> dict[str, bytes]:
    """The first PDU of each kind (an indication of each subscription:
    ``RicIndication/<RAN function>-i<RIC instance>``)."""
    out: dict[str, bytes] = {}
    for data, msg in _messages(path):
        name = type(msg).__name__
        if isinstance(msg, e2ap.RicIndication):  # one per subscription (RIC instance)
            name = f"{name}/{msg.ran_function_id}-i{msg.request_id.instance_id}"
        out.setdefault(name, data)
    return out


def write_vectors(run_dir: Path, out: Path, provenance: dict[str, str]) -> list[dict[str, object]]:
    """The first PDU of each kind the gNB's DU and CU-CP sent or received in a run of
    ``octoric testbed live``, as hex files plus ``index.json`` (``tests/e2sm/test_vectors.py``'s
    format, with ``node`` and ``provenance``): test vectors of what a real gNB sends."""
    out.mkdir(parents=True, exist_ok=True)
    index: list[dict[str, object]] = []
    for node, pcap in (("du", "gnb-e2ap-du.pcap"), ("cu-cp", "gnb-e2ap-cu-cp.pcap")):
        for name, data in sorted(samples(run_dir / pcap).items()):
            file = f"{node}-{name.replace('/', '-rf')}.hex"
            hexed = data.hex()
            (out / file).write_text(
                "\n".join(hexed[i : i + 64] for i in range(0, len(hexed), 64)) + "\n"
            )
            index.append({"file": file, "pdu": "E2AP-PDU", "bytes": len(data), "node": node,
                          "message": name})  # fmt: skip
    (out / "index.json").write_text(
        json.dumps({"provenance": provenance, "vectors": index}, indent=2) + "\n"
    )
    return index
