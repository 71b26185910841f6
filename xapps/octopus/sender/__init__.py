"""The Octopus sender library (SEC'23 §4.1-4.2), for applications.

- :class:`MessageMarker`: cuts each application message into datagrams of at most ``mtu``
  bytes, each starting with the Octopus header (docs/octopus-header.md), per-stream message
  ids.
- Message policies of the paper's case studies: :class:`TemporalSvc` (§6.1),
  :class:`SpatialSvc` (§6.2), :class:`Volumetric` (§6.3): which priority, drop flag, priority
  threshold and bitrate threshold each message carries.
- :class:`TransportBuffer`: the send buffer with the same Algorithm 1 as the gNB, its
  drop-by-bitrate fed by the transport's bandwidth estimate (the Octopus transport; with the
  gNB logic off this is the paper's OctoBBR).

Standard library and ``octoric.contracts`` only (import-linter contract ``octopus-sender``), so an
application can vendor it with ``contracts/``. C senders use liboctopus's ``octopus/octopus.h``.
"""

from octoric.xapps.octopus.sender.buffer import TransportBuffer
from octoric.xapps.octopus.sender.marking import MessageMarker, Role
from octoric.xapps.octopus.sender.policies import SpatialSvc, TemporalSvc, Volumetric

__all__ = ["MessageMarker", "Role", "SpatialSvc", "TemporalSvc", "TransportBuffer", "Volumetric"]
