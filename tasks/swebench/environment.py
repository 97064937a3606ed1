"""Environments per (repository, version), built once from the official spec and cached.

The spec is ``swebench.harness.constants.MAP_REPO_VERSION_TO_SPECS[repo][version]``: the
Python version, ``packages`` (conda packages, ``requirements.txt`` or ``environment.yml``),
``pip_packages``, ``pre_install`` and ``install``. The official images install them with conda;
here a virtual environment of the same Python version (a pyenv interpreter, or ``uv python
find``) gets the same packages from PyPI:

1. On the host, the spec's Python builds wheels of the requested packages into a wheelhouse
   shared per Python version (``uv pip compile``, ``pip wheel``), confined by bubblewrap
   (`tasks.swebench.hostbuild`).
2. In a sandbox with no network, the venv is created at ``/opt/swe/venv``, the wheels are
   installed from the wheelhouse (``--no-index``), the repository at
   ``environment_setup_commit`` is copied to ``/testbed`` and the spec's ``install`` command
   runs offline; a requirement the wheelhouse lacks (the repository's own dependencies, its
   build backend) is named by pip, fetched into the wheelhouse on the host, and the install
   retried.
3. The sandbox's writable layer becomes the environment layer (``layer/``) that every episode
   of that (repository, version) stacks read-only over the rootfs; conda's activation is a
   shim (``/opt/miniconda3/bin/activate``) so the official eval script runs unchanged.

Conda-only steps (``environment.yml`` packages, ``pre_install`` apt commands) are not
reproduced; instances that need them show up in ``harness swebench validate``.

Network safety. Only registry requirements (`registry_requirement`: a name, extras, version
specifiers, a marker; no pip options, URLs, direct references or paths) ever reach uv or pip
on the host: lines of a repository's requirements files that are not are dropped and named in
the environment's notes, and a package name taken from the sandbox's pip output that is not
one stops the build. Network access during the build is the package registry's by
configuration, but not enforced at the network level: the host-side calls share the host's
network (a departure; the proper fix is a registry-only proxy). Nothing task-specific runs on
the host any more except PyPI packages' own build backends, inside the confinement
`tasks.swebench.hostbuild` describes (read-only host filesystem, private ``/tmp``, only the
wheel output and the pip/uv caches writable, an unprivileged uid, no capabilities).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tasks.swebench.data import Instance
from tasks.swebench.hostbuild import EnvBuildError, require_confinement, run_host_build, \
    scratch_dir
from tasks.swebench.repos import cache_root, checkout, read_at

logger = logging.getLogger(__name__)

__all__ = ["EnvSpec", "BuiltEnv", "EnvBuildError", "env_spec", "find_python",
           "build_environment", "registry_requirement", "prepare_instance",
           "lay_over_testbed", "uv_binary", "BUILDER_VERSION", "ACTIVATE_SHIM", "VENV", "WHEELS"]

VENV = "/opt/swe/venv"
WHEELS = "/opt/swe/wheels"
ACTIVATE_SHIM = f"""# conda activation for harness-built environments (a venv, not conda)
if [ -d {VENV}/bin ]; then export PATH={VENV}/bin:$PATH; export VIRTUAL_ENV={VENV}; fi
export PIP_NO_INDEX=1 PIP_FIND_LINKS={WHEELS} PIP_DISABLE_PIP_VERSION_CHECK=1
conda() {{ :; }}
"""
MAX_FETCH_ROUNDS = 25
BUILDER_VERSION = 2
"""Bumped whenever the build steps change; part of every environment's cache key."""
OFFICIAL_ERA = "2024-08-01T00:00:00Z"
"""Packages are resolved as of this date: the official environment images were built (and
pip chose their versions) around then; newer releases drop support old repositories need."""


@dataclass(frozen=True)
class EnvSpec:
    """What an environment is built from (the official spec's fields, plus where)."""

    repo: str
    version: str
    python: str
    packages: str = ""
    pip_packages: tuple[str, ...] = ()
    pre_install: tuple[str, ...] = ()
    install: str = ""
    test_cmd: str = ""
    eval_commands: tuple[str, ...] = ()
    setup_commit: str = ""

    def digest(self, **recipe: Any) -> str:
        """A hash of the whole build recipe: this spec, `BUILDER_VERSION`, the checkout
        layout, the era and whatever `recipe` adds (the Python patch release, the
        requirement lines read from the repository)."""
        from tasks.swebench.repos import CHECKOUT_LAYOUT

        whole = {"spec": asdict(self), "builder": BUILDER_VERSION, "era": OFFICIAL_ERA,
                 "checkout_layout": CHECKOUT_LAYOUT, **recipe}
        return hashlib.sha256(json.dumps(whole, sort_keys=True).encode()).hexdigest()[:12]

    def key(self, **recipe: Any) -> str:
        return f"{self.repo.replace('/', '__')}-{self.version}-{self.digest(**recipe)}"


