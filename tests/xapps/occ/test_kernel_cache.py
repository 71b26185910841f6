"""The OCC kernel imports where numba cannot write its compile cache: an image's read-only root
filesystem. Found when the OCC image first ran (#41): numba raised "cannot cache function ...:
no locator available" at import, and the xApp never started. The image now gives numba a cache
in /tmp (NUMBA_CACHE_DIR); without one the kernel is compiled at each start."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[3]


@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("unshare"),
    reason="a read-only bind mount in a private mount namespace needs root and unshare",
)
def test_the_kernel_compiles_on_a_read_only_tree() -> None:
    # the tree (and a HOME inside it, numba's user-wide cache) read-only, as the image's root
    script = (
        f"mount --bind {REPO} {REPO} && mount -o remount,bind,ro {REPO} && "
        f'exec "$0" -c "from octoric.xapps.occ import kernel; print(kernel.compiled())"'
    )
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["HOME"] = str(REPO / "build" / "no-home")
    r = subprocess.run(["unshare", "-m", "sh", "-c", script, sys.executable], env=env,
                       capture_output=True, text=True, timeout=300, cwd=REPO)  # fmt: skip
    assert r.returncode == 0 and r.stdout.strip() == "True", r.stderr[-2000:]
