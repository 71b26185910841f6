"""Issue #18: the srsRAN_Project patch series (``srsran_agent/patches/``) and its build script.

Fast and without srsRAN: the series' files are numbered consecutively and each is a well-formed
``git format-patch`` file (From line, From/Date/Subject headers, diffstat, diffs); every path they
touch lies in srsRAN_Project's tree, and a new file only in a directory srsRAN has or the series
creates (nothing stray, nothing outside); every test executable the series adds is one
``build.sh`` builds, and every GoogleTest suite in the series is ``octoric_*`` (what ``build.sh``
runs with ``ctest -R``); ``build.sh`` passes ``bash -n`` and ``shellcheck`` (when installed).
When the srsRAN_Project mirror is present (``/work/.mirror/srsran+srsRAN_Project``, or
``$OCTORIC_SRSRAN_MIRROR``), ``git apply --check`` of the series against tag ``release_25_10`` in
a temporary clone must be quiet, patch after patch, each on top of the ones before it (as
``git am`` and ``build.sh`` apply them: ``git apply`` given several files checks each against the
original tree, so two patches that touch one file cannot be checked in one call); otherwise that
test skips and says why.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
AGENT = REPO / "srsran_agent"
PATCH_DIR = AGENT / "patches"
BUILD_SH = AGENT / "build.sh"
TAG = "release_25_10"
TAG_COMMIT = "d2f4b70dda8e2c557d5b05a0ac5f92dbddda19bc"
MIRROR = Path(os.environ.get("OCTORIC_SRSRAN_MIRROR", "/work/.mirror/srsran+srsRAN_Project"))

# Top level of srsRAN_Project release_25_10 (directories and files a patch may touch).
SRSRAN_TOP = {
    "apps", "cmake", "configs", "docker", "docs", "external", "include", "lib", "scripts", "tests",
    "utils", "CMakeLists.txt", "README.md", "CHANGELOG", "COPYRIGHT", "LICENSE", ".clang-format",
    ".clang-tidy", ".gdbinit", ".gitignore",
}  # fmt: skip

PATCH_NAME = re.compile(r"^(\d{4})-[A-Za-z0-9._-]+\.patch$")
DIFF_HEADER = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.M)
NEW_FILE = re.compile(r"^diff --git a/(\S+) b/\S+\nnew file mode", re.M)
SUITE = re.compile(r"^\+\s*TEST(?:_F|_P)?\(\s*(\w+)\s*,", re.M)
ADD_EXECUTABLE = re.compile(r"^\+\s*add_executable\(\s*(\w+)", re.M)
# ctest entries the series adds on an executable, its own or srsRAN's: add_test(octoric_X EXE)
ADD_TEST_EXE = re.compile(
    r"^\+\s*add_test\(\s*(?:NAME\s+)?octoric_\w+\s+(?:COMMAND\s+)?(\w+)", re.M
)


def patches() -> list[Path]:
    return sorted(p for p in PATCH_DIR.glob("*.patch"))


def _series() -> list[tuple[Path, str]]:
    found = patches()
    if not found:
        pytest.fail(f"no patches in {PATCH_DIR}")
    return [(p, p.read_text(encoding="utf-8")) for p in found]


def touched_paths(text: str) -> list[str]:
    return [b for _a, b in DIFF_HEADER.findall(text)]


def mirror_git_dir() -> Path | None:
    """The bare repository of the mirror (the fetch tool keeps it in ``repo/`` below the path)."""
    for cand in (MIRROR, MIRROR / "repo"):
        if (cand / "HEAD").is_file() and (cand / "objects").is_dir():
            return cand
    return None


# ------------------------------------------------------------------------------- the files


def test_only_patch_files_in_the_series_directory() -> None:
    stray = [p.name for p in PATCH_DIR.iterdir() if not PATCH_NAME.match(p.name)]
    assert not stray, f"not a numbered patch: {stray}"


def test_patches_are_numbered_consecutively() -> None:
    numbers = [int(PATCH_NAME.match(p.name).group(1)) for p in patches()]  # type: ignore[union-attr]
    assert numbers, "empty series"
    assert numbers == list(range(1, len(numbers) + 1)), numbers


@pytest.mark.parametrize("path", patches(), ids=lambda p: p.name)
def test_each_file_is_a_well_formed_git_patch(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    n, total = int(path.name[:4]), len(patches())
    assert re.match(r"^From [0-9a-f]{40} Mon Sep 17 00:00:00 2001$", lines[0]), lines[0]
    head = re.sub(r"\n[ \t]+", " ", text.split("\n\n", 1)[0])  # unfold RFC 5322 headers
    assert re.search(r"^From: .+ <[^>]+>$", head, re.M), "no From: header"
    assert re.search(r"^Date: ", head, re.M), "no Date: header"
    subject = re.search(r"^Subject: \[PATCH (\d+)/(\d+)\] (.+)$", head, re.M)
    assert subject, "no 'Subject: [PATCH n/N] ...' header"
    assert (int(subject.group(1)), int(subject.group(2))) == (n, total), subject.group(0)
    # the commit message, then '---', the diffstat and its summary line, then the diffs
    body = text.split("\n\n", 1)[1]
    assert "\n---\n" in body, "no '---' before the diffstat"
    stat = body.split("\n---\n", 1)[1].split("\ndiff --git ", 1)[0]
    assert re.search(r"^ \d+ files? changed", stat, re.M), "no diffstat summary"
    files = touched_paths(text)
    assert files, "touches no file"
    for f in files:
        assert f in stat or "..." in stat, f"{f} is not in the diffstat"
    assert re.search(r"\n-- \n\S+\s*$", text), "no signature ('-- ' and git's version) at the end"


def test_every_path_lies_in_the_srsran_tree() -> None:
    for path, text in _series():
        for f in touched_paths(text):
            parts = Path(f).parts
            assert not Path(f).is_absolute() and ".." not in parts, f"{path.name}: {f}"
            assert parts[0] in SRSRAN_TOP, f"{path.name}: {f} is outside srsRAN's tree"


def test_new_files_go_into_existing_or_series_directories() -> None:
    """New files only beside srsRAN's own (no new top-level or stray directories) — checked
    against the tag's tree when the mirror is there, else against the series' own files."""
    git_dir = mirror_git_dir()
    known: set[str] = set()
    if git_dir is not None:
        out = subprocess.run(
            ["git", f"--git-dir={git_dir}", "ls-tree", "-r", "-d", "--name-only", TAG],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        known = set(out.split())
    for path, text in _series():
        for f in NEW_FILE.findall(text):
            parent = str(Path(f).parent)
            if known:
                assert parent in known, f"{path.name}: new file {f} in a directory {TAG} lacks"
            else:
                assert parent != "." or f in SRSRAN_TOP, f"{path.name}: new top-level file {f}"


# -------------------------------------------------------------------------------- build.sh


def test_every_test_executable_of_the_series_is_built_and_run_by_build_sh() -> None:
    script = BUILD_SH.read_text()
    m = re.search(r"^readonly TEST_TARGETS=\(([^)]*)\)", script, re.M)
    assert m, "build.sh has no TEST_TARGETS"
    targets = set(m.group(1).split())
    added = {t for _p, text in _series() for t in ADD_EXECUTABLE.findall(text)}
    assert added, "the series adds no test executable"
    # srsRAN's own executables that the series gives octoric_ ctest runs must be built too
    tested = {t for _p, text in _series() for t in ADD_TEST_EXE.findall(text)}
    # srsRAN's own test executables whose sources the series adds octoric_ suites to (0013:
    # tests/unittests/mac/mac_metrics_test.cpp is part of srsRAN's mac_test; 0016:
    # tests/unittests/f1u/common/f1u_connector_test.cpp is f1u_local_connector_test; 0020:
    # tests/unittests/e2/e2_subscription_setup_test.cpp; 0021: rlc_bearer_metrics_collector_test;
    # 0009 and 0022: tests/unittests/cu_cp/cu_cp_*_handover_test.cpp are srsRAN's cu_cp_test)
    extended = {
        "mac_test",
        "f1u_local_connector_test",
        "e2_subscription_setup_test",
        "rlc_bearer_metrics_collector_test",
        "cu_cp_test",
    }
    want = added | tested | extended
    assert want == targets, f"the series needs {sorted(want)}, build.sh builds {sorted(targets)}"
    regex = re.search(r"^readonly CTEST_REGEX='([^']*)'", script, re.M)
    assert regex and regex.group(1) == "^octoric_"
    suites = {s for _p, text in _series() for s in SUITE.findall(text)}
    assert suites, "the series adds no GoogleTest suite"
    assert all(s.startswith("octoric_") for s in suites), sorted(suites)


def test_build_sh_names_the_tag() -> None:
    script = BUILD_SH.read_text()
    assert f"readonly TAG={TAG}" in script
    assert f"readonly TAG_COMMIT={TAG_COMMIT}" in script
    assert "-DOCTORIC_LIBOCTOPUS_DIR=" in script


def test_build_sh_parses() -> None:
    assert os.access(BUILD_SH, os.X_OK), "build.sh is not executable"
    subprocess.run(["bash", "-n", str(BUILD_SH)], check=True)


def test_build_sh_passes_shellcheck() -> None:
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed (apt-get install shellcheck)")
    r = subprocess.run(["shellcheck", str(BUILD_SH)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_build_sh_refuses_a_directory_that_is_not_a_checkout(tmp_path: Path) -> None:
    r = subprocess.run([str(BUILD_SH), str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert "not a git checkout" in r.stderr


# ------------------------------------------------------------------ against srsRAN itself


def test_series_applies_quietly_to_the_tag(tmp_path: Path) -> None:
    git_dir = mirror_git_dir()
    if git_dir is None:
        pytest.skip(
            f"no srsRAN_Project mirror at {MIRROR} (set OCTORIC_SRSRAN_MIRROR to a bare clone "
            "or checkout of github.com/srsran/srsRAN_Project holding tag release_25_10)"
        )
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    clone = tmp_path / "srsran"
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["git", "-C", str(clone), *args], capture_output=True, text=True, env=env, timeout=120
        )

    subprocess.run(
        ["git", "clone", "-q", "--shared", "--no-checkout", str(git_dir), str(clone)],
        check=True, capture_output=True, env=env, timeout=120,
    )  # fmt: skip
    assert git("rev-parse", f"{TAG}^{{commit}}").stdout.strip() == TAG_COMMIT
    # The tag's tree in the clone's index (no checkout of ~10k files): --cached checks each
    # patch against exactly that content plus the patches before it.
    assert git("read-tree", TAG).returncode == 0
    for patch in patches():
        r = git("apply", "--check", "--cached", str(patch))
        assert r.returncode == 0, f"{patch.name}: {r.stderr}"
        assert r.stdout == "" and r.stderr == "", f"{patch.name} not quiet: {r.stdout}{r.stderr}"
        r = git("apply", "--cached", str(patch))
        assert r.returncode == 0, f"{patch.name}: {r.stderr}"
