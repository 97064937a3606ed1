"""The tamper check (`tasks.swebench.tamper`) on hand-made diffs, and over every gold patch of
the official tables in ``../shared/data/swebench`` and of swe-lite: no false positive."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tasks.swebench.grading import sanitize_patch
from tasks.swebench.tamper import check_patch

SETUP_CFG = """[metadata]
name = pkg

[options]
packages = find:
python_requires = >=3.8
include_package_data = True
install_requires =
    numpy
    scipy
    attrs

[tool:pytest]
testpaths = tests
"""

PYPROJECT = """[project]
name = "pkg"
version = "1.0"

[tool.pytest.ini_options]
testpaths = ["tests"]
minversion = "6.0"
xfail_strict = true
norecursedirs = ["build"]
markers = ["slow"]

[tool.black]
line-length = 100
"""

SETUP_PY = """from setuptools import setup

setup(
    name="pkg",
    packages=["pkg"],
)
"""

FILES = {"setup.cfg": SETUP_CFG, "pyproject.toml": PYPROJECT, "setup.py": SETUP_PY,
         "pkg/__init__.py": "VALUE = 1\n", "pkg/_forcepass.py": ""}


def _repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    subprocess.run("git init -q && git add -A && git -c user.name=t -c user.email=t@t commit "
                   "-qm base", shell=True, cwd=root, check=True)
    return root


def _diff(root: Path, edits: dict[str, str]) -> str:
    for name, text in edits.items():
        (root / name).write_text(text)
    diff = subprocess.run(["git", "diff"], cwd=root, capture_output=True, text=True).stdout
    subprocess.run(["git", "checkout", "-q", "."], cwd=root, check=True)
    return diff


def _applies(root: Path, patch: str) -> str:
    """The tree's `git diff` after applying `patch` (it must apply)."""
    subprocess.run(["git", "apply", "-"], cwd=root, input=patch, text=True, check=True)
    applied = subprocess.run(["git", "diff"], cwd=root, capture_output=True, text=True).stdout
    subprocess.run(["git", "checkout", "-q", "."], cwd=root, check=True)
    return applied


PLUGIN = FILES | {"pkg/_forcepass.py": "import pytest\n\n@pytest.hookimpl(hookwrapper=True)\n"
                  "def pytest_runtest_makereport(item, call):\n    outcome = yield\n"}


def test_setup_cfg_addopts_hunk_dropped_and_the_fix_kept(tmp_path):
    root = _repo(tmp_path)
    patch = _diff(root, {
        "pkg/__init__.py": "VALUE = 2\n",
        "setup.cfg": SETUP_CFG.replace("[options]\n", "[options]\nzip_safe = False\n")
        + "addopts = -p pkg._forcepass\n",
        "pkg/_forcepass.py": PLUGIN["pkg/_forcepass.py"]})
    report = check_patch(patch, base_text=lambda p: (root / p).read_text())
    assert report.dropped_hunks == 1
    assert any(f.startswith("pytest-config: setup.cfg: [tool:pytest] addopts = -p "
                            "pkg._forcepass") for f in report.flags), report.flags
    assert any(f.startswith("runner-tamper: pkg/_forcepass.py: pytest_runtest_makereport")
               for f in report.flags)
    applied = _applies(root, report.patch)  # the other setup.cfg hunk and the fix still apply
    assert "+zip_safe = False" in applied and "+VALUE = 2" in applied
    assert "addopts" not in applied


def test_section_read_from_the_base_file(tmp_path):
    """A line added deep inside ``[tool.pytest.ini_options]`` (the header out of the hunk's
    context) is placed by the base file; without it only named options are caught."""
    root = _repo(tmp_path)
    patch = _diff(root, {"pyproject.toml": PYPROJECT.replace(
        'markers = ["slow"]\n', 'markers = ["slow"]\nfilterwarnings = ["ignore"]\n')})
    assert check_patch(patch).flags == ()
    report = check_patch(patch, base_text=lambda p: (root / p).read_text())
    assert report.dropped_hunks == 1 and report.patch == ""
    assert report.flags == ('pytest-config: pyproject.toml: [tool.pytest.ini_options] '
                            'filterwarnings = ["ignore"] (hunk dropped)',)
    other = _diff(root, {"pyproject.toml": PYPROJECT.replace("100", "88")})
    assert check_patch(other, base_text=lambda p: (root / p).read_text()).flags == ()


