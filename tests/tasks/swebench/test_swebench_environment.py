"""Network safety of the environment builder: only registry requirements reach uv/pip on the
host (from requirements files, the spec, or the sandbox's output), and the host-side builds
run confined by bubblewrap (read-only host, private /tmp, unprivileged uid, no capabilities,
the seccomp filter, registries only through the egress proxy)."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tasks.sandbox import AGENT_UID, sandbox_available
from tasks.sandbox_egress import ALLOW_ENV, EGRESS_DIR, EGRESS_PORT
from tasks.swebench.environment import (
    EnvBuildError,
    EnvSpec,
    _install_offline,
    _requirements,
    registry_requirement,
)
from tasks.swebench.hostbuild import (
    UNCONFINED_ENV,
    host_build_argv,
    require_confinement,
    run_host_build,
)
from tests.tasks.sandbox.test_egress import index, unlisted  # noqa: F401 - fixtures

REJECTED = ["--index-url http://x", "--extra-index-url https://10.0.0.1/simple",
            "pkg @ https://x/y.whl", "pkg@file:///etc/passwd", "git+https://github.com/a/b",
            "./local", "../up", "/abs/path", "dist/pkg-1.0.tar.gz", "pkg-1.0-py3-none-any.whl",
            "-r other.txt", "-e .", "-c constraints.txt", ".", "numpy==1.26 --hash=sha256:ab",
            "numpy; python_version == 'http://x'", "", "   "]


def test_registry_requirements_are_accepted_in_canonical_form():
    assert registry_requirement("numpy==1.26") == "numpy==1.26"
    assert registry_requirement('requests[socks]>=2; python_version<"3.12"') == \
        'requests[socks]>=2; python_version < "3.12"'
    assert registry_requirement("  pytest  ") == "pytest"
    assert registry_requirement("numpy>=1.16,<2") == "numpy<2,>=1.16"


@pytest.mark.parametrize("line", REJECTED)
def test_options_urls_direct_references_and_paths_are_rejected(line):
    assert registry_requirement(line) is None


_PIECES = st.sampled_from(["-", "--index-url", " ", "@", "://", "http", "git+", "numpy", "==",
                           "1.2", ";", "python_version", "<", '"3.12"', "[socks]", ".", "/",
                           ",", "'", "~=", "file:", "#", "\t"])


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(max_size=40), st.lists(_PIECES, max_size=8).map("".join)))
def test_no_accepted_line_is_an_option_or_a_url(line):
    accepted = registry_requirement(line)
    if accepted is not None:
        assert "://" not in accepted and not accepted.startswith("-") and "@" not in accepted
        assert registry_requirement(accepted) == accepted


@given(st.from_regex(r"[A-Za-z][A-Za-z0-9_-]{0,12}[A-Za-z0-9]", fullmatch=True),
       st.lists(st.integers(0, 99), min_size=1, max_size=3))
def test_names_with_a_version_pin_are_accepted(name, version):
    line = f"{name}=={'.'.join(map(str, version))}"
    assert registry_requirement(line) == line


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


def test_requirement_files_keep_registry_lines_follow_includes_and_note_the_rest(
        tmp_path, monkeypatch):
    repo = tmp_path / "mirrors" / "acme__widget"
    (repo / "requirements").mkdir(parents=True)
    (repo / "requirements" / "base.txt").write_text(
        "numpy==1.26  # pinned\n--index-url http://10.0.0.1/\n-r extra.txt\n"
        "pkg @ https://x/y.whl\ngit+https://github.com/a/b\n./local\n-e .\n-r ../../../etc/x\n")
    (repo / "requirements" / "extra.txt").write_text('requests[socks]>=2; python_version<"3.12"\n')
    _git("init", "-q", cwd=repo)
    _git("add", ".", cwd=repo)
    _git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "x", cwd=repo)
    monkeypatch.setenv("SWEBENCH_REPOS", str(tmp_path / "mirrors"))
    from swebench.harness import constants

    monkeypatch.setitem(constants.MAP_REPO_TO_REQS_PATHS, "acme/widget",
                        ["requirements/base.txt"])
    spec = EnvSpec("acme/widget", "1.0", "3.11", packages="requirements.txt",
                   pip_packages=("pytest", "git+https://x/y"),
                   setup_commit=_git("rev-parse", "HEAD", cwd=repo))
    lines, notes = _requirements(spec)
    assert lines == ["numpy==1.26", 'requests[socks]>=2; python_version < "3.12"', "pytest"]
    dropped = [n for n in notes if n.startswith("dropped requirement line")]
    for line in ("--index-url http://10.0.0.1/", "pkg @ https://x/y.whl",
                 "git+https://github.com/a/b", "./local", "-e .", "git+https://x/y"):
        assert any(repr(line) in n and "not a registry requirement" in n for n in dropped), line
    assert any("'-r ../../../etc/x'" in n for n in notes)
    assert not any("extra.txt" in n for n in notes)  # an include, not a requirement


def test_spec_packages_are_shell_words():
    spec = EnvSpec("a/b", "1", "3.9", packages="'numpy==1.19.2' pytest 'pandas<2.0.0'")
    assert _requirements(spec) == (["numpy==1.19.2", "pytest", "pandas<2.0.0"], [])


class _SandboxOutput:
    """Stands in for the sandbox's text output only: every command fails with `output`."""

    def __init__(self, output: str):
        self.output, self.written = output, []

    def run(self, command, **kwargs):
        from tasks.sandbox import CommandResult

        return CommandResult(1, self.output, False, False, 0.0)

    def write_file(self, path, data, **kwargs):
        self.written.append(path)


