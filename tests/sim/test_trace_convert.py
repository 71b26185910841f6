"""Per-second throughput logs -> Mahimahi delivery traces (``sim.channels.traces``,
``octoric sim mahimahi-from-csv``): the rates survive the round trip through the reader."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pytest

from octoric.cli import main
from octoric.sim.channels.traces import mahimahi_from_rates, read_mahimahi, read_rate_csv
from octoric.sim.errors import TraceError

pytestmark = pytest.mark.unit


def test_rates_become_evenly_spread_deliveries_with_the_trace_length_as_period(
    tmp_path: Path,
) -> None:
    kbps = np.array([12_000.0, 0.0, 1_200.0, 6_000.0])  # 1000, 0, 100, 500 packets
    stamps = mahimahi_from_rates(kbps)
    assert stamps[-1] == 4000  # the loop period is the trace's length
    # second s holds ms (1000 s, 1000 (s + 1)]: its last packet ends it
    per_s = np.bincount((np.asarray(stamps) - 1) // 1000, minlength=4)
    assert per_s.tolist() == [1000, 0, 100, 500]
    assert np.diff(stamps[1000:1100]).max() == 10  # spread evenly within the second
    p = tmp_path / "t.down"
    p.write_text("".join(f"{t}\n" for t in stamps))
    tr = read_mahimahi(p)
    assert tr.period_ms == 4000
    assert tr.mean_bps == pytest.approx(kbps.mean() * 1000, rel=1e-6)


def test_fractions_of_a_packet_carry_and_a_silent_end_keeps_the_period() -> None:
    stamps = mahimahi_from_rates(np.array([6.0, 6.0, 0.0]))  # half a packet per second
    assert stamps == [2000, 3000]  # one packet after two seconds, then the period marker


def test_rate_csv_holds_gaps_and_rejects_bad_values(tmp_path: Path) -> None:
    p = tmp_path / "log.csv"
    p.write_text("Timestamp,DL_bitrate\na,-\nb,800\nc,-\nd,1600\n")
    assert read_rate_csv(p).tolist() == [800.0, 800.0, 800.0, 1600.0]
    p.write_text("Timestamp,DL_bitrate\na,fast\n")
    with pytest.raises(TraceError, match="DL_bitrate must be a number") as e:
        read_rate_csv(p)
    assert e.value.line == 2
    p.write_text("Timestamp,DL_bitrate\na,-5\n")
    with pytest.raises(TraceError, match="must be >= 0"):
        read_rate_csv(p)
    p.write_text("Timestamp,Other\na,1\n")
    with pytest.raises(TraceError, match="no 'DL_bitrate' column"):
        read_rate_csv(p)


def test_cli_converts_every_matching_member_of_an_archive(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    z = tmp_path / "logs.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("set/Download/Driving/a.csv", "Timestamp,DL_bitrate\nx,1200\ny,2400\n")
        zf.writestr("set/Download/Static/b.csv", "Timestamp,DL_bitrate\nx,1200\n")
        zf.writestr("__MACOSX/set/Download/Driving/._a.csv", "junk")
    out = tmp_path / "out"
    assert main(["sim", "mahimahi-from-csv", str(z), "--match", "Driving", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["a.down"]
    assert read_mahimahi(out / "a.down").mean_bps == pytest.approx(1.8e6)
    assert "a.down: 2 rows, mean 1.8 Mbit/s, 300 packets" in capsys.readouterr().out
    assert main(["sim", "mahimahi-from-csv", str(z), "--match", "Nope", "--out", str(out)]) != 0
    assert "no CSV in the archive matches 'Nope'" in capsys.readouterr().err