def env_spec(instance: Instance) -> EnvSpec:
    """The official spec of `instance`'s (repository, version)."""
    try:
        from swebench.harness.constants import MAP_REPO_VERSION_TO_SPECS
    except ImportError as exc:
        from harness.core import MissingDependencyError

        raise MissingDependencyError("swebench", "swebench", "SWE-bench environments") from exc
    specs = MAP_REPO_VERSION_TO_SPECS.get(instance.repo, {}).get(instance.version)
    if specs is None:
        raise EnvBuildError(f"swebench has no spec for {instance.repo} {instance.version}")
    test_cmd = specs.get("test_cmd", "")
    as_tuple = lambda v: tuple(v) if isinstance(v, (list, tuple)) else ((v,) if v else ())  # noqa
    return EnvSpec(instance.repo, instance.version, str(specs["python"]),
                   str(specs.get("packages", "")), as_tuple(specs.get("pip_packages")),
                   as_tuple(specs.get("pre_install")), str(specs.get("install", "")),
                   test_cmd[-1] if isinstance(test_cmd, list) else str(test_cmd),
                   as_tuple(specs.get("eval_commands")),
                   instance.environment_setup_commit or instance.base_commit)


def find_python(version: str) -> Path:
    """The install prefix of a Python `version` (``3.9``): ``$PYENV_ROOT/versions/3.9.*``
    (newest patch release), else ``uv python find``."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found = sorted((p for p in pyenv.glob(f"{version}.*") if re.fullmatch(
        rf"{re.escape(version)}\.\d+", p.name)), key=lambda p: int(p.name.split(".")[-1]))
    if found:
        return found[-1]
    if shutil.which("uv"):
        done = subprocess.run(["uv", "python", "find", version], capture_output=True, text=True)
        if done.returncode == 0:
            return Path(done.stdout.strip()).resolve().parents[1]
    raise EnvBuildError(f"no Python {version} here (pyenv install {version}, or uv python "
                        f"install {version})")


@dataclass(frozen=True)
class BuiltEnv:
    """A built environment: `layer` stacks over the rootfs; `python` is bound read-only at
    its own path; `wheels` at `WHEELS`. `build_s` is the build's wall time (0 when cached)."""

    spec: EnvSpec
    layer: Path
    python: Path
    wheels: Path
    build_s: float
    cached: bool
    notes: tuple[str, ...] = ()
    era: str = OFFICIAL_ERA
    """The date packages were resolved as of (later fetches use it too)."""

    def binds(self) -> list[Any]:
        from tasks.sandbox import Bind

        return [Bind(self.python, str(self.python)), Bind(self.wheels, WHEELS)]


_ARCHIVE = re.compile(r"(?i).*\.(?:whl|zip|tar|tgz|tbz|txz|tlz|tar\.(?:gz|bz2|xz|lz))")


def registry_requirement(line: str) -> str | None:
    """`line` as a requirement on a package of the registry (PEP 508 ``name[extras]``,
    optional version specifiers, optional ``; marker``; in `packaging`'s canonical form), or
    None when it is anything else.

    Accepted: ``numpy==1.26``, ``requests[socks]>=2; python_version<"3.12"``. Rejected: pip
    options (``--index-url http://x``, ``-r other.txt``, ``-e .``), direct references
    (``pkg @ https://x/y.whl``), VCS or archive URLs (``git+https://github.com/a/b``), paths
    (``./local``, ``dist/pkg.tar.gz``), anything containing ``://`` or ``@``, and what
    `packaging` cannot parse. Every line that reaches uv or pip on the host passes here: it
    decides which addresses the host contacts and what pip's argv holds.
    """
    from packaging.requirements import InvalidRequirement, Requirement

    text = line.strip()
    if not text or text.startswith("-") or "://" in text or "@" in text:
        return None
    try:
        requirement = Requirement(text)
    except InvalidRequirement:
        return None
    if requirement.url is not None or _ARCHIVE.fullmatch(requirement.name):
        return None
    return str(requirement)


