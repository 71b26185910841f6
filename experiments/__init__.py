"""The paper harness: where the simulator and the xApps' algorithm cores meet in one process.

Importing it registers the OCC xApp's engine as the simulator's "occ-engine" ABW source.
"""

from octoric.experiments import occ_source as _occ_source  # noqa: F401  (registers occ-engine)
