"""The `octoric` command as a user runs it (a real subprocess of the installed entry point)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from octoric import __version__, cli

pytestmark = pytest.mark.unit


def octoric(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "octoric.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_version() -> None:
    r = octoric("version")
    assert r.returncode == 0 and r.stdout.strip() == f"octoric {__version__}"


def test_help_lists_every_subcommand() -> None:
    r = octoric("--help")
    assert r.returncode == 0
    for name in ("run", "ric", "sim", "e2sm", "bench", "eval", "version", "doctor"):
        assert name in r.stdout


def test_no_command_prints_help_and_fails() -> None:
    r = octoric()
    assert r.returncode == 2 and "usage: octoric" in r.stdout


def test_print_config_merges_overrides() -> None:
    r = octoric("run", "--print-config", "--duration", "4", "--seed", "9", "--set", "sim.ues=3")
    assert r.returncode == 0, r.stderr
    assert "duration: 4.0" in r.stdout and "seed: 9" in r.stdout and "ues: 3" in r.stdout


def test_bad_config_is_one_clear_line(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("sim:\n  uess: 3\n")
    r = octoric("run", "-c", str(f), "--print-config")
    assert r.returncode == 1
    assert r.stderr.startswith("octoric: error: ") and f"{f}:2" in r.stderr
    assert "Traceback" not in r.stderr


def test_unbuilt_area_says_which_issue(monkeypatch: pytest.MonkeyPatch) -> None:
    # Pretend an area has no cli module yet: the placeholder names the issue that brings it.
    monkeypatch.setitem(cli._PLUGGABLE, "eval", ("octoric.xapps.no_such_cli", "x", "#7"))
    parser = cli.build_parser()
    args = parser.parse_args(["eval"])
    assert args.func(args) == 2


def test_real_import_errors_inside_a_plugin_surface(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A plugin whose own import fails for another reason must not be disguised as "not built".
    (tmp_path / "octoric_probe_plugin.py").write_text("import no_such_dependency_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(cli._PLUGGABLE, "eval", ("octoric_probe_plugin", "x", "#7"))
    with pytest.raises(ModuleNotFoundError, match="no_such_dependency_xyz"):
        cli.build_parser()


def test_a_closed_pipe_ends_quietly() -> None:
    """`octoric doctor | head -1` (issue #16): no BrokenPipe traceback, the pipeline's code."""
    import subprocess
    import sys

    p = subprocess.run(
        f"{sys.executable} -m octoric.cli doctor | head -c 1",
        shell=True, capture_output=True, text=True, timeout=60,
        executable="/bin/bash",
    )  # fmt: skip
    assert "Traceback" not in p.stderr and "BrokenPipe" not in p.stderr, p.stderr


def test_friendly_defaults(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue #16: `e2sm decode` defaults to E2AP-PDU; `sim run --plot` without --json is an
    error before any work; `eval occ` without traces names where to get them."""
    from octoric.cli import main
    from octoric.e2sm import e2ap
    from octoric.e2sm.e2ap_ies import RicRequestId

    pdu = e2ap.encode_e2ap(e2ap.RicSubscriptionDeleteRequest(RicRequestId(1, 2), 2))
    assert main(["e2sm", "decode", "--hex", pdu.hex()]) == 0
    assert "RICsubscriptionDeleteRequest" in capsys.readouterr().out
    assert main(["sim", "run", "--plot", "--duration", "1"]) == 1
    err = capsys.readouterr().err
    assert "--plot writes its PNGs beside the summary: give --json OUT" in err
    missing = tmp_path / "nope"
    # a bad option value: exit 2, as argparse gives (every paper checks its options first)
    assert main(["eval", "occ", "--traces", str(missing), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"no trace folder {missing}" in err and "mahimahi" in err
