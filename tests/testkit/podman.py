"""podman for tests that run the xApp images (``make images``) on this machine.

Rootful podman, with two adjustments this kind of machine needs (neither changes what runs in
the container):

- the host mounts cgroup v1 controllers beside a cgroup2 hierarchy (hybrid), which crun refuses
  ("cgroups in hybrid mode not supported"): each podman call runs in a private mount namespace
  without the cgroup2 mount, with ``--cgroups=disabled`` (no cgroup limits, as without a
  Kubernetes resource limit);
- the sandbox refuses the rlimits podman asks crun for by default: ``nofile`` and ``nproc`` are
  given below the host's.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

HYBRID_CGROUP2 = Path("/sys/fs/cgroup/unified")
RUN_FLAGS = ["--cgroups=disabled", "--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096"]


def unavailable() -> str | None:
    """Why images cannot be run here, or None."""
    if not shutil.which("podman"):
        return "podman is not installed (apt-get install -y podman buildah mmdebstrap)"
    if not shutil.which("unshare"):
        return "unshare (util-linux) is not installed"
    return None


def argv(*args: str) -> list[str]:
    """A podman command line for this machine (see the module docstring)."""
    if HYBRID_CGROUP2.is_dir() and (HYBRID_CGROUP2 / "cgroup.controllers").exists():
        script = f'umount {HYBRID_CGROUP2} 2>/dev/null; exec podman "$@"'
        return ["unshare", "-m", "sh", "-c", script, "podman", *args]
    return ["podman", *args]


def podman(*args: str, timeout: float = 120, check: bool = True) -> str:
    r = subprocess.run(argv(*args), capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise RuntimeError(f"podman {' '.join(args)}: {r.returncode}: {r.stderr.strip()[-2000:]}")
    return r.stdout


def image_exists(ref: str) -> bool:
    return subprocess.run(argv("image", "exists", ref), capture_output=True).returncode == 0


def inspect(name: str) -> dict[str, Any]:
    data: list[dict[str, Any]] = json.loads(podman("inspect", name))
    return data[0]