def _registry_lines(lines: Sequence[str], where: str, notes: list[str]) -> list[str]:
    """The registry requirements among `lines` (canonical form); the others are dropped and
    named in `notes`."""
    kept = []
    for line in lines:
        accepted = registry_requirement(line)
        if accepted is None:
            notes.append(f"dropped requirement line {line!r} ({where}): not a registry "
                         "requirement")
        else:
            kept.append(accepted)
    return kept


def _checked(lines: Sequence[str], what: str) -> list[str]:
    """`lines` when every one is a registry requirement (as given), else `EnvBuildError`."""
    bad = [line for line in lines if registry_requirement(line) is None]
    if bad:
        raise EnvBuildError(f"{what}: {bad[0]!r} is not a registry requirement; not passed "
                            "to uv/pip on the host")
    return list(lines)


_INCLUDE = re.compile(r"(?:-r|--requirement)(?:\s*=\s*|\s*)(\S+)")


def _requirements_file(spec: EnvSpec, first: str, notes: list[str]) -> list[str]:
    """The registry requirements of the requirements file `first` at the setup commit and
    of the files it includes (``-r``); other lines are dropped into `notes`."""
    from swebench.harness.test_spec.python import clean_requirements

    lines: list[str] = []
    pending, seen = [first], set()
    while pending:
        path = pending.pop()
        seen.add(path)
        text = read_at(spec.repo, spec.setup_commit, path) or ""
        for line in clean_requirements(text).splitlines():
            line = line.split("#")[0].strip()
            include = _INCLUDE.fullmatch(line)
            if include is not None:
                target = os.path.normpath(Path(path).parent / include[1])
                if "://" in include[1] or target.startswith(("..", "/")):
                    notes.append(f"dropped include {line!r} ({path}): not a file of the "
                                 "repository")
                elif target not in seen:
                    pending.append(target)
            elif line:
                lines += _registry_lines([line], path, notes)
    return lines


def _requirements(spec: EnvSpec) -> tuple[list[str], list[str]]:
    """Registry requirements of the spec's ``packages`` and ``pip_packages``; and notes
    (among them every line dropped as not a registry requirement)."""
    notes: list[str] = []
    lines: list[str] = []
    if spec.packages == "requirements.txt":
        from swebench.harness.constants import MAP_REPO_TO_REQS_PATHS

        candidates = MAP_REPO_TO_REQS_PATHS.get(spec.repo, ["requirements.txt"])
        first = next((p for p in candidates
                      if read_at(spec.repo, spec.setup_commit, p) is not None), None)
        if first is None:
            raise EnvBuildError(f"{spec.repo} {spec.version}: none of {candidates} exists at "
                                f"{spec.setup_commit}")
        lines += _requirements_file(spec, first, notes)
    elif spec.packages == "environment.yml":
        notes.append("environment.yml (conda) packages not installed")
    elif spec.packages:  # shell words, as upstream hands them to conda: 'numpy==1.19.2'
        try:
            words = shlex.split(spec.packages)
        except ValueError:
            words = spec.packages.split()
        lines += _registry_lines(words, "the spec's packages", notes)
    lines += _registry_lines(spec.pip_packages, "the spec's pip_packages", notes)
    return lines, notes


def _pins(python: Path, requirements: Sequence[str], before: str,
          overrides: Sequence[str] = ()) -> list[str]:
    """`requirements` resolved for `python` by ``uv pip compile`` (confined) with only
    releases uploaded before `before` (the environment's era; when the spec pins something
    newer, the newest releases): ``name==version`` lines. Without uv: `MissingDependencyError`
    naming the ``swebench`` extra (never a silent change of versions)."""
    _checked([*requirements, *overrides], "uv pip compile")
    uv = uv_binary()
    with scratch_dir(cache_root()) as work:
        (work / "override.txt").write_text("\n".join(overrides) + "\n")
        extra = ["--override", str(work / "override.txt")] if overrides else []
        for bound in ([["--exclude-newer", before]] if before else []) + [[]]:
            argv = [uv, "pip", "compile", "--quiet", "--no-header", "--no-annotate",
                    "--python", str(python / "bin" / "python"), *bound[:2], *extra, "-"]
            done = run_host_build(argv, python=python, cache_root=cache_root(),
                                  readable=[Path(uv)], writable=[work],
                                  stdin="\n".join(requirements), timeout_s=900)
            if done.returncode == 0:
                return _checked([line.strip() for line in done.stdout.splitlines()
                                 if line.strip() and not line.startswith("#")],
                                "uv pip compile's output")
    raise EnvBuildError(f"cannot resolve {' '.join(requirements)[:200]}: "
                        f"{done.stderr.strip()[-300:]}")


