"""The A1 policies ``octoric run`` creates at its start (``a1_policies`` in the config), as an
operator would: ``PUT /A1-P/v2/policytypes/{type}/policies/{id}`` to the run's a1 once the
xApps have started; then their enforcement status, polled for the status line and the report.

By default one: the demo scenario's Octopus flow gets the gNB's message dropper
(docs/octopus.md), so a first run shows the octopus xApp at work. A policy whose type no
enabled xApp serves is skipped (said so in the report).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

from octoric.config import A1PolicyConfig
from octoric.contracts import a1, auth
from octoric.contracts.schemas import OCTOPUS_POLICY_TYPE_ID, OCTOPUS_POLICY_TYPE_NAME
from octoric.errors import OctoricError
from octoric.rest_client import request_json
from octoric.supervisor import RunContext

log = logging.getLogger("octoric.a1-policies")
# the policy types octoric knows, by name, and the xApp that serves each
TYPE_IDS = {OCTOPUS_POLICY_TYPE_NAME: OCTOPUS_POLICY_TYPE_ID}
SERVED_BY = {OCTOPUS_POLICY_TYPE_ID: "octopus"}
POLL_S = 2.0


def _call(method: str, url: str, token: str, body: Any = None) -> tuple[int, Any]:
    status, answer = request_json(method, url, body, auth.bearer(token))
    return status, answer[:300] if isinstance(answer, str) else answer


def type_id(p: A1PolicyConfig) -> int | None:
    """The policy type id a configured policy names (by name or as a number); None: unknown."""
    if p.type in TYPE_IDS:
        return TYPE_IDS[p.type]
    return int(p.type) if p.type.isdigit() else None


class A1PoliciesComponent:
    name = "a1-policies"

    def __init__(self, policies: list[A1PolicyConfig], enabled_xapps: list[str]) -> None:
        self.policies = [p for p in policies if SERVED_BY.get(type_id(p) or -1) in enabled_xapps]
        self.skipped = [p.id for p in policies if p not in self.policies]
        self.enforce: dict[str, str] = {}  # policy id -> enforceStatus (or the PUT's error)
        self.reasons: dict[str, Any] = {}
        self._base = ""
        self._token = ""
        self._poll: asyncio.Task[None] | None = None

    def _url(self, p: A1PolicyConfig) -> str:
        return self._base + a1.policy_path(type_id(p) or p.type, p.id)  # known: see __init__

    async def start(self, ctx: RunContext) -> None:
        if not self.policies:
            return
        from octoric.ric.services import RicRuntime

        rt = RicRuntime.read(ctx.run_dir / "ric.json")
        self._base = f"http://127.0.0.1:{rt.ric.a1_rest_port}"
        self._token = rt.api_token
        for p in self.policies:
            code, body = await asyncio.to_thread(_call, "PUT", self._url(p), self._token, p.body)
            if code not in (200, 201, 202):
                raise OctoricError(f"a1 refused policy {p.id!r} (type {p.type}): {code} {body}")
            self.enforce[p.id] = "created"
            log.info("A1 policy %s (type %s) created: %s", p.id, p.type, json.dumps(p.body))
        self._poll = asyncio.create_task(self._poll_status())

    async def _poll_status(self) -> None:
        while True:
            for p in self.policies:
                with contextlib.suppress(OSError, ValueError):
                    code, body = await asyncio.to_thread(
                        _call, "GET", self._url(p) + "/status", self._token
                    )
                    if code == 200 and isinstance(body, dict):
                        self.enforce[p.id] = str(body.get("enforceStatus", "?"))
                        self.reasons[p.id] = body.get("enforceReason") or body.get("reasons")
            await asyncio.sleep(POLL_S)

    async def stop(self) -> None:
        # the policies stay in a1 (they end with the run's RIC); only the polling stops
        if self._poll is not None:
            self._poll.cancel()

    def status(self) -> str:
        if not self.policies:
            return "a1 policies: none"
        return "a1 policies: " + ", ".join(
            f"{p.id} {self.enforce.get(p.id, 'pending').lower()}" for p in self.policies
        )

    def report(self) -> dict[str, Any]:
        return {
            # one line for the end-of-run summary: each policy's enforcement status
            "enforcement": ", ".join(
                f"{p.id} {self.enforce.get(p.id, 'pending')}" for p in self.policies
            ) or "no policy",
            "policies": [
                {"id": p.id, "type": p.type, "body": p.body,
                 "enforce_status": self.enforce.get(p.id), "reasons": self.reasons.get(p.id)}
                for p in self.policies
            ],
            "skipped": self.skipped,
        }  # fmt: skip

    def failed(self) -> str | None:
        return None
