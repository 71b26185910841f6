"""octoric's xApps on O-RAN SC's own platform managers, without Kubernetes (issue #41).

``deploy/oran_platform/build.sh`` builds O-RAN SC's submgr, rtmgr, appmgr and e2mgr from their
public sources beside the project; ``deploy/oran_platform/run.sh`` runs them with their Helm
defaults, each in a network namespace of its own on a private bridge (a pod each), with
octoric's e2term and A1 stand-ins (``python -m octoric.deploy.oran_platform.standins``), a
simulated gNB and the three xApps as their charts configure them (docs/deploy.md, "Run on
O-RAN SC's own platform managers, by hand").
"""
