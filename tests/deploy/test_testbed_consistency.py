"""Issue #18: the testbed's configuration files agree with each other and with srsRAN.

One PLMN, TAC, slice (SST/SD), DNN, AMF address and E2 endpoint run through three places that
nothing else ties together: the gNB configs (``srsran_agent/configs/gnb_*.yml``), the Open5GS
configs (``open5gs_config/*.yaml``) and the subscriber provisioning (``provision.sh`` and the SIM
CSV). ``check()`` reads them all and lists every disagreement; every gNB key must also be one of
srsRAN_Project release_25_10's option names (``srsran_release_25_10_options.txt``, derived from
its CLI11 schema by ``srsran_agent/tools/derive_options.py``). Pure Python and PyYAML: no gNB,
core or RIC runs here, so whether srsRAN or Open5GS *accept* the values is not tested, only that
the keys exist and the files agree.
"""

from __future__ import annotations

import csv
import importlib.util
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from octoric.contracts import ports

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
GNB_DIR = REPO / "srsran_agent" / "configs"
CORE_DIR = REPO / "open5gs_config"
OPTIONS = GNB_DIR / "srsran_release_25_10_options.txt"
# keys octoric's patch series adds to the gnb (srsran_agent/patches; one per line, with its patch)
SERIES_OPTIONS = GNB_DIR / "srsran_series_options.txt"
# the gNB that runs on one machine with octoric's RIC (octoric testbed live): its E2 endpoint is
# loopback over TCP, not the lab's RIC address
RFLESS = "gnb_rfless.yml"
NGAP_PORT = 38412  # TS 38.412; Open5GS's AMF listens here (its ngap.server has no port key)


# ----------------------------------------------------------------------------------- reading


def key_paths(node: object, prefix: tuple[str, ...] = ()) -> Iterator[str]:
    """Every dotted key path of a YAML document; list items add no index (a.b[0].c -> a.b.c)."""
    if isinstance(node, dict):
        for key, value in node.items():
            path = (*prefix, str(key))
            yield ".".join(path)
            yield from key_paths(value, path)
    elif isinstance(node, list):
        for item in node:
            yield from key_paths(item, prefix)


def load_options(path: Path) -> set[str]:
    return {
        ln.strip() for ln in path.read_text().splitlines() if ln.strip() and not ln.startswith("#")
    }


def _plmn(value: object, where: str, problems: list[str]) -> tuple[str, str] | None:
    """srsRAN's "00101" -> ("001", "01"); 6 digits give a 3-digit MNC."""
    s = str(value)
    if not isinstance(value, str) or not re.fullmatch(r"\d{5,6}", s):
        problems.append(f"{where}: PLMN {value!r} is not a quoted 5-6 digit string")
        return None
    return s[:3], s[3:]


def _o5gs_plmn(node: dict, where: str, problems: list[str]) -> tuple[str, str] | None:
    mcc, mnc = node.get("mcc"), node.get("mnc")
    if not (isinstance(mcc, str) and isinstance(mnc, str)):
        problems.append(f"{where}: mcc/mnc must be quoted strings (YAML reads 01 as the number 1)")
        return None
    return mcc, mnc


def _sd(value: object) -> int | None:
    """srsRAN writes SD as an integer, Open5GS as 6 hex digits."""
    if value is None:
        return None
    return int(value, 16) if isinstance(value, str) else int(value)


class Facts:
    """What one side of the testbed says, each value with the file it came from."""

    def __init__(self) -> None:
        self.plmn: list[tuple[tuple[str, str], str]] = []
        self.tac: list[tuple[int, str]] = []
        self.slice: list[tuple[tuple[int, int | None], str]] = []
        self.dnn: list[tuple[str, str]] = []
        self.amf: list[tuple[str, str]] = []
        self.e2: list[tuple[tuple[str, int], str]] = []
        self.five_qi: list[tuple[int, str]] = []


