"""octoric: an O-RAN near-RT RIC xApp suite for real-time video over volatile 5G links.

The root package holds the core every component shares (CLI, configuration, logging,
supervisor, doctor). Sub-packages map onto the repository's top-level folders:
``octoric.e2sm`` is ``e2sm/``, ``octoric.ric`` is ``ric/``, ``octoric.sim`` is ``sim/``,
``octoric.xapps`` is ``xapps/``.
"""

__version__ = "0.1.0"
