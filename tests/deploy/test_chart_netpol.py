"""Issue #43: the charts' NetworkPolicies guard every port of every xApp (`make charts` runs
this file after ``python -m octoric.deploy.charts``).

For each chart under charts/ and each values file of charts/ci/, the chart is rendered with
helm and its NetworkPolicy is checked against the rendered objects:

1. it selects the Deployment's pods, in their namespace, for Ingress;
2. every port of the xApp is named by an ingress rule that has a ``from``: the Deployment's
   containerPorts, each Service port (through its targetPort) and each port of the descriptor
   the chart ships (config-file.json as rendered into its ConfigMap);
3. nothing admits everyone: no rule without ``from``, no peer that matches every pod of a
   namespace (no pod labels) or every address (an ipBlock /0), unless the values file being
   rendered put that very peer there (the operator widened it);
4. who gets in, evaluated with NetworkPolicy's semantics on the chart's own peers: RMR data
   from e2term and submgr (a1mediator for an xApp with A1 policies, and the octoric xApps whose
   txMessages this one receives, found by rendering their charts), RMR route from rtmgr alone,
   HTTP from submgr and appmgr; platform pods are recognised by the ``app`` label O-RAN SC's
   ric-dep charts give them (<platform namespace>-<component>); and refused: every other
   platform component on each port, the platform's Redis (dbaas) and e2mgr, an unlabelled pod
   beside the xApp, a pod elsewhere wearing a platform label;
5. the peers the values add (senders, metrics, extraFrom) reach their port; senders only the
   xApps that serve them (occ, handover).

The tests at the end show the check failing on broken policies.
"""

from __future__ import annotations

import copy
import ipaddress
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from octoric.deploy import charts as chartcheck

pytestmark = pytest.mark.integration

Doc = dict[str, Any]
PLATFORM = ("e2term", "submgr", "rtmgr", "appmgr", "a1mediator")
# who must reach each descriptor port (platform components; more below)
NEEDS = {"rmr-data": {"e2term", "submgr"}, "rmr-route": {"rtmgr"}, "http": {"submgr", "appmgr"}}
SERVES_SENDERS = {"occ", "handover"}
POD_IP = "10.244.3.7"  # what a stranger pod's address looks like to an ipBlock


# --- rendering ---------------------------------------------------------------------------------


def render(chart: Path, values: Path | None = None, namespace: str = "ricxapp") -> list[Doc]:
    cmd = [chartcheck.helm(), "template", "t", str(chart), "--namespace", namespace]
    if values is not None:
        cmd += ["-f", str(values)]
    r = chartcheck._run(cmd)
    if r.returncode != 0:
        raise RuntimeError(f"helm template {chart.name}: {r.stderr.strip()[-400:]}")
    return [d for d in yaml.safe_load_all(r.stdout) if isinstance(d, dict)]


def _merge(base: Any, over: Any) -> Any:
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = _merge(base.get(k), v)
        return out
    return copy.deepcopy(over)


def load_values(chart: Path, values: Path | None) -> tuple[Doc, Doc]:
    """(the chart's defaults merged with the file, the file alone)."""
    defaults = yaml.safe_load((chart / "values.yaml").read_text()) or {}
    given = (yaml.safe_load(values.read_text()) or {}) if values else {}
    return _merge(defaults, given), given


def _peer_lists(values: Doc) -> dict[str, list[Doc]]:
    """The peers a values tree adds, by where they go: senders, metrics, extraFrom.<port>."""
    np = values.get("networkPolicy") or {}
    out = {"senders": list(np.get("senders") or []), "metrics": list(np.get("metrics") or [])}
    for k, v in (np.get("extraFrom") or {}).items():
        out[f"extraFrom.{k}"] = list(v or [])
    return out