@pytest.mark.parametrize("named", ["git+http://169.254.169.254/x", "pkg@http://10.0.0.1/x",
                                   "--index-url=http://10.0.0.1/", "../../etc"])
def test_a_url_named_by_the_sandbox_is_not_fetched(named, tmp_path):
    sandbox = _SandboxOutput(f"ERROR: No matching distribution found for {named}\n")
    spec = EnvSpec("a/b", "1", "3.9")
    with pytest.raises(EnvBuildError, match="not a registry requirement") as raised:
        _install_offline(sandbox, "pip install -e .", spec, tmp_path / "python",
                         tmp_path / "wheels", 60, "", [])
    assert "\n" not in str(raised.value)
    assert sandbox.written == [] and not (tmp_path / "wheels").exists()


def test_confinement_argv_is_read_only_without_capabilities_or_network(tmp_path):
    out = tmp_path / "out"
    argv = host_build_argv(["pip", "wheel", "-w", str(out), "--", "six"], writable=[out],
                           env={"PATH": "/usr/bin"}, home=Path("/root"), uid=AGENT_UID,
                           egress_socket_dir=tmp_path / "sock", seccomp_fd=7)
    joined = " ".join(argv)
    assert argv[0] == "bwrap" and "--ro-bind / /" in joined and "--cap-drop ALL" in joined
    assert "--unshare-net" in argv and "--share-net" not in argv and "--seccomp 7" in joined
    assert f"--ro-bind {tmp_path / 'sock'} {EGRESS_DIR}" in joined
    assert f"--setenv HTTPS_PROXY http://127.0.0.1:{EGRESS_PORT}" in joined
    assert f"--bind {out} {out}" in joined and "--tmpfs /tmp" in joined
    assert "--tmpfs /root" in joined and "--clearenv" in joined
    assert f"--reuid={AGENT_UID}" in argv and "--bounding-set=-all" in argv
    assert argv[argv.index("--") + 1] == "setpriv" and argv[-5:] == \
        ["pip", "wheel", "-w", str(out), "--", "six"][-5:]
    assert "egress forwarder" in argv[argv.index("/bin/bash") + 2]  # before the command
    assert "--tmpfs /run" in joined  # the host's Unix sockets hidden
    offline = host_build_argv(["true"], home=Path("/root"))
    assert "--unshare-net" in offline and "--seccomp" not in offline


