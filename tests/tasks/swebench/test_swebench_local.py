"""The local backend on real instances (bugs A, B, C) and the checkout laid over /testbed."""

from __future__ import annotations

import os
import subprocess

import pytest

from tasks.sandbox import sandbox_available

MIRRORS = os.environ.get("SWEBENCH_REPOS")


@pytest.mark.skipif(sandbox_available() is not None, reason="needs the sandbox")
def test_checkout_laid_over_testbed_keeps_untracked_install_products(tmp_path):
    """Bug B: the environment's untracked ``src/pkg.egg-info`` survives, its tracked files
    that the new checkout lacks do not."""
    from tasks.sandbox import BASE_RECIPE, Sandbox, build_rootfs
    from tasks.swebench.environment import lay_over_testbed

    source = tmp_path / "src"
    source.mkdir()
    (source / "new.py").write_text("new\n")
    subprocess.run("git init -q && git add . && git -c user.name=t -c user.email=t@t "
                   "commit -qm new", shell=True, cwd=source, check=True)
    with Sandbox(build_rootfs(BASE_RECIPE), workdir="/") as sandbox:
        made = sandbox.run("mkdir -p /testbed/src/pkg.egg-info && cd /testbed && "
                           "echo old > old.py && echo ep > src/pkg.egg-info/entry_points.txt "
                           "&& git init -q && git add old.py && git -c user.name=t -c "
                           "user.email=t@t commit -qm old", user="root")
        assert made.exit_code == 0, made.output
        lay_over_testbed(sandbox, source, owner="agent")
        listing = sandbox.run("cd /testbed && ls -A . src/pkg.egg-info && "
                              "git -c safe.directory='*' log --format=%s",
                              user="root")
    assert listing.output.split() == [".:", ".git", "new.py", "src", "src/pkg.egg-info:",
                                      "entry_points.txt", "new"]


REAL = [("verified-test", "pytest-dev__pytest-10051", "A: version from git tags"),
        ("full-dev", "sqlfluff__sqlfluff-4764", "B: entry points of src/*.egg-info"),
        ("full-dev", "sqlfluff__sqlfluff-1625", "C: base_commit requires configparser")]


@pytest.mark.slow
@pytest.mark.skipif(not MIRRORS, reason="SWEBENCH_REPOS is unset: no mirror directory of the "
                                        "SWE-bench repositories")
@pytest.mark.skipif(sandbox_available() is not None, reason="needs the sandbox")
@pytest.mark.parametrize("table, instance_id, bug", REAL, ids=[r[1] for r in REAL])
def test_real_instance_gold_resolves_and_empty_fails(table, instance_id, bug):
    """Each failed gold before its fix (issue 27); builds the environment when uncached."""
    from tasks.swebench.data import load_table
    from tasks.swebench.local import real_backend

    instance = next(i for i in load_table(table) if i.instance_id == instance_id)
    backend = real_backend(mirrors=MIRRORS, test_timeout_s=900)
    gold = backend.evaluate(instance, instance.patch)
    assert gold.verdict.resolved, (bug, gold.verdict.failed_tests()[:3], gold.log[-2000:])
    assert not backend.evaluate(instance, "").verdict.resolved
