"""Default ports of the embedded deployment (ARCHITECTURE.md "RMR contracts"; docs/ric.md).

Every listener binds loopback unless configured otherwise. An RMR endpoint on port ``p`` also
listens on ``p + 1`` for route-table pushes. Tests pick free ports; these are for ``make run``.
On Kubernetes every xApp pod uses the platform's usual ``XAPP_RMR`` / ``XAPP_HTTP``.
"""

from __future__ import annotations

LOOPBACK = "127.0.0.1"

# the E2 interface (SCTP where the kernel has it, else octoric's TCP framing, same port)
E2 = 36421

# embedded RIC platform
E2TERM_RMR = 38000
E2TERM_HTTP = 38080  # e2term's /metrics
SUBMGR_RMR = 4570
SUBMGR_REST = 8088
A1_REST = 10000
A1_RMR = 10020
APPMGR_REST = 8080
RTMGR_REST = 3800
RTMGR_RMR = 3801
REDIS = 6379
DASHBOARD = 8099  # octoric run's live web dashboard (read-only)
# the emulated cell's Chromium call: its page server in the server namespace (the receiver's
# browser, in a UE's namespace, loads its page and signals through the cell)
CHROMIUM_PAGES = 8080

# xApps on the embedded RIC: (RMR data port, HTTP port)
OCC_RMR, OCC_HTTP = 4560, 8090
HANDOVER_RMR, HANDOVER_HTTP = 4580, 8091
OCTOPUS_RMR, OCTOPUS_HTTP = 4590, 8092
XAPP_PORTS: dict[str, tuple[int, int]] = {
    "occ": (OCC_RMR, OCC_HTTP),
    "handover": (HANDOVER_RMR, HANDOVER_HTTP),
    "octopus": (OCTOPUS_RMR, OCTOPUS_HTTP),
}

# an xApp pod on the O-RAN SC RIC (Kubernetes)
XAPP_RMR = 4560
XAPP_HTTP = 8080