@pytest.mark.skipif(sandbox_available() is not None, reason="the sandbox is unavailable here")
def test_a_host_build_reaches_the_allowed_registry_and_nothing_else(tmp_path, monkeypatch,
                                                                     index, unlisted):
    """pip inside the confined host build downloads from a stand-in index allowed by
    HARNESS_EGRESS_ALLOW; a loopback server not on the list is refused (and named in the
    failed build's error), and a direct connection reaches nothing."""
    server, wheel = index
    monkeypatch.setenv(ALLOW_ENV, f"127.0.0.1:{server.port}")
    out = tmp_path / "out"
    out.mkdir()
    python = Path(sys.base_prefix)
    pip = [str(python / "bin" / "python3"), "-m", "pip", "download", "--no-cache-dir",
           "--disable-pip-version-check", "-d", str(out), "--index-url"]
    done = run_host_build([*pip, f"http://127.0.0.1:{server.port}/simple/", "egress-probe"],
                          python=python, cache_root=tmp_path / "cache", writable=[out],
                          timeout_s=120)
    assert done.returncode == 0, done.stderr
    assert (out / "egress_probe-0.1-py3-none-any.whl").read_bytes() == wheel
    refused = run_host_build([*pip, f"http://127.0.0.1:{unlisted.port}/simple/",
                              "egress-probe"], python=python, cache_root=tmp_path / "cache",
                             writable=[out], timeout_s=120)
    assert refused.returncode != 0 and unlisted.seen == []
    assert f"the egress proxy refused or could not reach: 127.0.0.1:{unlisted.port}" in \
        refused.stderr
    direct = run_host_build([str(python / "bin" / "python3"), "-c",
                             "import socket, sys\ntry:\n    socket.create_connection(('127.0.0.1',"
                             f" {server.port}), timeout=5)\n    print('connected')\n"
                             "except OSError as exc:\n    print(type(exc).__name__)"],
                            python=python, cache_root=tmp_path / "cache", timeout_s=60)
    assert direct.stdout.strip() == "ConnectionRefusedError", direct


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bwrap (Debian bubblewrap) missing")
def test_confined_build_writes_only_its_output(tmp_path):
    """The real confinement: the host is read-only (the interpreter's prefix, bound back
    where it lies under the hidden home), the caller's /tmp and home are hidden, the output
    directory is writable, and as root the uid is AGENT_UID. The repository cannot be
    written from any checkout: read-only where it is visible, hidden where it lies under the
    caller's /tmp or home (`test_hostbuild_checkouts.py` runs this test from such clones)."""
    out = tmp_path / "out"
    out.mkdir()
    (tmp_path / "marker").write_text("host /tmp")
    python = Path(sys.base_prefix)
    probes = [Path(__file__).with_name(".confinement-probe"), python / ".confinement-probe"]
    script = ("import os, pathlib, sys\n"
              f"print(os.getuid(), pathlib.Path({str(tmp_path / 'marker')!r}).exists())\n"
              f"pathlib.Path({str(out / 'built.whl')!r}).write_text('x')\n"
              f"for probe in {[str(p) for p in probes]!r}:\n"
              "    try:\n        open(probe, 'w')\n    except OSError as e:\n"
              "        print(e.errno)\n    else:\n        print('written')\n")
    done = run_host_build([str(python / "bin" / "python3"), "-c", script], python=python,
                          cache_root=tmp_path / "cache", writable=[out], timeout_s=60)
    repository = Path(__file__).resolve().parents[3]
    hidden = any(repository.is_relative_to(place)
                 for place in (Path("/tmp").resolve(), Path.home().resolve()))
    try:
        assert done.returncode == 0, done.stderr
        uid, sees_marker, in_repository, in_prefix = done.stdout.split()
        assert int(uid) == (AGENT_UID if os.geteuid() == 0 else os.getuid())
        assert sees_marker == "False"
        assert in_prefix == str(errno.EROFS)
        assert in_repository == str(errno.ENOENT if hidden else errno.EROFS), repository
        assert not any(probe.exists() for probe in probes)
        assert (out / "built.whl").read_text() == "x"
    finally:
        for probe in probes:
            probe.unlink(missing_ok=True)


def test_without_bwrap_the_build_stops_unless_allowed(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap, no setpriv on it
    monkeypatch.delenv(UNCONFINED_ENV, raising=False)
    with pytest.raises(EnvBuildError, match=f"bwrap.*{UNCONFINED_ENV}=1"):
        require_confinement()
    monkeypatch.setenv(UNCONFINED_ENV, "1")
    assert require_confinement() is False


def test_without_uv_the_error_names_the_extra(monkeypatch):
    import sys

    from harness.core import MissingDependencyError
    from tasks.swebench import environment

    monkeypatch.setitem(sys.modules, "uv", None)
    monkeypatch.setattr(environment.shutil, "which", lambda name: None)
    with pytest.raises(MissingDependencyError, match=r"agent-rl-harness\[swebench\]"):
        environment.uv_binary()


def test_cache_key_hashes_the_whole_recipe(monkeypatch):
    from tasks.swebench import environment

    spec = EnvSpec("a/b", "1.0", "3.9", install="pip install -e .")
    key = spec.key(python="3.9.18", requirements=["numpy==1.26"])
    assert key.startswith("a__b-1.0-")
    assert key == spec.key(python="3.9.18", requirements=["numpy==1.26"])
    assert key != spec.key(python="3.9.17", requirements=["numpy==1.26"])
    assert key != spec.key(python="3.9.18", requirements=["numpy==1.25"])
    monkeypatch.setattr(environment, "BUILDER_VERSION", environment.BUILDER_VERSION + 1)
    assert key != spec.key(python="3.9.18", requirements=["numpy==1.26"])
    monkeypatch.setattr(environment, "OFFICIAL_ERA", "2023-01-01T00:00:00Z")
    assert key != spec.key(python="3.9.18", requirements=["numpy==1.26"])