@dataclass
class Rendered:
    name: str
    docs: list[Doc]
    values: Doc  # merged
    given: Doc  # the values file alone

    def kind(self, kind: str) -> list[Doc]:
        return [d for d in self.docs if d.get("kind") == kind]

    @property
    def deployment(self) -> Doc:
        (dep,) = self.kind("Deployment")
        return dep

    @property
    def pod_labels(self) -> dict[str, str]:
        return dict(self.deployment["spec"]["template"]["metadata"]["labels"])

    @property
    def namespace(self) -> str:
        return str(self.deployment["metadata"]["namespace"])

    @property
    def descriptor(self) -> Doc:
        for cm in self.kind("ConfigMap"):
            if "config-file.json" in (cm.get("data") or {}):
                return dict(json.loads(cm["data"]["config-file.json"]))
        raise LookupError(f"{self.name}: no ConfigMap with config-file.json")

    def rmr(self, key: str) -> set[str]:
        for p in self.descriptor["messaging"]["ports"]:
            if p.get("name") == "rmr-data":
                return set(p.get(key) or [])
        return set()


# --- NetworkPolicy semantics -------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    what: str
    namespace: str
    labels: tuple[tuple[str, str], ...] = ()
    ip: str = POD_IP

    @staticmethod
    def pod(what: str, namespace: str, **labels: str) -> Source:
        return Source(what, namespace, tuple(sorted(labels.items())))


def selector_matches(sel: Doc, labels: dict[str, str]) -> bool:
    """A LabelSelector; {} matches everything."""
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in sel.get("matchExpressions") or []:
        key, op, vals = e["key"], e["operator"], set(e.get("values") or [])
        if op == "In" and labels.get(key) not in vals:
            return False
        if op == "NotIn" and key in labels and labels[key] in vals:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def peer_admits(peer: Doc, policy_ns: str, src: Source) -> bool:
    if "ipBlock" in peer:
        ip = ipaddress.ip_address(src.ip)
        block = peer["ipBlock"]
        net = ipaddress.ip_network(block["cidr"], strict=False)
        if ip.version != net.version or ip not in net:
            return False
        return not any(
            ip in ipaddress.ip_network(x, strict=False)
            for x in block.get("except") or []
            if ipaddress.ip_network(x, strict=False).version == ip.version
        )
    ns_sel, pod_sel = peer.get("namespaceSelector"), peer.get("podSelector")
    if ns_sel is None and pod_sel is None:
        return False  # not a valid peer; admits nothing
    if ns_sel is None:
        if src.namespace != policy_ns:
            return False
    elif not selector_matches(ns_sel, {"kubernetes.io/metadata.name": src.namespace}):
        return False
    return pod_sel is None or selector_matches(pod_sel, dict(src.labels))


def port_matches(pp: Doc, port: int, named: dict[str, int]) -> bool:
    """A NetworkPolicyPort against a TCP container port (``named``: the pod's port names)."""
    if pp.get("protocol", "TCP") != "TCP":
        return False
    if "port" not in pp:
        return True
    p = pp["port"]
    if isinstance(p, str) and not p.isdigit():
        return named.get(p) == port
    lo = int(p)
    return lo <= port <= int(pp.get("endPort", lo))


def rules_for(policy: Doc, port: int, named: dict[str, int]) -> list[Doc]:
    out = []
    for rule in policy["spec"].get("ingress") or []:
        ports = rule.get("ports") or []
        if not ports or any(port_matches(pp, port, named) for pp in ports):
            out.append(rule)
    return out


def admits(policy: Doc, src: Source, port: int, named: dict[str, int]) -> bool:
    ns = policy["metadata"]["namespace"]
    for rule in rules_for(policy, port, named):
        peers = rule.get("from") or []
        if not peers or any(peer_admits(p, ns, src) for p in peers):
            return True
    return False


