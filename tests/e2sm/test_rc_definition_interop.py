"""An E2SM-RC RAN function definition whose control styles carry the fields octoric does not
model, as srsRAN_Project release_25_10's DU sends them (ric-CallProcessIDFormat-Type,
ran-ControlOutcomeParameters-List): it parses, keeps them, and re-encodes to the same bytes.
Before, the parser refused such a definition, so an RC xApp could not discover the control
styles of a real srsRAN gNB."""

from __future__ import annotations

import pytest

from octoric.e2sm import rc
from octoric.e2sm.common import RanFunctionName

pytestmark = pytest.mark.unit


def _srsran_like() -> rc.RcRanFunctionDefinition:
    outcome = [{"ranParameter-ID": 1, "ranParameter-name": "DRB ID"},
               {"ranParameter-ID": 8, "ranParameter-name": "Dropped messages"}]  # fmt: skip
    styles = (
        rc.RcControlStyle(
            1, "Radio Bearer Control",
            (rc.RcControlAction(100, "Octopus content adaptation", ((1, "DRB ID"),)),),
            1, 1, 1,
            other={"ric-CallProcessIDFormat-Type": 1,
                   "ran-ControlOutcomeParameters-List": outcome},
        ),
        rc.RcControlStyle(
            2, "Radio Resource Allocation Control",
            (rc.RcControlAction(6, "Slice-level PRB quota", ((10, "RRM Policy Ratio List"),)),),
            1, 1, 1,
            other={"ric-CallProcessIDFormat-Type": 1},
        ),
    )  # fmt: skip
    name = RanFunctionName("ORAN-E2SM-RC", "1.3.6.1.4.1.53148.1.1.2.3", "RAN Control", 1)
    return rc.RcRanFunctionDefinition(name, None, None, styles)


def test_unmodelled_control_style_fields_round_trip() -> None:
    d = _srsran_like()
    data = rc.encode_rc(d)
    back = rc.decode_rc(rc.RcRanFunctionDefinition, data)
    assert back == d
    assert rc.encode_rc(back) == data
    assert back.control_styles is not None
    first = back.control_styles[0]
    assert [a.action_id for a in first.actions] == [100]
    assert first.other is not None and first.other["ric-CallProcessIDFormat-Type"] == 1


def test_octoric_own_definition_has_nothing_unmodelled() -> None:
    d = rc.octoric_ran_function_definition()
    back = rc.decode_rc(rc.RcRanFunctionDefinition, rc.encode_rc(d))
    assert back == d and all(c.other is None for c in back.control_styles or ())