def uv_binary() -> str:
    """The ``uv`` executable (the `uv` package of the ``swebench`` extra, else ``uv`` on
    ``PATH``); without it packages could not be pinned to the era, so that is an error."""
    try:
        from uv import find_uv_bin

        return str(find_uv_bin())
    except (ImportError, FileNotFoundError):
        found = shutil.which("uv")
        if found is None:
            from harness.core import MissingDependencyError

            raise MissingDependencyError("uv", "swebench", "resolving SWE-bench environment "
                                         "packages as of their era") from None
        return found


def _host_pip_python(python: Path) -> Path:
    """A host venv of `python` with the newest pip it supports (old interpreters ship pips
    without ``--use-pep517``), made once; only the package registry is contacted and only
    wheels are installed (no build script runs)."""
    venv = cache_root() / "host-pip" / python.name
    target = venv / "bin" / "python"
    if not (venv / ".ready").exists():
        subprocess.run([str(python / "bin" / "python"), "-m", "venv", "--clear", str(venv)],
                       check=True, capture_output=True)
        minor = int(python.name.split(".")[1])
        newest = {6: "pip<22", 7: "pip<24.1", 8: "pip<25.1"}.get(minor, "pip")  # old pips
        done = subprocess.run([str(target), "-m", "pip", "install", "-q", "--only-binary",
                               ":all:", "--upgrade", newest], capture_output=True, text=True)
        if done.returncode != 0:
            raise EnvBuildError(f"cannot upgrade pip for Python {python.name}: "
                                f"{done.stderr.strip()[-300:]}")
        (venv / ".ready").write_text("ok\n")
    return target


def _host_wheels(python: Path, wheels: Path, requirements: Sequence[str],
                 before: str = "", overrides: Sequence[str] = ()) -> list[str]:
    """Wheels of `requirements` (resolved as `_pins` says) in `wheels`, built by the spec's
    Python with ``pip wheel``, confined (`tasks.swebench.hostbuild`); returns the pins."""
    if not requirements:
        return []
    pins = _checked(_pins(python, requirements, before, overrides), "pip wheel")
    pip = _host_pip_python(python)
    with scratch_dir(cache_root()) as out:
        argv = [str(pip), "-m", "pip", "wheel", "-q", "--no-deps", "--use-pep517",
                "--disable-pip-version-check", "-w", str(out), "--", *pins]
        done = run_host_build(argv, python=python, cache_root=cache_root(),
                              readable=[pip.parents[1]], writable=[out], timeout_s=1800)
        if done.returncode != 0:
            raise EnvBuildError(f"pip wheel {' '.join(pins)[:200]} failed: "
                                f"{done.stderr.strip()[-400:]}")
        wheels.mkdir(parents=True, exist_ok=True)
        for built in out.iterdir():
            shutil.copyfile(built, wheels / built.name)
    return pins


_MISSING = re.compile(r"(?:satisfies the requirement|No matching distribution found for) "
                      r"([^\s(]+)")


def _install_offline(sandbox: Any, command: str, spec: EnvSpec, python: Path, wheels: Path,
                     timeout_s: float, before: str, pins: list[str]) -> str:
    """Run `command` in the sandbox offline, fetching each requirement pip names as missing
    into the wheelhouse (on the host) and retrying; returns the last output. A name that is
    not a registry requirement (`registry_requirement`) stops the build."""
    for _ in range(MAX_FETCH_ROUNDS):
        result = sandbox.run(f"source /opt/miniconda3/bin/activate && cd /testbed && {command}",
                             user="root", timeout_s=timeout_s)
        if result.exit_code == 0:
            return result.output
        missing = _MISSING.findall(result.output)
        if not missing:
            raise EnvBuildError(f"{spec.repo} {spec.version}: `{command}` failed: "
                                f"{result.output.strip()[-600:]}")
        known = {_name(p) for p in pins}
        wanted = missing[-1].split(";")[0].strip("'\" ")
        accepted = registry_requirement(wanted)  # the sandbox's output must not steer the host
        if accepted is None:
            raise EnvBuildError(f"{spec.repo} {spec.version}: pip in the sandbox names "
                                f"{wanted[:120]!r} as missing, which is not a registry "
                                "requirement; the host does not fetch it")
        new = [p for p in _host_wheels(python, wheels, [accepted], before)
               if _name(p) not in known]
        pins += new
        sandbox.write_file("/opt/swe/constraints.txt", "\n".join(pins) + "\n")
    raise EnvBuildError(f"{spec.repo} {spec.version}: `{command}` still misses packages "
                        f"after {MAX_FETCH_ROUNDS} rounds")