def gnb_facts(path: Path, options: set[str], problems: list[str]) -> Facts:
    f = Facts()
    name = path.name
    doc = yaml.safe_load(path.read_text()) or {}
    for key in key_paths(doc):
        if key not in options:
            problems.append(f"{name}: unknown srsRAN option {key!r} (not in {OPTIONS.name})")
    cells = [doc.get("cell_cfg", {}), *doc.get("cells", [])]
    for i, cell in enumerate(cells):
        where = f"{name}: {'cell_cfg' if i == 0 else f'cells[{i - 1}]'}"
        if "plmn" in cell and (p := _plmn(cell["plmn"], where, problems)):
            f.plmn.append((p, f"{where}.plmn"))
        if "tac" in cell:
            f.tac.append((int(cell["tac"]), f"{where}.tac"))
        for s in cell.get("slicing", []):
            f.slice.append(((int(s["sst"]), _sd(s.get("sd"))), f"{where}.slicing"))
    amf = doc.get("cu_cp", {}).get("amf", {})
    if "addr" not in amf:
        problems.append(f"{name}: cu_cp.amf.addr missing")
    else:
        f.amf.append((str(amf["addr"]), f"{name}: cu_cp.amf.addr"))
    if amf.get("port", NGAP_PORT) != NGAP_PORT:
        problems.append(f"{name}: cu_cp.amf.port {amf['port']} is not NGAP's {NGAP_PORT}")
    for ta in amf.get("supported_tracking_areas", []):
        where = f"{name}: cu_cp.amf.supported_tracking_areas"
        f.tac.append((int(ta["tac"]), where))
        for item in ta.get("plmn_list", []):
            if p := _plmn(item.get("plmn"), where, problems):
                f.plmn.append((p, where))
            for s in item.get("tai_slice_support_list", []):
                f.slice.append(((int(s["sst"]), _sd(s.get("sd"))), where))
    e2 = doc.get("e2", {})
    for flag in ("enable_du_e2", "e2sm_kpm_enabled", "e2sm_rc_enabled"):
        if e2.get(flag) is not True:
            problems.append(f"{name}: e2.{flag} must be true (the xApps need the DU's KPM and RC)")
    if "addr" in e2:
        f.e2.append(((str(e2["addr"]), int(e2.get("port", 0))), f"{name}: e2"))
    else:
        problems.append(f"{name}: e2.addr missing")
    for q in doc.get("qos", []):
        if q.get("rlc", {}).get("mode") == "um-bidir":
            f.five_qi.append((int(q["five_qi"]), f"{name}: qos (RLC UM)"))
    if not f.five_qi:
        problems.append(f"{name}: no qos entry with RLC UM (the RTC bearer)")
    return f


def core_facts(core: Path, problems: list[str]) -> Facts:
    f = Facts()

    def load(n: str) -> dict:
        p = core / n
        if not p.exists():
            problems.append(f"{n}: missing")
            return {}
        return yaml.safe_load(p.read_text()) or {}

    amf = load("amf.yaml").get("amf", {})
    for section in ("guami", "tai", "plmn_support"):
        for item in amf.get(section, []):
            if p := _o5gs_plmn(item.get("plmn_id", {}), f"amf.yaml: {section}", problems):
                f.plmn.append((p, f"amf.yaml: amf.{section}.plmn_id"))
    for t in amf.get("tai", []):
        for tac in t["tac"] if isinstance(t["tac"], list) else [t["tac"]]:
            f.tac.append((int(tac), "amf.yaml: amf.tai.tac"))
    for ps in amf.get("plmn_support", []):
        for s in ps.get("s_nssai", []):
            f.slice.append(
                ((int(s["sst"]), _sd(s.get("sd"))), "amf.yaml: amf.plmn_support.s_nssai")
            )
    for srv in amf.get("ngap", {}).get("server", []):
        f.amf.append((str(srv.get("address")), "amf.yaml: amf.ngap.server.address"))

    nrf = load("nrf.yaml").get("nrf", {})
    for item in nrf.get("serving", []):
        if p := _o5gs_plmn(item.get("plmn_id", {}), "nrf.yaml: serving", problems):
            f.plmn.append((p, "nrf.yaml: nrf.serving.plmn_id"))

    smf = load("smf.yaml").get("smf", {})
    for info in smf.get("info", []):
        for s in info.get("s_nssai", []):
            f.slice.append(((int(s["sst"]), _sd(s.get("sd"))), "smf.yaml: smf.info.s_nssai"))
            f.dnn.extend((d, "smf.yaml: smf.info.s_nssai.dnn") for d in s.get("dnn", []))
    for sess in smf.get("session", []):
        if "dnn" in sess:
            f.dnn.append((sess["dnn"], "smf.yaml: smf.session.dnn"))

    upf = load("upf.yaml").get("upf", {})
    for sess in upf.get("session", []):
        if "dnn" in sess:
            f.dnn.append((sess["dnn"], "upf.yaml: upf.session.dnn"))

    nssf_path = core / "nssf.yaml"
    if nssf_path.exists():
        nssf = yaml.safe_load(nssf_path.read_text()).get("nssf", {})
        for nsi in nssf.get("sbi", {}).get("client", {}).get("nsi", []):
            s = nsi.get("s_nssai", {})
            f.slice.append(((int(s["sst"]), _sd(s.get("sd"))), "nssf.yaml: nssf.sbi.client.nsi"))
    return f


