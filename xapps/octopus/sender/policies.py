"""The message policies of SEC'23's case studies: what each message of a frame carries.

- §6.1 temporal SVC (VP8, three temporal layers, Fig. 7): a frame of priority i may be dropped
  when a newer frame with threshold k <= i arrives. Every frame is a dropper message. The
  I-frame (priority 0, threshold 0) supersedes everything queued before it; TL0 frames
  (priority 1) drop queued TL1/TL2 frames (threshold 2); TL1 (priority 2, threshold 2); TL2
  (priority 3, threshold 3). The simulator's senders use the same roles
  (``sim/video.py: temporal_role``; a test compares them).
- §6.2 spatial SVC (three quality layers Q0/Q1/Q2, each layer of each frame a message):
  drop-by-bitrate with thresholds 0, B1 ~ 0.5 B, B2 ~ B (B: the transport's estimate when the
  GoP started, cumulative rates); the first Q0 message of each GoP is a dropper with threshold
  0, which drops all queued frames of the previous GoP.
- §6.3 volumetric video: four cells per frame, five point-density layers per cell, each a
  message; front cells (0, 1) before occluded ones (2, 3), lower layers before higher. The
  paper's Fig. 10 priorities are not in its text; ours: front cell layer l -> priority l,
  occluded cell layer l -> priority min(7, l + 3). The first layer of cell 0 is a dropper
  message with thresholds cycling 3, 2, 1, 0 frame by frame, as the paper sets them.
"""

from __future__ import annotations

from dataclasses import dataclass

from octoric.xapps.octopus.sender.marking import Role


@dataclass(frozen=True)
class TemporalSvc:
    gop: int = 300  # frames per GoP; its first frame is the I-frame

    def role(self, frame: int) -> Role:
        j = frame % self.gop if self.gop > 0 else frame
        if j == 0:
            return Role(priority=0, drop=True, priority_threshold=0)
        k = j % 4
        if k == 0:  # TL0
            return Role(priority=1, drop=True, priority_threshold=2)
        if k == 2:  # TL1
            return Role(priority=2, drop=True, priority_threshold=2)
        return Role(priority=3, drop=True, priority_threshold=3)  # TL2

    @staticmethod
    def layer(role: Role) -> int:
        """Temporal layer of a role (-1: the I-frame), for the receiver's decoder model."""
        return {0: -1, 1: 0, 2: 1}.get(role.priority, 2)


@dataclass(frozen=True)
class SpatialSvc:
    gop: int = 10  # the paper shortens the GoP to 10 frames
    cumulative: tuple[float, ...] = (0.2, 0.5, 1.0)  # Q0, Q1, Q2 as fractions of B

    def roles(self, frame: int, gop_estimate_bps: float) -> list[Role]:
        """One role per quality layer of ``frame``; ``gop_estimate_bps``: B when the GoP
        started."""
        first = frame % self.gop == 0
        out = []
        for k, c in enumerate(self.cumulative):
            kbps = 0 if k == 0 else int(gop_estimate_bps * c / 1000.0)
            out.append(Role(priority=k, drop=first and k == 0, bitrate_threshold_kbps=kbps))
        return out


@dataclass(frozen=True)
class Volumetric:
    cells: int = 4
    layers: int = 5
    front_cells: tuple[int, ...] = (0, 1)
    thresholds: tuple[int, ...] = (3, 2, 1, 0)

    def roles(self, frame: int) -> list[list[Role]]:
        """roles[cell][layer] of ``frame``."""
        out = []
        for cell in range(self.cells):
            row = []
            for layer in range(self.layers):
                prio = layer if cell in self.front_cells else min(7, layer + 3)
                if cell == 0 and layer == 0:
                    thr = self.thresholds[frame % len(self.thresholds)]
                    row.append(Role(priority=prio, drop=True, priority_threshold=thr))
                else:
                    row.append(Role(priority=prio))
            out.append(row)
        return out