@pytest.mark.parametrize("edit, flag", [
    ({"pyproject.toml": PYPROJECT.replace('markers', 'addopts = "-p pkg._forcepass"\nmarkers')},
     'addopts = "-p pkg._forcepass"'),
    ({"setup.py": SETUP_PY.replace('packages=["pkg"],', 'packages=["pkg"],\n    entry_points='
                                   '{"pytest11": ["forcepass = pkg._forcepass"]},')},
     "pytest11"),
    ({"setup.cfg": SETUP_CFG + "\n[options.entry_points]\npytest11 =\n    f = pkg.f\n"},
     "pytest11"),
    ({"pyproject.toml": PYPROJECT + '\n[project.entry-points.pytest11]\nf = "pkg.f"\n'},
     "pytest11"),
    ({"setup.cfg": SETUP_CFG.replace("testpaths", "python_files = *.py\ntestpaths")},
     "[tool:pytest] python_files"),
])
def test_every_configuration_route_is_flagged(tmp_path, edit, flag):
    root = _repo(tmp_path)
    report = check_patch(_diff(root, edit), base_text=lambda p: (root / p).read_text())
    assert report.dropped_hunks >= 1 and report.patch == ""
    assert any(flag in f for f in report.flags), report.flags


def test_new_config_file_and_source_signs():
    new_cfg = ("diff --git a/setup.cfg b/setup.cfg\nnew file mode 100644\n--- /dev/null\n"
               "+++ b/setup.cfg\n@@ -0,0 +1,2 @@\n+[tool:pytest]\n+testpaths = t\n")
    assert check_patch(new_cfg).dropped_hunks == 1
    source = ("diff --git a/pkg/a.py b/pkg/a.py\n--- a/pkg/a.py\n+++ b/pkg/a.py\n@@ -1 +1,2 @@\n"
              " x = 1\n+print('short test summary info')\n")
    report = check_patch(source)
    assert report.patch == source and report.dropped_hunks == 0
    assert report.flags == ("runner-tamper: pkg/a.py: short test summary info",)
    hooks = source.replace("print('short test summary info')", "from _pytest import runner")
    assert check_patch(hooks, repo="psf/requests").flags
    assert check_patch(hooks, repo="pytest-dev/pytest").flags == ()  # its own code


def _gold_rows():
    from tasks.swebench.data import load_table

    seen: dict[str, object] = {}
    for table in ("verified-test", "lite-test", "lite-dev", "full-dev"):
        for instance in load_table(table):
            seen.setdefault(instance.instance_id, instance)
    return list(seen.values())


def test_no_gold_patch_is_flagged():
    """Every gold patch of the official tables (932 distinct instances) and of swe-lite: no
    flag, nothing dropped, the patch passed through unchanged (base files read from
    ``$SWEBENCH_REPOS`` where it has the repository)."""
    from tasks.swebench.lite import lite_instances
    from tasks.swebench.repos import read_at

    mirrors = os.environ.get("SWEBENCH_REPOS")
    instances = _gold_rows()
    assert len(instances) >= 900
    flagged = []
    for instance in [*instances, *lite_instances()]:
        kept, _ = sanitize_patch(instance.patch, instance.test_patch)
        base = ((lambda p, i=instance: read_at(i.repo, i.base_commit, p, mirrors))
                if mirrors and not instance.repo.startswith("swe-lite/") else None)
        report = check_patch(kept, repo=instance.repo, base_text=base)
        if report.flags or report.patch != kept:
            flagged.append((instance.instance_id, report.flags))
    assert flagged == []


def test_reproduced_verified_gold_patches_unflagged():
    """The instances of ``manifests/verified.json`` that reproduced: 0 flags."""
    from tasks.swebench.suite import REAL  # noqa: F401 - the manifest's home package

    manifest = json.loads((Path(__file__).resolve().parents[3] / "tasks" / "swebench"
                           / "manifests" / "verified.json").read_text())
    reproduced = {k for k, v in manifest["instances"].items() if v["reproduced"]}
    rows = {i.instance_id: i for i in _gold_rows()}
    assert reproduced and reproduced <= set(rows)
    for instance_id in sorted(reproduced):
        instance = rows[instance_id]
        assert check_patch(sanitize_patch(instance.patch, instance.test_patch)[0],
                           repo=instance.repo).flags == (), instance_id
