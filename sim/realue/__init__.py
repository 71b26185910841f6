"""The real-UE path: real applications' packets through the simulated cell (issue #21).

``netns``: the namespaces and TUN devices (root only); ``path``: the readers, the engine's
sink for delivered packets and the counters. ``LiveSim`` starts it for every UE whose flow
is ``traffic: real``. User guide: docs/emulated-cell.md.
"""