def _name(pin: str) -> str:
    return re.split(r"[<>=!~;\[ ]", pin, maxsplit=1)[0].lower().replace("_", "-")


def _era(spec: EnvSpec, mirrors: str | None) -> str:
    """The commit date of the environment's setup commit (ISO), or "" when unknown."""
    from tasks.swebench.repos import mirror_path

    done = subprocess.run(["git", f"--git-dir={mirror_path(spec.repo, mirrors)}", "show", "-s",
                           "--format=%cI", spec.setup_commit], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else ""


def _venv_steps(spec: EnvSpec, python: Path) -> list[str]:
    version = python.name
    return [f"chmod 755 /root && mkdir -p {python.parent} && chmod 755 /root/.pyenv "
            f"{python.parent} 2>/dev/null; true",
            f"{python}/bin/python{'.'.join(version.split('.')[:2])} -m venv {VENV}",
            "mkdir -p /opt/miniconda3/bin"]


def build_environment(instance: Instance, *, rootfs: Path, mirrors: str | None = None,
                      progress: Callable[[str], None] | None = None,
                      timeout_s: float = 1800) -> BuiltEnv:
    """The environment of `instance`'s (repository, version), built on the first call.

    Packages are resolved as of `OFFICIAL_ERA` (when the official images were built, so
    pip's choices match theirs); if that build fails, as of the setup commit's date.
    """
    spec = env_spec(instance)
    python = find_python(spec.python)
    requirements, notes = _requirements(spec)
    home = cache_root() / "envs" / spec.key(python=python.name, requirements=requirements)
    if (home / "env.json").exists():
        record = json.loads((home / "env.json").read_text())
        wheels = Path(record.get("wheels", home / "wheels"))
        return BuiltEnv(spec, home / "layer", python, wheels, 0.0, True,
                        tuple(record.get("notes", ())), record.get("era", OFFICIAL_ERA))
    say = progress or (lambda line: None)
    started = time.perf_counter()
    require_confinement()
    for note in notes:
        logger.warning("%s %s: %s", spec.repo, spec.version, note)
        say(f"{spec.repo} {spec.version}: {note}")
    if spec.pre_install:
        notes.append("pre_install steps (apt/conda) not run")
    failures = []
    for label, before in (("official era", OFFICIAL_ERA), ("commit era", _era(spec, mirrors))):
        wheels = home / f"wheels-{label.split()[0]}"
        say(f"{spec.repo} {spec.version}: {len(requirements)} requirements, resolved as of "
            f"{before} ({label})")
        try:
            _build_layer(spec, home, python, wheels, before, requirements, rootfs=rootfs,
                         mirrors=mirrors, say=say, timeout_s=timeout_s)
            break
        except EnvBuildError as exc:
            failures.append(f"{label}: {exc}")
            say(f"{spec.repo} {spec.version}: build as of {before} failed: {str(exc)[-300:]}")
    else:
        raise EnvBuildError("; ".join(failures)[-900:])
    notes.append(f"packages resolved as of {before} ({label})")
    build_s = time.perf_counter() - started
    (home / "env.json").write_text(json.dumps({"spec": asdict(spec), "python": str(python),
                                               "wheels": str(wheels), "build_s": build_s,
                                               "era": before, "notes": notes}, indent=1))
    say(f"{spec.repo} {spec.version}: built in {build_s:.0f}s")
    return BuiltEnv(spec, home / "layer", python, wheels, build_s, False, tuple(notes), before)


def _build_layer(spec: EnvSpec, home: Path, python: Path, wheels: Path, before: str,
                 requirements: list[str], *, rootfs: Path, mirrors: str | None,
                 say: Callable[[str], None], timeout_s: float) -> None:
    """Steps 1-3 of the module docstring; the layer lands in ``home/layer``."""
    from tasks.sandbox import Bind, Limits, Sandbox

    wheels.mkdir(parents=True, exist_ok=True)
    overrides = [p for p in spec.pip_packages if registry_requirement(p)]  # others: in notes
    pins = _host_wheels(python, wheels, ["pip", "setuptools", "wheel", *requirements], before,
                        overrides=overrides)  # as upstream: pip_packages installed last
    source = checkout(spec.repo, spec.setup_commit, mirrors)
    limits = Limits(wall_s=timeout_s, cpu_s=int(timeout_s), disk_bytes=8 << 30,
                    inodes=1 << 19, processes=2048, output_bytes=1 << 20)  # a dependency tree
    with Sandbox(rootfs, limits=limits, workdir="/testbed",
                 binds=[Bind(python, str(python)), Bind(wheels, WHEELS)]) as sandbox:
        for step in _venv_steps(spec, python):
            result = sandbox.run(step, user="root")
            if result.exit_code != 0:
                raise EnvBuildError(f"{spec.repo} {spec.version}: `{step}` failed: {result.output[-400:]}")
        sandbox.write_file("/opt/miniconda3/bin/activate", ACTIVATE_SHIM)
        sandbox.write_file("/opt/swe/constraints.txt", "\n".join(pins) + "\n")
        sandbox.copy_in(source, "/testbed")
        say(f"{spec.repo} {spec.version}: installing into the venv (offline)")
        quoted = " ".join(_shell_quote(p) for p in pins)
        _install_offline(sandbox, f"python -m pip install -q {quoted}", spec, python, wheels,
                         timeout_s, before, pins)
        if spec.install:
            _install_offline(sandbox, spec.install, spec, python, wheels, timeout_s, before,
                             pins)
        staging = home / ".layer.tmp"
        if staging.exists():
            shutil.rmtree(staging)
        home.mkdir(parents=True, exist_ok=True)
        sandbox.export_layer(staging)
    if (home / "layer").exists():
        shutil.rmtree(home / "layer")
    staging.rename(home / "layer")


def _shell_quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


LAY_OVER_SCRIPT = ("if [ -d /testbed/.git ]; then cd /testbed && git -c safe.directory='*' "
                   "ls-files -z | xargs -0 -r rm -f -- && rm -rf /testbed/.git; "
                   "else rm -rf /testbed; fi")
"""Remove the environment's checkout from ``/testbed`` (its tracked files and ``.git``) and
keep what its install left there (``src/<pkg>.egg-info``, generated version files, compiled
extensions), as upstream's images keep them when they check out ``base_commit``."""


def lay_over_testbed(sandbox: Any, source: Path, *, owner: str = "root") -> None:
    """Put the work tree `source` at ``/testbed`` of `sandbox` over the environment's checkout:
    tracked files replaced, untracked install products kept (`LAY_OVER_SCRIPT`)."""
    result = sandbox.run(LAY_OVER_SCRIPT, user="root", cwd="/")
    if result.exit_code != 0:
        raise EnvBuildError(f"cannot clear /testbed: {result.output.strip()[-300:]}")
    sandbox.copy_in(source, "/testbed", owner=owner)


def prepare_instance(instance: Instance, env: BuiltEnv, *, rootfs: Path,
                     mirrors: str | None = None, timeout_s: float = 1800) -> bool:
    """Fetch what `instance`'s own install needs into the wheelhouse, once per base commit.

    The official eval script re-runs the spec's ``install`` at ``base_commit``, whose
    requirements may differ from the setup commit's; offline, pip would find nothing for
    them. Here that install runs once in a throwaway sandbox over the environment, each
    package pip names as missing is resolved as of the environment's era and built into the
    wheelhouse on the host (`_install_offline`), and the sandbox is discarded. Returns True
    when it ran (False: cached, or nothing to do)."""
    from tasks.sandbox import Limits, Sandbox

    spec = env.spec
    marker = env.layer.parent / "prepared" / instance.base_commit
    if not spec.install or marker.exists():
        return False
    constraints = env.layer / "opt" / "swe" / "constraints.txt"
    pins = constraints.read_text().split() if constraints.exists() else []
    limits = Limits(wall_s=timeout_s, cpu_s=int(timeout_s), disk_bytes=8 << 30,
                    inodes=1 << 17, processes=2048, output_bytes=1 << 20)
    with Sandbox(rootfs, limits=limits, workdir="/testbed", binds=env.binds(),
                 layers=(env.layer,)) as sandbox:
        lay_over_testbed(sandbox, checkout(instance.repo, instance.base_commit, mirrors))
        _install_offline(sandbox, spec.install, spec, env.python, env.wheels, timeout_s,
                         env.era, pins)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text("\n".join(pins) + "\n")
    return True