def wide(peer: Doc) -> str | None:
    """Why a peer admits too much (every pod of a namespace or more, or every address)."""
    if "ipBlock" in peer:
        net = ipaddress.ip_network(peer["ipBlock"]["cidr"], strict=False)
        return f"every address ({net})" if net.prefixlen == 0 else None
    pod_sel = peer.get("podSelector")
    if pod_sel is None or not (pod_sel.get("matchLabels") or pod_sel.get("matchExpressions")):
        ns_sel = peer.get("namespaceSelector")
        if ns_sel is not None and not (ns_sel.get("matchLabels") or ns_sel.get("matchExpressions")):
            return "every pod of every namespace"
        return "every pod of a namespace"
    return None


# --- the check ---------------------------------------------------------------------------------


def platform_apps(values: Doc) -> tuple[str, dict[str, list[str]]]:
    """The platform namespace and each component's ``app`` labels: the values' where given,
    else what ric-dep's charts set (<namespace>-<component>, e2term <namespace>-e2term-alpha)."""
    pl = (values.get("networkPolicy") or {}).get("platform") or {}
    ns = pl.get("namespace") or "ricplt"
    apps = {}
    for c in PLATFORM:
        default = f"{ns}-e2term-alpha" if c == "e2term" else f"{ns}-{c}"
        apps[c] = list(pl.get(c) or [default])
    return ns, apps


@dataclass
class Ports:
    named: dict[str, int] = field(default_factory=dict)  # container port name -> number
    where: dict[int, list[str]] = field(default_factory=dict)  # number -> where it is declared
    role: dict[str, int] = field(default_factory=dict)  # descriptor name -> number


def xapp_ports(r: Rendered, problems: list[str]) -> Ports:
    tag = r.name
    out = Ports()
    for c in r.deployment["spec"]["template"]["spec"]["containers"]:
        for p in c.get("ports") or []:
            n = int(p["containerPort"])
            if p.get("protocol", "TCP") != "TCP":
                problems.append(f"{tag}: container port {n} is {p['protocol']}, not TCP")
            if p.get("name"):
                out.named[p["name"]] = n
            out.where.setdefault(n, []).append(f"containerPort {p.get('name', '')} {n}")
    for svc in r.kind("Service"):
        sname = svc["metadata"]["name"]
        for p in svc["spec"].get("ports") or []:
            tp = p.get("targetPort", p["port"])
            n = out.named.get(tp) if isinstance(tp, str) and not tp.isdigit() else int(tp)
            if n is None:
                problems.append(
                    f"{tag}: Service {sname} port {p['port']}: targetPort {tp!r} "
                    "names no container port"
                )
                continue
            out.where.setdefault(n, []).append(f"Service {sname} port {p['port']}")
    for p in r.descriptor["messaging"]["ports"]:
        n = int(p["port"])
        out.role[p["name"]] = n
        if n not in out.where:
            problems.append(f"{tag}: descriptor port {p['name']} {n} is no container port")
        out.where.setdefault(n, []).append(f"descriptor {p['name']} {n}")
    return out


