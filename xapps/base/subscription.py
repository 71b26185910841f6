"""A client of submgr's REST API with the CamelCase body O-RAN SC's submgr expects.

ricxappframe 3.2.2's ``NewSubscriber.Subscribe()`` posts snake_case keys, which submgr does
not read; this client builds the JSON itself (docs/ric.md, RMR-WIRE.md). The outcome of a
subscription arrives later as ``POST <client>/ric/v1/subscriptions/response``;
``SubscriptionResponse.parse`` reads that body.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from octoric.contracts import auth
from octoric.rest_client import request_json
from octoric.xapps.base.errors import RestError, SubmgrError

DEFAULT_SUBMGR_URL = "http://service-ricplt-submgr-http.ricplt:8088/ric/v1/subscriptions"


CLIENT_HOST_ENV = "OCTORIC_CLIENT_HOST"


def client_host(default: str) -> str:
    """The ``ClientEndpoint.Host`` of our requests: ``$OCTORIC_CLIENT_HOST`` (the charts set
    it to the xApp's HTTP Service, ``service-ricxapp-<name>-http.<namespace>``), else
    ``default`` (the address the xApp listens on). O-RAN SC's submgr POSTs the outcome to
    ``<Host>:<HTTPPort>`` and asks rtmgr to route the indications to ``<Host with "http"
    replaced by "rmr">:<RMRPort>``, the name rtmgr knows the xApp by (appmgr registers every
    xApp as ``service-ricxapp-<name>-rmr.ricxapp``); a pod address there is refused (400).
    A replica of a sharded xApp (``OCTORIC_OCC_REPLICA``, its pod's name ``<name>-<n>``) fills
    ``{ordinal}`` with its ``n``: its own Services, so its nodes' indications come to it."""
    host = os.environ.get(CLIENT_HOST_ENV) or default
    if "{ordinal}" in host:
        replica = os.environ.get("OCTORIC_OCC_REPLICA", "")
        ordinal = replica.rpartition("-")[2]
        if not ordinal.isdigit():
            raise ValueError(
                f"{CLIENT_HOST_ENV}={host!r} names a replica's Services, but OCTORIC_OCC_REPLICA="
                f"{replica!r} does not end in -<ordinal> (a StatefulSet pod's name)"
            )
        host = host.replace("{ordinal}", ordinal)
    return host


def submgr_url() -> str:
    """``$SUBMGR_URL`` (set by octoric.deploy.xapp_env), else the O-RAN SC service name."""
    return os.environ.get("SUBMGR_URL") or DEFAULT_SUBMGR_URL


@dataclass(frozen=True)
class SubscriptionRequest:
    """One E2 subscription: a node, a RAN function, one event trigger and one report action."""

    meid: str
    ran_function_id: int
    event_trigger: bytes
    action_definition: bytes
    host: str  # where submgr POSTs the outcome, and the RMR host
    http_port: int
    rmr_port: int
    xapp_event_instance_id: int = 1
    action_id: int = 1
    action_type: str = "report"
    timeout_s: int = 2
    retries: int = 2
    subscription_id: str | None = None

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "ClientEndpoint": {
                "Host": self.host,
                "HTTPPort": self.http_port,
                "RMRPort": self.rmr_port,
            },
            "Meid": self.meid,
            "RANFunctionID": self.ran_function_id,
            "E2SubscriptionDirectives": {
                "E2TimeoutTimerValue": self.timeout_s,
                "E2RetryCount": self.retries,
                "RMRRoutingNeeded": True,
            },
            "SubscriptionDetails": [
                {
                    "XappEventInstanceId": self.xapp_event_instance_id,
                    "EventTriggers": list(self.event_trigger),
                    "ActionToBeSetupList": [
                        {
                            "ActionID": self.action_id,
                            "ActionType": self.action_type,
                            "ActionDefinition": list(self.action_definition),
                            "SubsequentAction": {
                                "SubsequentActionType": "continue",
                                "TimeToWait": "zero",
                            },
                        }
                    ],
                }
            ],
        }
        if self.subscription_id is not None:
            body["SubscriptionId"] = self.subscription_id
        return body


@dataclass(frozen=True)
class SubscriptionInstance:
    xapp_event_instance_id: int
    e2_event_instance_id: int
    error_cause: str
    error_source: str

    @property
    def ok(self) -> bool:
        return not self.error_cause


@dataclass(frozen=True)
class SubscriptionResponse:
    """What submgr POSTs to ``/ric/v1/subscriptions/response``."""

    subscription_id: str
    instances: tuple[SubscriptionInstance, ...]

    @classmethod
    def parse(cls, body: Any) -> SubscriptionResponse:
        """Raises ``RestError`` (400) naming what is wrong."""
        if not isinstance(body, dict) or not isinstance(body.get("SubscriptionId"), str):
            raise RestError(400, "bad_subscription_response", "SubscriptionId (string) is required")
        raw = body.get("SubscriptionInstances")
        if not isinstance(raw, list):
            raise RestError(
                400, "bad_subscription_response", "SubscriptionInstances must be a list"
            )
        out = []
        for i, inst in enumerate(raw):
            if not isinstance(inst, dict):
                raise RestError(
                    400,
                    "bad_subscription_response",
                    f"SubscriptionInstances[{i}] must be an object",
                )
            xid, eid = inst.get("XappEventInstanceId"), inst.get("E2EventInstanceId")
            if not isinstance(xid, int) or not isinstance(eid, int):
                raise RestError(
                    400,
                    "bad_subscription_response",
                    f"SubscriptionInstances[{i}]: XappEventInstanceId and E2EventInstanceId "
                    "must be integers",
                )
            # O-RAN SC's submgr reports a success with ErrorCause " ": blank is no error
            cause = str(inst.get("ErrorCause") or "").strip()
            out.append(SubscriptionInstance(xid, eid, cause, str(inst.get("ErrorSource") or "")))
        return cls(body["SubscriptionId"], tuple(out))


class SubmgrClient:
    """Blocking calls (from the xApp's worker threads) to submgr's REST API."""

    def __init__(
        self, url: str | None = None, timeout_s: float = 5.0, token: str | None = None
    ) -> None:
        """``token``: the run's API token (default ``$OCTORIC_API_TOKEN``; none on O-RAN SC)."""
        self.url = (url or submgr_url()).rstrip("/")
        self.timeout_s = timeout_s
        self.token = auth.token_from_env() if token is None else token

    def _call(
        self, method: str, url: str, body: Any = None, timeout_s: float | None = None
    ) -> tuple[int, Any]:
        try:
            return request_json(
                method, url, body, auth.bearer(self.token), timeout_s or self.timeout_s
            )
        except (OSError, ValueError) as e:
            raise SubmgrError(f"submgr at {url} unreachable: {e}") from None

    def subscribe(self, req: SubscriptionRequest) -> str:
        """POST; returns the SubscriptionId (the outcome comes to the client's HTTP port)."""
        status, body = self._call("POST", self.url, req.body())
        if status != 201 or not isinstance(body, dict) or "SubscriptionId" not in body:
            raise SubmgrError(f"submgr refused the subscription to {req.meid}: {status} {body}")
        return str(body["SubscriptionId"])

    def delete(self, subscription_id: str, timeout_s: float | None = None) -> bool:
        """DELETE; True if submgr removed it, False if it did not know it."""
        status, body = self._call("DELETE", f"{self.url}/{subscription_id}", None, timeout_s)
        if status in (200, 204):
            return True
        if status == 404:
            return False
        raise SubmgrError(f"submgr could not delete {subscription_id}: {status} {body}")

    def list(self) -> list[dict[str, Any]]:
        status, body = self._call("GET", self.url)
        if status != 200 or not isinstance(body, list):
            raise SubmgrError(f"submgr list failed: {status} {body}")
        return body
