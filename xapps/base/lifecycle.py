"""The one life cycle of octoric's xApps.

ricxappframe's RMRXapp is the model: the framework owns start and stop, and an xApp gives its
handlers, its state and its configuration. ``XappBase.start`` runs, in this order:

1. configuration: the descriptor (``CONFIG_FILE``) through ``apply_config``; one that does not
   validate at start is fatal (``XappConfigError``), as a pod would crash-loop; later edits that
   do not validate are refused and counted (``XappShell``);
2. SDL, then ``restore``: the state a previous run of the xApp kept (after a crash or kill -9);
3. HTTP (health, metrics, the xApp's REST routes);
4. ``prepare``: what must be ready before the first message (timers, compiled kernels);
5. RMR with the xApp's ``handlers`` (those named by ``inline`` run in RMR's receive thread);
6. ``announce``: messages to send once RMR is up (e.g. asking a1 for the current policies);
7. the xApp's ``workers`` (background threads that run until the stop event);
8. E2 subscriptions, for an xApp that has ``node_subs``: after RMR, so one reported active is
   one whose indications this process receives.

``XappBase.stop`` sets the stop event, calls ``checkpoint`` (the state to SDL) and ``halt``
(stop what does not watch the stop event), deletes the E2 subscriptions and deregisters from
appmgr, so the route manager drops the xApp's routes at once (RMRXapp's own stop takes ~15 s;
the process then exits: ``main.run_forever``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection
from typing import Any

from octoric.xapps.base.node_subscriptions import NodeSubscriptions
from octoric.xapps.base.sdl import SdlStore
from octoric.xapps.base.shell import MessageHandler, XappShell

log = logging.getLogger("xapps.base")


class XappBase:
    """An xApp: subclasses give ``apply_config`` and ``handlers``, and the other hooks they
    need; ``start`` and ``stop`` are the framework's."""

    def __init__(
        self,
        name: str,
        rmr_port: int,
        http_port: int,
        host: str,
        sdl: SdlStore | None,
        rx: Collection[int],
        tx: Collection[int],
    ) -> None:
        self.name = name
        self.shell = XappShell(name, rmr_port, http_port, host, sdl)
        self.shell.declare(rx, tx)
        self.shell.on_config = self.apply_config
        self.node_subs: NodeSubscriptions | None = None  # an xApp that subscribes to E2 nodes
        self._stop = threading.Event()  # set at stop: every worker returns

    # --- what an xApp gives --------------------------------------------------------------------
    def apply_config(self, descriptor: dict[str, Any]) -> None:
        """Apply the descriptor's ``controls`` (raise ``XappConfigError`` to refuse them)."""
        raise NotImplementedError

    def handlers(self) -> dict[int, MessageHandler]:
        """The handler of each RMR message type the xApp receives."""
        raise NotImplementedError

    def inline(self) -> Collection[int]:
        """Message types handled in RMR's receive thread (none: behind ricxappframe's queue)."""
        return ()

    def restore(self) -> None:
        """Read back the state a previous run kept in SDL."""

    def prepare(self) -> None:
        """What must be ready before the first message arrives."""

    def announce(self) -> None:
        """Messages to send once RMR is up."""

    def workers(self) -> dict[str, Callable[[], None]]:
        """Background threads by name; each runs until ``self._stop`` is set."""
        return {}

    def halt(self) -> None:
        """Stop what does not watch the stop event (after the checkpoint)."""

    def checkpoint(self) -> None:
        """Write the state changed since the last checkpoint to SDL."""

    # --- the life cycle ------------------------------------------------------------------------
    def start(self) -> None:
        self.apply_config(self.shell.load_config())
        self.shell.start_sdl(self._stop)
        self.restore()
        if self.node_subs is not None:
            self.shell.on_subscription_response = self.node_subs.on_response
        self.shell.start_http()
        self.prepare()
        self.shell.start_rmr(self.handlers(), inline=self.inline())
        self.announce()
        for name, work in self.workers().items():
            threading.Thread(target=work, name=name, daemon=True).start()
        if self.node_subs is not None:
            threading.Thread(
                target=self.node_subs.run, args=(self._stop,), name="discovery", daemon=True
            ).start()
        log.info("%s xApp up: RMR %d, HTTP %d", self.name, self.shell.rmr_port,
                 self.shell.http_port)  # fmt: skip

    def stop(self) -> None:
        self._stop.set()
        self.checkpoint()
        self.halt()
        if self.node_subs is not None:
            self.node_subs.stop()
        if self.shell.xapp is not None:
            try:
                self.shell.xapp.deregister()
            except Exception as e:  # best effort: appmgr may be gone already
                log.warning("%s: deregistration failed: %s", self.name, e)
