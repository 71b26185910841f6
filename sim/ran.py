"""Cells and the per-slot MAC scheduler (round robin, proportional fair).

The scheduler works on plain lists (no per-UE objects beyond ``UeRadio``) because it runs
once per slot per cell: at 1 ms slots that is the simulator's hot loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from octoric.sim.rlc import DlQueue

SchedulerName = Literal["rr", "pf"]


@dataclass(frozen=True)
class TddPattern:
    """A slot pattern such as 'DDDSU'; S slots carry ``special_dl`` of a DL slot."""

    pattern: str = "D"
    special_dl: float = 0.6

    def factors(self) -> list[float]:
        out = []
        for i, c in enumerate(self.pattern):
            if c == "D":
                out.append(1.0)
            elif c == "S":
                out.append(self.special_dl)
            elif c == "U":
                out.append(0.0)
            else:
                raise ValueError(f"TDD pattern {self.pattern!r}: char {i + 1} must be D, S or U")
        if not out:
            raise ValueError("empty TDD pattern")
        return out


class UeRadio:
    """What the scheduler needs of a UE; ``bits`` is its current channel block (a list)."""

    __slots__ = (
        "amf_ue_ngap_id",
        "bits",
        "bits_np",
        "cap_bytes",
        "cap_from",
        "cap_share",
        "carry",
        "cell",
        "delivered_bytes",
        "gnb_ue_id",
        "idx",
        "pf_avg",
        "pf_last",
        "prb_total",
        "prb_used",
        "queue",
        "slot_bytes",
    )  # fmt: skip

    def __init__(self, idx: int, amf_id: int, queue: DlQueue) -> None:
        self.idx = idx
        self.amf_ue_ngap_id = amf_id
        self.gnb_ue_id = 0
        self.queue = queue
        self.cell = -1  # -1: detached (handover interruption / radio link failure)
        self.bits: list[float] = []
        self.bits_np = np.zeros(1)  # cumulative DL bits per PRB over the block (capacity)
        self.carry = 0.0
        self.pf_avg = 1.0
        self.pf_last = 0
        self.cap_bytes = 0.0
        self.cap_from = 0
        self.cap_share = 0.0
        self.delivered_bytes = 0
        self.prb_used = 0  # PRBs granted in the current slot
        self.prb_total = 0
        self.slot_bytes = 0  # bytes sent in the current slot


@dataclass
class CellConfig:
    n_prb: int = 106
    scheduler: SchedulerName = "pf"
    pf_time_constant_slots: int = 100


class Cell:
    def __init__(self, idx: int, cell_id: int, gnb: int, cfg: CellConfig) -> None:
        self.idx = idx
        self.cell_id = cell_id  # NR cell identity (within its gNB)
        self.gnb = gnb
        self.cfg = cfg
        self.n_prb = cfg.n_prb
        self.ues: list[UeRadio] = []
        self.rr_ptr = 0
        self.pf_decay = 1.0 - 1.0 / cfg.pf_time_constant_slots
        self.rr = cfg.scheduler == "rr"
        self.handovers_out = 0
        self.handovers_in = 0
        self.harq_reserved: dict[int, int] = {}  # slot -> PRBs taken by HARQ retransmissions
        self.prb_idle = 0  # of the current slot
        self.active_ues = 0

    def schedule(self, slot: int, off: int, n_prb: int, now_us: int) -> list[UeRadio]:
        """Grant this slot's PRBs; return the UEs that were served (bytes sent)."""
        ues = self.ues
        n = len(ues)
        served: list[UeRadio] = []
        if n == 0:
            self.prb_idle = n_prb
            self.active_ues = 0
            return served
        pf = not self.rr
        d = self.pf_decay
        if pf:
            keyed = []
            for u in ues:
                q = u.queue
                if q.bytes > 0 or q.backlogged:
                    last = u.pf_last
                    avg = u.pf_avg * d ** (slot - last) if slot > last else u.pf_avg
                    u.pf_avg = avg  # decayed to the start of this slot
                    u.pf_last = slot
                    keyed.append((-u.bits[off] / (avg if avg > 1e-9 else 1e-9), u.idx, u))
            if len(keyed) > 1:
                keyed.sort()
            order = [k[2] for k in keyed]
        else:
            start = self.rr_ptr % n
            order = ues[start:] + ues[:start] if start else ues
            self.rr_ptr = start + 1
        left = n_prb
        active = 0
        for u in order:
            q = u.queue
            backlogged = q.backlogged
            qbytes = q.bytes
            if qbytes <= 0 and not backlogged:
                continue
            active += 1
            bits = u.bits[off]
            if left <= 0 or bits <= 0.0:
                if q.dropper is not None:
                    q.dropper.on_slot(0, True)  # waiting with data: the served rate is 0
                continue
            carry = u.carry
            if backlogged:
                give = left
            else:
                need = (qbytes - carry) * 8.0 / bits
                give = int(need)
                if give < need:
                    give += 1
                if give > left:
                    give = left
                elif give <= 0:
                    give = 1
            left -= give
            avail = give * bits / 8.0 + carry
            budget = int(avail)
            used = q.dequeue(budget, now_us)
            u.carry = avail - budget if (backlogged or q.bytes > 0) else 0.0
            u.prb_used = give
            u.prb_total += give
            u.slot_bytes = used
            served.append(u)
        self.prb_idle = left
        self.active_ues = active
        if pf:
            for u in served:
                u.pf_avg = d * u.pf_avg + (1.0 - d) * u.slot_bytes * 8.0
                u.pf_last = slot + 1
        return served