def provisioning_facts(script: Path, sims: Path, problems: list[str]) -> Facts:
    f = Facts()
    text = script.read_text()

    def var(name: str) -> str | None:
        m = re.search(rf'^{name}=(?:"\$\{{{name}:-)?"?([^"}}\s]+)', text, re.M)
        if not m:
            problems.append(f"{script.name}: {name}= not found")
        return m.group(1) if m else None

    mcc, mnc, sst, sd, dnn, qi = (
        var(n) for n in ("PLMN_MCC", "PLMN_MNC", "SST", "SD", "DEFAULT_DNN", "RTC_5QI")
    )
    if mcc and mnc:
        f.plmn.append(((mcc, mnc), f"{script.name}: PLMN_MCC/PLMN_MNC"))
    if sst and sd:
        f.slice.append(((int(sst), int(sd, 16)), f"{script.name}: SST/SD"))
    if dnn:
        f.dnn.append((dnn, f"{script.name}: DEFAULT_DNN"))
    if qi:
        f.five_qi.append((int(qi), f"{script.name}: RTC_5QI"))
    if "open5gs-dbctl" not in text or "add_ue_with_slice" not in text:
        problems.append(f"{script.name}: does not provision with open5gs-dbctl add_ue_with_slice")

    with sims.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    if not rows:
        problems.append(f"{sims.name}: no SIMs")
    for i, row in enumerate(rows, start=2):
        imsi = (row.get("imsi") or "").strip()
        if not re.fullmatch(r"\d{15}", imsi):
            problems.append(f"{sims.name}:{i}: IMSI {imsi!r} is not 15 digits")
            continue
        if mcc and mnc:
            f.plmn.append(((imsi[:3], imsi[3 : 3 + len(mnc)]), f"{sims.name}:{i}: IMSI"))
        for col in ("k", "opc"):
            if not re.fullmatch(r"[0-9a-fA-F]{32}", (row.get(col) or "").strip()):
                problems.append(f"{sims.name}:{i}: {col} is not 32 hex digits")
        if (row.get("dnn") or "").strip():
            f.dnn.append((row["dnn"].strip(), f"{sims.name}:{i}: dnn"))
    return f


def _agree(what: str, *groups: list[tuple[object, str]]) -> list[str]:
    """All values of one kind across all files must be one and the same."""
    seen = [pair for g in groups for pair in g]
    if not seen:
        return [f"{what}: found nowhere"]
    values = {v for v, _ in seen}
    if len(values) == 1:
        return []
    first = seen[0][0]
    return [
        f"{what}: {where} says {v!r}, {seen[0][1]} says {first!r}"
        for v, where in seen
        if v != first
    ]


