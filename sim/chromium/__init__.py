"""A real Chromium WebRTC call across the emulated cell (docs/emulated-cell.md, "A Chromium
call"): the page server and its pages (``pageserver.py``, ``web/``), a kernel-timestamped
packet recorder for each end of the cell (``sniff.py``) and the harness that runs one call
of an arm on a live run (``call.py``)."""