def check_xapp(r: Rendered, peers: dict[str, Rendered]) -> list[str]:
    tag = r.name
    problems: list[str] = []
    np = r.values.get("networkPolicy") or {}
    pols = r.kind("NetworkPolicy")
    if not np.get("enabled"):
        return [f"{tag}: networkPolicy.enabled is off: no port of the xApp is guarded"]
    if len(pols) != 1:
        return [f"{tag}: want one NetworkPolicy, rendered {len(pols)}"]
    (pol,) = pols
    spec = pol["spec"]
    if pol["metadata"].get("namespace") != r.namespace:
        problems.append(f"{tag}: the NetworkPolicy is not in the Deployment's namespace")
    if not selector_matches(spec.get("podSelector") or {}, r.pod_labels) or not (
        spec.get("podSelector") or {}
    ).get("matchLabels"):
        problems.append(f"{tag}: the NetworkPolicy's podSelector does not select the xApp's pods")
    if "Ingress" not in (spec.get("policyTypes") or []):
        problems.append(f"{tag}: the NetworkPolicy does not list Ingress in policyTypes")
    ports = xapp_ports(r, problems)

    # 2. coverage
    for n, where in sorted(ports.where.items()):
        rules = [x for x in rules_for(pol, n, ports.named) if x.get("from")]
        if not rules:
            problems.append(
                f"{tag}: port {n} ({'; '.join(where)}) is covered by no ingress rule with a from"
            )

    # 3. nothing admits everyone unless the values file says so
    widened = [p for ps in _peer_lists(r.given).values() for p in ps]
    for i, rule in enumerate(spec.get("ingress") or []):
        names = [str(pp.get("port", "*")) for pp in rule.get("ports") or []] or ["every port"]
        if not rule.get("from"):
            problems.append(
                f"{tag}: ingress rule {i} ({', '.join(names)}) has no from: it "
                "admits from everywhere"
            )
        for peer in rule.get("from") or []:
            why = wide(peer)
            if why and peer not in widened:
                problems.append(
                    f"{tag}: ingress rule {i} ({', '.join(names)}) admits {why} "
                    f"({json.dumps(peer)}), which the values did not ask for"
                )

    # 4. who gets in: the chart's own peers (those the values add are set aside)
    added = [p for ps in _peer_lists(r.values).values() for p in ps]
    own = copy.deepcopy(pol)
    for rule in own["spec"].get("ingress") or []:
        if rule.get("from"):
            rule["from"] = [p for p in rule["from"] if p not in added]
            if not rule["from"]:
                rule["from"] = [{"ipBlock": {"cidr": "192.0.2.0/32"}}]  # nothing left: admits none
    pns, apps = platform_apps(r.values)
    comp = {c: [Source.pod(f"{c} ({a})", pns, app=a) for a in apps[c]] for c in PLATFORM}
    needs = {k: set(v) for k, v in NEEDS.items()}
    if any(p.get("policies") for p in r.descriptor["messaging"]["ports"]) or any(
        t.startswith("A1_") for t in r.rmr("rxMessages")
    ):
        needs["rmr-data"].add("a1mediator")
    strangers = [
        Source.pod("an unlabelled pod beside the xApp", r.namespace),
        Source.pod("the platform's Redis (dbaas)", pns, app=f"{pns}-dbaas"),
        Source.pod("e2mgr", pns, app=f"{pns}-e2mgr"),
        Source.pod(
            "a pod outside the platform namespace labelled as submgr",
            "default",
            app=f"{pns}-submgr",
        ),
        Source.pod(
            "a pod labelled octoric/sender=true elsewhere", "default", **{"octoric/sender": "true"}
        ),
    ]
    for role, port in ports.role.items():
        want = needs.get(role, set())
        for c in PLATFORM:
            for src in comp[c]:
                got = admits(own, src, port, ports.named)
                if c in want and not got:
                    problems.append(f"{tag}: {role} port {port} refuses {src.what}")
                elif c not in want and got:
                    problems.append(f"{tag}: {role} port {port} admits {src.what}")
        for src in strangers:
            if admits(own, src, port, ports.named):
                problems.append(f"{tag}: {role} port {port} admits {src.what}")
    if "http" in ports.role and ((np.get("platform") or {}).get("prometheus")):
        src = Source.pod("ric-dep's Prometheus server", pns, app="prometheus", component="server")
        if not admits(own, src, ports.role["http"], ports.named):
            problems.append(f"{tag}: http port refuses {src.what} (platform.prometheus is on)")
    # octoric xApps that send this one messages
    if "rmr-data" in ports.role:
        for other in peers.values():
            if other.name == r.name:
                continue
            sent = other.rmr("txMessages") & r.rmr("rxMessages")
            src = Source(
                "the " + other.name + " xApp",
                other.namespace,
                tuple(sorted(other.pod_labels.items())),
            )
            got = admits(own, src, ports.role["rmr-data"], ports.named)
            if sent and not got:
                problems.append(
                    f"{tag}: rmr-data port refuses the {other.name} xApp, which "
                    f"sends it {sorted(sent)}"
                )
            elif got and not sent:
                problems.append(
                    f"{tag}: rmr-data port admits the {other.name} xApp, which sends it nothing"
                )

    # 5. the values' peers reach their port
    rule_of = {}
    for role, port in ports.role.items():
        rule_of[role] = [p for x in rules_for(pol, port, ports.named) for p in x.get("from") or []]
    goes = {
        "senders": "http",
        "metrics": "http",
        "extraFrom.rmrData": "rmr-data",
        "extraFrom.rmrRoute": "rmr-route",
        "extraFrom.http": "http",
    }
    lists = _peer_lists(r.values)
    for key, peer_list in lists.items():
        role = goes.get(key)
        if role is None:
            problems.append(f"{tag}: networkPolicy.{key} is not a port the chart knows")
            continue
        for peer in peer_list:
            present = peer in rule_of.get(role, [])
            if key == "senders" and r.name not in SERVES_SENDERS:
                elsewhere = [p for k, ps in lists.items() if k != "senders" for p in ps]
                if present and peer not in elsewhere:
                    problems.append(f"{tag}: serves no senders but admits {json.dumps(peer)}")
            elif not present:
                problems.append(
                    f"{tag}: networkPolicy.{key} peer {json.dumps(peer)} is not "
                    f"admitted to the {role} port"
                )
    return problems