def check(gnb_dir: Path = GNB_DIR, core_dir: Path = CORE_DIR, options: Path = OPTIONS) -> list[str]:
    problems: list[str] = []
    opts = load_options(options) | load_options(SERIES_OPTIONS)
    gnb_files = sorted(gnb_dir.glob("gnb_*.yml"))
    if not gnb_files:
        problems.append(f"{gnb_dir}: no gnb_*.yml")
    gnbs = [gnb_facts(p, opts, problems) for p in gnb_files]
    core = core_facts(core_dir, problems)
    prov = provisioning_facts(core_dir / "provision.sh", core_dir / "sims.example.csv", problems)
    every = [*gnbs, core, prov]
    problems += _agree("PLMN", *(x.plmn for x in every))
    problems += _agree("TAC", *(x.tac for x in every))
    problems += _agree("S-NSSAI (SST, SD)", *(x.slice for x in every))
    problems += _agree("DNN", core.dnn, prov.dnn)
    problems += _agree("AMF address", *(x.amf for x in gnbs), core.amf)
    problems += _agree("RTC bearer 5QI", *(x.five_qi for x in gnbs), prov.five_qi)
    lab = [g for g, path in zip(gnbs, gnb_files, strict=True) if path.name != RFLESS]
    problems += _agree("E2 endpoint", *(x.e2 for x in lab))
    for path in gnb_files:
        if path.name == RFLESS:
            e2 = (yaml.safe_load(path.read_text()) or {}).get("e2", {})
            if e2.get("addr") != ports.LOOPBACK or e2.get("transport") != "tcp":
                problems.append(f"{RFLESS}: e2 must reach the RIC on {ports.LOOPBACK} over tcp")
    for g in gnbs:
        for (_, port), where in g.e2:
            if port != ports.E2:
                problems.append(
                    f"{where}.port {port} is not the E2 port {ports.E2} (contracts.ports.E2)"
                )
    return problems


# ----------------------------------------------------------------------------------- tests


def test_the_testbed_configs_agree() -> None:
    assert check() == []


def test_each_gnb_config_is_checked() -> None:
    names = {p.name for p in GNB_DIR.glob("gnb_*.yml")}
    assert {"gnb_x410_n78_20mhz.yml", "gnb_x410_n78_100mhz.yml", "gnb_zmq.yml", RFLESS} <= names


def test_the_option_list_names_its_source() -> None:
    head = OPTIONS.read_text().splitlines()[0]
    assert (
        head.startswith("#") and "release_25_10" in head and re.search(r"commit [0-9a-f]{40}", head)
    )
    opts = load_options(OPTIONS)
    assert {
        "cu_cp.amf.addr",
        "ru_sdr.device_driver",
        "cell_cfg.dl_arfcn",
        "e2.enable_du_e2",
    } <= opts
    assert "cell_cfg.pdcch.common.ss0_index" in opts and "qos.rlc.um-bidir.tx.sn" in opts
    assert len(opts) > 900


def _copy(tmp: Path) -> tuple[Path, Path, Path]:
    gnb, core = tmp / "configs", tmp / "open5gs_config"
    gnb.mkdir()
    for p in GNB_DIR.glob("gnb_*.yml"):
        shutil.copy(p, gnb / p.name)
    shutil.copy(OPTIONS, gnb / OPTIONS.name)
    shutil.copytree(CORE_DIR, core)
    return gnb, core, gnb / OPTIONS.name


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path.name}"
    path.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize(
    ("file", "old", "new", "expect"),
    [
        ("configs/gnb_zmq.yml", '  plmn: "00101"\n  tac: 7', '  plmn: "00102"\n  tac: 7', "PLMN"),
        (
            "configs/gnb_x410_n78_20mhz.yml",
            "  dl_arfcn: 621000",
            "  dl_arfnc: 621000",
            "cell_cfg.dl_arfnc",
        ),
        (  # an unknown key inside a list item: qos[0].rlc.um-bidir.tx.sn_size
            "configs/gnb_x410_n78_100mhz.yml",
            "          sn: 12\n          queue-size",
            "          sn_size: 12\n          queue-size",
            "qos.rlc.um-bidir.tx.sn_size",
        ),
        ("open5gs_config/amf.yaml", "      tac: 7", "      tac: 8", "TAC"),
        ("open5gs_config/smf.yaml", 'sd: "000001"', 'sd: "000002"', "S-NSSAI"),
        ("open5gs_config/sims.example.csv", ",rtc\n", ",internet\n", "DNN"),
        ("open5gs_config/sims.example.csv", "001010123456781", "999700123456781", "PLMN"),
        ("open5gs_config/provision.sh", 'DEFAULT_DNN="rtc"', 'DEFAULT_DNN="internet"', "DNN"),
        (
            "open5gs_config/amf.yaml",
            "      - address: 10.53.1.2",
            "      - address: 10.53.1.9",
            "AMF address",
        ),
        ("configs/gnb_zmq.yml", "  port: 36421", "  port: 36422", "E2"),
        (
            "configs/gnb_zmq.yml",
            "  e2sm_rc_enabled: true",
            "  e2sm_rc_enabled: false",
            "e2sm_rc_enabled",
        ),
        ("open5gs_config/nrf.yaml", 'mnc: "01"', "mnc: 01", "quoted"),
        (
            "open5gs_config/provision.sh",
            'RTC_5QI="${RTC_5QI:-7}"',
            'RTC_5QI="${RTC_5QI:-9}"',
            "5QI",
        ),
    ],
)
def test_a_wrong_copy_is_caught(tmp_path: Path, file: str, old: str, new: str, expect: str) -> None:
    gnb, core, options = _copy(tmp_path)
    assert check(gnb, core, options) == []
    _edit(tmp_path / file, old, new)
    problems = check(gnb, core, options)
    assert any(expect in p for p in problems), problems


