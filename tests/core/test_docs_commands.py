"""Every ``octoric ...`` command the docs show exists and answers ``--help`` (issue #16: a
documented command that has gone away, or never came, fails here).

Commands are taken from inline code (`` `octoric ...` ``) and code blocks of README.md,
docs/*.md and the folders' READMEs; each is walked down the real argument parser as far as
its words are subcommands, and ``python -m octoric.cli <those words> --help`` must exit 0."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest

from octoric.cli import build_parser

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[2]
INLINE = re.compile(r"`(?:\.venv/bin/)?octoric ([a-z][a-z0-9 -]*)")
BLOCK_LINE = re.compile(r"^\s*(?:\$ )?(?:\.venv/bin/)?octoric ([a-z][a-z0-9 -]*)")


def _docs() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")),
            *sorted(REPO.glob("*/README.md"))]  # fmt: skip


def mentions() -> dict[str, list[str]]:
    """Command words -> where the docs show them ("file:line")."""
    out: dict[str, list[str]] = {}
    for doc in _docs():
        in_block = False
        for n, line in enumerate(doc.read_text().splitlines(), 1):
            if line.lstrip().startswith("```"):
                in_block = not in_block
                continue
            found = [m.group(1) for m in INLINE.finditer(line)]
            if in_block and (m := BLOCK_LINE.match(line)):
                found.append(m.group(1))
            for words in found:
                out.setdefault(words.strip(), []).append(f"{doc.relative_to(REPO)}:{n}")
    return out


def _subparsers(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            return dict(a.choices)
    return {}


def command_path(words: str) -> list[str] | None:
    """The leading words that are subcommands, or None if the first is not one."""
    parser = build_parser()
    path: list[str] = []
    for w in words.split():
        subs = _subparsers(parser)
        if w not in subs:
            break
        path.append(w)
        parser = subs[w]
    return path or None


def _documented_command_paths() -> list[tuple[str, ...]]:
    """Every command the docs show, as its parser path; each must exist."""
    found = mentions()
    assert len(found) > 10  # the docs do show commands
    unknown = {w: where for w, where in found.items() if command_path(w) is None}
    assert not unknown, f"documented commands that do not exist: {unknown}"
    return sorted({tuple(p) for w in found if (p := command_path(w))})


def test_documented_commands_exist_and_their_parsers_answer_help(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """make test's quick form of the test below: the same commands, each parser's ``--help``
    asked in process (~3 s, where a program per command takes 60-85 s on 2 cores)."""
    for path in _documented_command_paths():
        with pytest.raises(SystemExit) as exit_:
            build_parser().parse_args([*path, "--help"])
        out = capsys.readouterr().out
        assert exit_.value.code in (0, None) and "usage:" in out, (path, out[-500:])


@pytest.mark.slow  # 60-85 s: a program per command (make test runs the in-process form above)
def test_documented_commands_exist_and_answer_help() -> None:
    for path in _documented_command_paths():
        r = subprocess.run([sys.executable, "-m", "octoric.cli", *path, "--help"],
                           capture_output=True, text=True, timeout=60)  # fmt: skip
        assert r.returncode == 0 and "usage:" in r.stdout, (path, r.stderr[-500:])


def test_readme_keeps_the_status_the_data_and_the_stock_gnb_notes() -> None:
    """issue #16: a newcomer learns from README what works and what is planned, where the
    ../shared data comes from (and that `make eval` needs it), and what OCC does with a
    stock gNB; each section failing here means it went missing."""
    text = (REPO / "README.md").read_text()
    status = text.split("## Status", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in status.splitlines() if ln.startswith("| ") and "---" not in ln][1:]
    for part in ("RIC", "simulator", "OCC xApp", "handover xApp", "octopus", "Helm"):
        assert any(part in r for r in rows), f"README status table has no row for {part}"
    assert all(("works" in r or "planned" in r) for r in rows), rows
    # issue #40: one short line per part, the detail in docs/status.md
    cells = [c.strip() for ln in text.splitlines() if ln.startswith("|")
             for c in ln.strip().strip("|").split(" | ")]  # fmt: skip
    assert max(map(len, cells)) <= 200, [c[:80] for c in cells if len(c) > 200]
    shared = text.split("## Data from ../shared", 1)[1].split("\n## ", 1)[0]
    assert "make eval" in shared and "github.com/ravinet/mahimahi" in shared
    stock = text.split("**OCC and a stock gNB.**", 1)[1].split("\n\n", 1)[0]
    assert "degraded mode" in stock and "unsupported_nodes" in stock


def test_the_docs_index_lists_every_page() -> None:
    """issue #40: docs/README.md is the index; a page it does not link is a page nobody finds."""
    index = (REPO / "docs" / "README.md").read_text()
    pages = {p.name for p in (REPO / "docs").glob("*.md")} - {"README.md"}
    assert pages and not {p for p in pages if f"]({p})" not in index}
