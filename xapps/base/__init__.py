"""The shared shell of octoric's xApps: a small layer around ricxappframe's ``RMRXapp``.

- ``config``: the descriptor (CONFIG_FILE) and typed ``controls`` sections, hot reload;
- ``sdl``: JSON values in the xApp's SDL namespace ``octoric.<xapp>``;
- ``subscription``: submgr REST client (the CamelCase body O-RAN SC's submgr expects);
- ``discovery``: E2 nodes from the R-NIB (``e2Manager`` namespace, as ricxappframe reads it);
- ``http``: a threaded REST server (health, ``/metrics``, subscription responses, the xApp's API);
- ``shell``: ``XappShell``, which ties them to an ``RMRXapp``.
"""
