"""Issue #19: `make charts` passes on the real charts and fails on broken ones, and the
descriptor a chart ships is the file `octoric run` registers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from octoric.deploy import charts
from octoric.deploy.xapps_component import KNOWN

pytestmark = pytest.mark.integration


def _copy(name: str, tmp: Path) -> Path:
    """A real copy of charts/<name> (symlinks resolved), named as the xApp."""
    dst = tmp / name
    shutil.copytree(charts.CHARTS / name, dst, symlinks=False)
    return dst


def test_the_charts_pass(shared_dir: Path) -> None:
    report = charts.check(shared=shared_dir)
    assert report.problems == []
    want = sum(len(charts.values_files(c)) for c in charts.charts())
    assert len(report.checked) == want >= 10


def test_a_broken_template_fails(tmp_path: Path, shared_dir: Path) -> None:
    chart = _copy("occ", tmp_path)
    dep = chart / "templates" / "deployment.yaml"
    dep.write_text(dep.read_text().replace("containerPort:", "containerPortt:", 1))
    problems = charts.check([chart], shared=shared_dir).problems
    assert any("unknown field" in p and "containerPortt" in p for p in problems), problems


def test_an_insecure_chart_fails_the_policy_scan(tmp_path: Path, shared_dir: Path) -> None:
    chart = _copy("handover", tmp_path)
    values = chart / "values.yaml"
    values.write_text(values.read_text().replace("allowPrivilegeEscalation: false",
                                                 "allowPrivilegeEscalation: true"))  # fmt: skip
    problems = charts.check([chart], shared=shared_dir).problems
    assert any("checkov CKV_K8S_20" in p for p in problems), problems


def test_a_descriptor_that_lies_about_its_messages_fails(tmp_path: Path, shared_dir: Path) -> None:
    chart = _copy("octopus", tmp_path)
    d = json.loads((chart / "config-file.json").read_text())
    d["messaging"]["ports"][1]["txMessages"].remove("OCTORIC_OCTOPUS_STATUS")
    d["controls"]["no_such_control"] = 1
    (chart / "config-file.json").write_text(json.dumps(d))
    problems = charts.check([chart], shared=shared_dir).problems
    assert any("txMessages" in p and "OCTORIC_OCTOPUS_STATUS" in p for p in problems), problems
    assert any("no_such_control" in p for p in problems), problems


@pytest.mark.parametrize("name", ["occ", "handover", "octopus"])
def test_one_descriptor_for_the_chart_and_octoric_run(name: str) -> None:
    shipped = (charts.CHARTS / name / "config-file.json").resolve()
    assert shipped == KNOWN[name].descriptor_file.resolve()


def _render(chart: Path, *sets: str) -> list[dict[str, object]]:
    import yaml

    args = [charts.helm(), "template", "x", str(chart), "--namespace", "ricxapp"]
    for s in sets:
        args += ["--set", s]
    out = charts._run(args)
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def test_each_xapp_gets_an_api_token_from_a_secret_file() -> None:
    """State-changing REST calls need the API token (403 without one configured): the chart
    makes a Secret with a random token, mounts it read-only and names the file in
    OCTORIC_API_TOKEN_FILE (a file, not an environment variable: checkov CKV_K8S_35); or uses
    the operator's Secret."""
    import base64

    docs = _render(charts.CHARTS / "occ")
    (secret,) = [d for d in docs if d["kind"] == "Secret"]
    token = base64.b64decode(secret["data"]["token"]).decode()  # type: ignore[index]
    assert len(token) == 40 and token.isalnum()
    (dep,) = [d for d in docs if d["kind"] == "Deployment"]
    pod = dep["spec"]["template"]["spec"]  # type: ignore[index]
    (c,) = pod["containers"]
    env = {e["name"]: e.get("value") for e in c["env"]}
    assert "OCTORIC_API_TOKEN" not in env
    path = Path(env["OCTORIC_API_TOKEN_FILE"])
    vol = next(v for v in pod["volumes"] if "secret" in v)
    assert vol["secret"]["secretName"] == secret["metadata"]["name"]  # type: ignore[index]
    mount = next(m for m in c["volumeMounts"] if m["name"] == vol["name"])
    assert mount["readOnly"] and Path(mount["mountPath"]) / "token" == path
    mine = _render(charts.CHARTS / "occ", "apiToken.existingSecret=mine")
    assert not [d for d in mine if d["kind"] == "Secret"]
    (dep,) = [d for d in mine if d["kind"] == "Deployment"]
    vols = dep["spec"]["template"]["spec"]["volumes"]  # type: ignore[index]
    assert {"secretName": "mine", "defaultMode": 0o440} in [v.get("secret") for v in vols]


def test_occ_replicas_render_a_statefulset_with_a_service_pair_each(tmp_path: Path) -> None:
    """``replicaCount: 3`` (charts/occ/ci/replicas.yaml): each pod is named (its replica ID)
    and reachable through its own Services, the ClientEndpoint its subscriptions name; the
    other xApps refuse replicas."""
    import subprocess

    import yaml

    vf = charts.CHARTS / "occ" / "ci" / "replicas.yaml"
    argv = [charts.helm(), "template", "t", str(charts.CHARTS / "occ"), "-f", str(vf),
            "--namespace", "ricxapp"]  # fmt: skip
    r = subprocess.run(argv, capture_output=True, text=True, check=True)
    docs = [d for d in yaml.safe_load_all(r.stdout) if isinstance(d, dict)]
    (sts,) = [d for d in docs if d["kind"] == "StatefulSet"]
    assert not [d for d in docs if d["kind"] == "Deployment"]
    assert sts["spec"]["replicas"] == 3
    env = {e["name"]: e for e in sts["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["OCTORIC_OCC_REPLICA"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    names = {d["metadata"]["name"] for d in docs if d["kind"] == "Service"}
    for i in range(3):
        assert {f"service-ricxapp-occ-{i}-rmr", f"service-ricxapp-occ-{i}-http"} <= names
        (svc,) = [d for d in docs if d["kind"] == "Service"
                  and d["metadata"]["name"] == f"service-ricxapp-occ-{i}-rmr"]  # fmt: skip
        assert svc["spec"]["selector"]["statefulset.kubernetes.io/pod-name"] == f"ricxapp-occ-{i}"
    (cm,) = [d for d in docs if d["kind"] == "ConfigMap" and "OCTORIC_CLIENT_HOST" in d["data"]]
    host = cm["data"]["OCTORIC_CLIENT_HOST"]
    assert host == "service-ricxapp-occ-{ordinal}-http.ricxapp"
    from octoric.xapps.base import subscription

    env_vars = {"OCTORIC_CLIENT_HOST": host, "OCTORIC_OCC_REPLICA": "ricxapp-occ-2"}
    mp = pytest.MonkeyPatch()
    for k, v in env_vars.items():
        mp.setenv(k, v)
    try:
        assert subscription.client_host("10.0.0.7") == "service-ricxapp-occ-2-http.ricxapp"
        mp.setenv("OCTORIC_OCC_REPLICA", "no-ordinal")
        with pytest.raises(ValueError, match="does not end in -<ordinal>"):
            subscription.client_host("10.0.0.7")
    finally:
        mp.undo()
    bad = subprocess.run([charts.helm(), "template", "t", str(charts.CHARTS / "handover"),
                          "--set", "replicaCount=2"], capture_output=True, text=True)  # fmt: skip
    assert bad.returncode != 0 and "only the occ xApp runs as replicas" in bad.stderr
