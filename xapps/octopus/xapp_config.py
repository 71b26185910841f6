"""The octopus xApp's ``controls`` (descriptor section), validated."""

from __future__ import annotations

import re
from dataclasses import dataclass

from octoric.xapps.base.errors import XappConfigError

_GUAMI = re.compile(r"^[0-9a-fA-F]{6}:\d{1,3}:\d{1,4}:\d{1,2}$")


@dataclass(frozen=True)
class OctopusXappConfig:
    assert_period_s: float = 1.0  # every policy is pushed again this often (repairs, counters)
    control_timeout_s: float = 2.0  # no ACK or failure by then: not enforced (timeout)
    default_guami: str = "00f110:1:1:0"  # PLMN hex:AMF region:set:pointer of the policies' UEs
    publish_status: bool = True  # OCTORIC_OCTOPUS_STATUS (30502)
    handler_id: str = "octopus"  # how a1 names this xApp in a policy's status

    def __post_init__(self) -> None:
        if not 0.1 <= self.assert_period_s <= 3600:
            raise XappConfigError("controls.assert_period_s", "must be 0.1..3600 s")
        if not 0.1 <= self.control_timeout_s <= 60:
            raise XappConfigError("controls.control_timeout_s", "must be 0.1..60 s")
        if not _GUAMI.match(self.default_guami):
            raise XappConfigError(
                "controls.default_guami", "must be PLMN hex:region:set:pointer, e.g. 00f110:1:1:0"
            )
        region, aset, ptr = (int(x) for x in self.default_guami.split(":")[1:])
        if region > 255 or aset > 1023 or ptr > 63:
            raise XappConfigError(
                "controls.default_guami", "region <= 255, set <= 1023, pointer <= 63"
            )
        if not self.handler_id:
            raise XappConfigError("controls.handler_id", "must not be empty")