def check(chart_dirs: list[Path], values_files: list[Path | None]) -> list[str]:
    problems: list[str] = []
    for vf in values_files:
        rendered: dict[str, Rendered] = {}
        for chart in chart_dirs:
            vals, given = load_values(chart, vf)
            try:
                rendered[chart.name] = Rendered(chart.name, render(chart, vf), vals, given)
            except RuntimeError as e:
                problems.append(f"{chart.name} [{vf.stem if vf else 'defaults'}]: {e}")
        for r in rendered.values():
            problems += [f"[{vf.stem if vf else 'defaults'}] {p}" for p in check_xapp(r, rendered)]
    return problems


# --- tests -------------------------------------------------------------------------------------


@pytest.mark.parametrize("values", chartcheck.values_files(), ids=lambda p: p.stem)
def test_the_policies_cover_every_port(values: Path) -> None:
    problems = check(chartcheck.charts(), [values])
    assert problems == [], "\n".join(problems)


def test_every_xapp_is_checked() -> None:
    assert {c.name for c in chartcheck.charts()} == {"occ", "handover", "octopus"}


def _copy(tmp: Path) -> dict[str, Path]:
    """Real copies of the three charts (symlinks resolved)."""
    out = {}
    for c in chartcheck.charts():
        out[c.name] = tmp / c.name
        shutil.copytree(c, out[c.name], symlinks=False)
    return out


def _edit(chart: Path, path: str, old: str, new: str, count: int = 1) -> None:
    f = chart / path
    text = f.read_text()
    assert old in text, f"{path}: {old!r} not found"
    f.write_text(text.replace(old, new, count))


def test_a_port_left_out_of_the_policy_fails(tmp_path: Path) -> None:
    c = _copy(tmp_path)
    _edit(
        c["handover"],
        "templates/networkpolicy.yaml",
        "        - port: rmrroute\n          protocol: TCP\n",
        "        - port: 1\n",
    )
    problems = check(list(c.values()), [None])
    assert any(
        "handover: port 4561" in p and "covered by no ingress rule" in p for p in problems
    ), problems
    assert not [p for p in problems if "occ:" in p or "octopus:" in p], problems