def test_a_key_missing_from_the_option_list_is_caught(tmp_path: Path) -> None:
    gnb, core, options = _copy(tmp_path)
    _edit(options, "\ncell_cfg.tac\n", "\n")
    problems = check(gnb, core, options)
    assert any("'cell_cfg.tac'" in p for p in problems), problems


# ------------------------------------------------------------------ derive_options.py itself


def _derive_module():
    path = REPO / "srsran_agent" / "tools" / "derive_options.py"
    spec = importlib.util.spec_from_file_location("derive_options", path)
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules[spec.name] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def test_derive_options_reads_the_cli11_patterns(tmp_path: Path) -> None:
    """The script's patterns on a small schema in srsRAN's style (written for this test)."""
    src = tmp_path / "apps" / "x"
    src.mkdir(parents=True)
    (src / "demo_cli11_schema.cpp").write_text(
        """
static void configure_leaf(CLI::App& app, cfg& c, const std::string& flag_name)
{
  add_option(app, "--sst", c.sst, "SST")->check(CLI::Range(0, 255));
  add_option(app, flag_name, c.enabled, "switch");
  app_helpers::add_log_option(app, c.level, "--lvl", "level");
}

static void configure_item(CLI::App& app, item& c)
{
  CLI::App* sub = add_subcommand(app, "inner", "inner section")->configurable();
  sub->add_option("--queue-size", c.q, "queue");
  configure_leaf(*sub, c.leaf, "--enable_x");
}

void srsran::configure_root(CLI::App& app, root& c)
{
  app.add_flag("--dryrun", c.dry, "dry");
  CLI::App* top = app.add_subcommand("top", "top section");
  // add_option(app, "--commented_out", c.x, "not an option");
  auto items_lambda = [&c](const std::vector<std::string>& values) {
    for (unsigned i = 0; i != values.size(); ++i) {
      CLI::App subapp("items");
      configure_item(subapp, c.items[i]);
      std::istringstream ss(values[i]);
      subapp.parse_from_stream(ss);
    }
  };
  add_option_cell(*top, "--items", items_lambda, "a list");
  auto* grp = top->add_option_group("grp");
  add_option_function<std::string>(*grp, "--mode", [&c](const std::string& v) { c.m = v; }, "m");
}
"""
    )
    mod = _derive_module()
    res = mod.derive(tmp_path, roots=("apps/x/demo_cli11_schema.cpp:configure_root",))
    assert res.paths == {
        "dryrun",
        "top",
        "top.items",
        "top.items.inner",
        "top.items.inner.queue-size",
        "top.items.inner.sst",
        "top.items.inner.enable_x",
        "top.items.inner.lvl",
        "top.mode",
    }
    assert res.unresolved == []
