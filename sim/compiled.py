"""The simulator's hot modules compiled with mypyc, for speed (issue #14: 16 UEs on the
packet-level transport at >= 20x real time on one core; docs/sim.md "Speed").

``build(out)`` copies the package (``octoric/`` and the folders it links to) into ``out`` and
compiles ``HOT_MODULES`` there with mypyc, the compiler of mypy's project: the same typed
sources, so the same results (``tests/sim/test_compiled.py`` compares summaries), without the
interpreter's per-bytecode cost. The copy runs with ``PYTHONPATH=out``; the working tree is
never touched, so an edited ``.py`` is never shadowed by a stale extension. A stamp of the
sources' hash and mypy's version skips rebuilding what is current.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from octoric.sim.errors import SimError

# the per-packet and per-slot paths of 16 UEs on the transport (profiled: transport, engine
# dispatch, the scheduler, RLC queues, video sender/receiver, BBR / RoCC / Dumbo), and the flow
# kinds' per-frame and per-ACK handlers the engine calls
HOT_MODULES = (
    "sim/transport.py", "sim/rlc.py", "sim/engine.py", "sim/ran.py", "sim/packets.py",
    "sim/receiver.py", "sim/video.py", "sim/cc/bbr.py", "sim/cc/rocc.py", "sim/cc/dumbo.py",
    "sim/channels/fading.py", "sim/events.py", "sim/video_on_transport.py",
    "sim/flows/state.py", "sim/flows/packet_transport.py", "sim/flows/rtp_video.py",
    "sim/flows/transport_video.py",
)  # fmt: skip
STAMP = ".octoric-compiled"


def repo_root() -> Path:
    """The source tree: ``octoric/`` links its subpackages from here (an editable install)."""
    pkg = Path(__file__).resolve().parent.parent  # sim/ -> the tree holding sim/ and octoric/
    if not (pkg / "octoric" / "__init__.py").is_file():
        raise SimError(f"no octoric source tree at {pkg}: the compiled build needs a checkout")
    return pkg


def _sources(root: Path) -> list[Path]:
    pkg = root / "octoric"
    dirs = [pkg] + [root / p.name for p in pkg.iterdir() if p.is_symlink() and p.is_dir()]
    out: list[Path] = []
    for d in dirs:
        out += [p for p in d.rglob("*.py") if "__pycache__" not in p.parts]
    return sorted(out)


def _stamp(root: Path) -> str:
    try:
        import mypy.version
    except ImportError:
        raise SimError("mypyc comes with mypy: pip install mypy (make setup installs it)") from None
    h = hashlib.sha256(mypy.version.__version__.encode())
    for p in _sources(root):
        h.update(str(p.relative_to(root)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def build(out: Path, progress: Callable[[str], None] | None = None) -> Path:
    """Compile into ``out`` (created or refreshed) and return it: the ``PYTHONPATH`` entry."""
    root = repo_root()
    stamp = _stamp(root)
    if (out / STAMP).is_file() and (out / STAMP).read_text() == stamp:
        return out
    if progress:
        progress(f"[sim] compiling {len(HOT_MODULES)} modules with mypyc into {out} (~2 min)")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    pkg = root / "octoric"
    shutil.copytree(pkg, out / "octoric", symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    for link in pkg.iterdir():
        if link.is_symlink() and link.is_dir():
            shutil.copytree(root / link.name, out / link.name,
                            ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    mods = [f"octoric/{m}" for m in HOT_MODULES]
    res = subprocess.run([sys.executable, "-m", "mypyc", *mods], cwd=out, capture_output=True,
                         text=True, env={**os.environ, "MYPYC_OPT_LEVEL": "3"})  # fmt: skip
    (out / "mypyc.log").write_text(res.stdout + res.stderr)
    if res.returncode != 0:
        raise SimError(f"mypyc failed (exit {res.returncode}); see {out / 'mypyc.log'}")
    (out / STAMP).write_text(stamp)
    return out


def env(out: Path) -> dict[str, str]:
    """The environment of a process that runs the compiled copy."""
    return {**os.environ, "PYTHONPATH": str(out)}


def main(argv: list[str] | None = None) -> int:
    """``python -m octoric.sim.compiled [OUT]``: build (default ``build/sim-compiled``) and print
    the ``PYTHONPATH`` that runs it, e.g. ``PYTHONPATH=$(...) octoric sim run ...``."""
    args = sys.argv[1:] if argv is None else argv
    out = Path(args[0] if args else "build/sim-compiled").resolve()
    try:
        build(out, progress=lambda m: print(m, file=sys.stderr))
    except SimError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