def test_a_rule_without_from_fails_unless_the_values_widen_it(tmp_path: Path) -> None:
    c = _copy(tmp_path)
    pol = "templates/networkpolicy.yaml"
    _edit(
        c["occ"],
        pol,
        "    # RMR route: tables from rtmgr only\n    - from:",
        "    - ports: [{port: rmrroute}]\n    - from:",
    )
    problems = check([c["occ"]], [None])
    assert any("has no from: it admits from everywhere" in p for p in problems), problems

    c = _copy(tmp_path / "wide")
    # the chart's own default admitting every pod of every namespace: refused
    _edit(c["octopus"], "values.yaml", "  metrics: []", "  metrics: [{namespaceSelector: {}}]")
    problems = check([c["octopus"]], [None])
    assert any("admits every pod of every namespace" in p for p in problems), problems
    # the same peer asked for by the operator's values file: accepted
    wide = tmp_path / "wide.yaml"
    wide.write_text("networkPolicy: {metrics: [{namespaceSelector: {}}]}\n")
    assert check([c["octopus"]], [wide]) == []


def test_a_namespace_wide_platform_peer_fails(tmp_path: Path) -> None:
    """The policy before issue #43: everything in the platform namespace (Redis included)."""
    c = _copy(tmp_path)
    _edit(
        c["occ"],
        "templates/_helpers.tpl",
        "  podSelector:\n    matchExpressions:\n"
        "      - key: app\n        operator: In\n        values: {{ $apps | toJson }}\n",
        "",
    )
    problems = check([c["occ"]], [None])
    assert any("admits the platform's Redis (dbaas)" in p for p in problems), problems
    assert any("admits every pod of a namespace" in p for p in problems), problems


def test_a_missing_peer_xapp_fails(tmp_path: Path) -> None:
    """occ receives OCTORIC_HO_EVENT from handover: its RMR data port must admit it."""
    c = _copy(tmp_path)
    _edit(
        c["occ"],
        "templates/networkpolicy.yaml",
        '"OCTORIC_HO_EVENT" "handover"',
        '"OCTORIC_HO_EVENT" "nobody"',
    )
    problems = check(list(c.values()), [None])
    assert any("occ: rmr-data port refuses the handover xApp" in p for p in problems), problems


def test_a_wrong_platform_label_fails(tmp_path: Path) -> None:
    """rtmgr's route tables must be admitted by the label ric-dep gives rtmgr's pods."""
    c = _copy(tmp_path)
    _edit(
        c["octopus"],
        "templates/networkpolicy.yaml",
        '(printf "%s-%s" $pns $c)',
        '(printf "%s-%s-x" $pns $c)',
    )
    problems = check([c["octopus"]], [None])
    assert any("octopus: rmr-route port 4561 refuses rtmgr" in p for p in problems), problems


def test_the_schema_refuses_a_misspelt_widening(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("networkPolicy: {extraFrom: {rmrdata: [{ipBlock: {cidr: 10.0.0.0/8}}]}}\n")
    with pytest.raises(RuntimeError, match="rmrdata"):
        render(chartcheck.CHARTS / "occ", bad)


def test_the_policy_follows_the_ports_the_values_set() -> None:
    """charts/ci/custom-ports.yaml moves every port: the policy's named ports follow them, and
    a policy naming the descriptor's default numbers instead would leave them open to no one."""
    chart, vf = chartcheck.CHARTS / "occ", chartcheck.CHARTS / "ci" / "custom-ports.yaml"
    r = Rendered("occ", render(chart, vf), *load_values(chart, vf))
    problems: list[str] = []
    ports = xapp_ports(r, problems)
    assert problems == []
    assert ports.role == {"http": 18080, "rmr-data": 14560, "rmr-route": 14561}
    (pol,) = r.kind("NetworkPolicy")
    for rule in pol["spec"]["ingress"]:
        for pp in rule["ports"]:
            pp["port"] = {"http": 8090, "rmrdata": 4560, "rmrroute": 4561}[pp["port"]]
    r.docs = [d for d in r.docs if d.get("kind") != "NetworkPolicy"] + [pol]
    problems = check_xapp(r, {})
    for n in (18080, 14560, 14561):
        assert any(f"port {n} (" in p and "covered by no ingress rule" in p for p in problems)
