"""How the handover xApp tells application servers (issue #12): webhooks with signed
deliveries (``webhooks``, subscriptions in ``subscriptions``) and a server-sent-events stream
(``stream``); ``Notifier`` puts them together behind one non-blocking ``offer``."""

from octoric.xapps.handover.notify.notifier import Notifier

__all__ = ["Notifier"]
