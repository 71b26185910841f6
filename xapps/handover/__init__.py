"""The handover xApp (Octopus ToN'22): handovers detected at the RAN, told to whoever listens.

First step (issue #11): ``detector`` (the pure core: E2SM-RC REPORT style 4 UE information ->
``HoEvent``) and the xApp around it (``xapp``: RC subscriptions on every node that offers
E2SM-RC, RMR 30501 OCTORIC_HO_EVENT out). See docs/handover.md.
"""
