"""A call never runs into a folder that holds an earlier call: its done-* markers would end the
new call at once and its recorded files would be overwritten (no browser needed)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from octoric.sim.chromium.call import run_call


@pytest.mark.parametrize("left", ["call.json", "done-sender", "done-receiver"])
def test_a_folder_with_a_call_in_it_is_refused(tmp_path: Path, left: str) -> None:
    (tmp_path / left).write_text("{}")
    (tmp_path / "sniff-ue.txt").write_text("1 2 3 10.77.1.2\n")
    with pytest.raises(FileExistsError, match="holds a call already"):
        asyncio.run(run_call("srv-ns", "ue-ns", "chromium-gcc", 1.0, tmp_path))
    assert (tmp_path / "sniff-ue.txt").read_text() == "1 2 3 10.77.1.2\n"
