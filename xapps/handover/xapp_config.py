"""The handover xApp's ``controls`` (descriptor section), validated."""

from __future__ import annotations

from dataclasses import dataclass

from octoric.xapps.base.errors import XappConfigError
from octoric.xapps.handover.notify.targets import parse_entry


@dataclass(frozen=True)
class HandoverXappConfig:
    nodes: tuple[str, ...] = ()  # only these meids; empty: every connected node offering RC
    discovery_period_s: float = 1.0
    subscription_timeout_s: float = 10.0  # no outcome by then: ask again
    publish_events: bool = True  # OCTORIC_HO_EVENT (30501)
    event_retry_s: float = 5.0  # a 30501 without a route yet is tried again this long
    forget_s: float = 60.0  # a UE not reported for this long is forgotten
    max_handover_s: float = 30.0  # a start without an end for this long is dropped
    detection: str = "auto"  # auto: RC where a node offers it, KPM otherwise; or only "rc"/"kpm"
    kpm_period_ms: int = 100  # KPM path: one UE-level report per node this often
    kpm_granularity_ms: int = 10  # ... in granules this long (the precision of its timing)
    ping_pong_s: float = 3.0  # back to the cell left within this long after: a ping-pong
    event_log: str = ""  # a file to append every event to (JSON lines); "": none
    webhook_timeout_s: float = 2.0  # one delivery
    webhook_max_retries: int = 5  # then that event is given up (counted)
    webhook_expire_after_s: float = 300.0  # failing this long: the subscription expires
    # loopback, link-local and private webhook targets allowed: "ADDR|CIDR[:PORT]" (IPv6 in
    # brackets with a port); anything else non-global is refused (notify/targets.py, #43)
    webhook_allow: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not 0.05 <= self.discovery_period_s <= 3600:
            raise XappConfigError("controls.discovery_period_s", "must be 0.05..3600 s")
        if self.subscription_timeout_s <= 0:
            raise XappConfigError("controls.subscription_timeout_s", "must be > 0")
        if not 0 < self.webhook_timeout_s <= 60:
            raise XappConfigError("controls.webhook_timeout_s", "must be in (0, 60] s")
        if not 0 <= self.webhook_max_retries <= 20:
            raise XappConfigError("controls.webhook_max_retries", "must be 0..20")
        if not 1 <= self.webhook_expire_after_s <= 86_400:
            raise XappConfigError("controls.webhook_expire_after_s", "must be 1..86400 s")
        for entry in self.webhook_allow:
            try:
                parse_entry(entry)
            except ValueError as e:
                raise XappConfigError("controls.webhook_allow", str(e)) from None
        if self.detection not in ("auto", "rc", "kpm"):
            raise XappConfigError("controls.detection", "must be auto, rc or kpm")
        if not 10 <= self.kpm_period_ms <= 60_000:
            raise XappConfigError("controls.kpm_period_ms", "must be 10..60000 ms")
        if not 1 <= self.kpm_granularity_ms <= self.kpm_period_ms:
            raise XappConfigError("controls.kpm_granularity_ms", "must be 1..kpm_period_ms")
        if self.kpm_period_ms % self.kpm_granularity_ms:
            raise XappConfigError("controls.kpm_granularity_ms", "must divide kpm_period_ms")
        for name in ("forget_s", "max_handover_s", "event_retry_s", "ping_pong_s"):
            if not 0 < getattr(self, name) <= 86_400:
                raise XappConfigError(f"controls.{name}", "must be in (0, 86400] s")
