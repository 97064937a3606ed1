"""Terminal-Bench task directories (TB1 and TB2/Harbor) and their Dockerfile translation.

TB1: ``task.yaml`` (instruction, category, difficulty, timeouts), ``Dockerfile``,
``run-tests.sh``, ``tests/test_outputs.py``, ``solution.sh`` or ``solution.yaml``.
TB2 (Harbor): ``task.toml`` (each documented key honoured, noted or refused: see
`tasks.terminal.harbor`), ``instruction.md``, ``environment/Dockerfile``, ``tests/test.sh``
(writes ``/logs/verifier/reward.json`` or ``reward.txt``), ``solution/solve.sh``.

A TB1 task without a ``Dockerfile`` names its environment in ``docker-compose.yaml`` (its one
service's ``build.context`` and ``dockerfile``) or, with ``env_name``, in the dataset's
``environments/<env_name>/docker-compose.yaml``; a compose file with several services is
unsupported.

The Dockerfile becomes build steps on the Debian rootfs: ``FROM`` names a base image that
`tasks.terminal.base_images` emulates (its workdir, ``python``/``pip``) or the task is
unsupported, ``apt-get install`` adds Debian packages to the rootfs recipe, ``pip install``
runs the real pip against PyPI through the sandbox's ``registries`` egress at build time
(another ``--index-url`` is unsupported), ``COPY``/``WORKDIR``/``ENV`` (``ARG`` defaults
substituted, heredoc ``COPY <<EOT`` written as a file) and the rest of each ``RUN`` replay in
the sandbox as root. A step that cannot be translated (a second ``FROM``, ``ADD`` of a URL,
a download at build time, a ``COPY`` source that leaves the build context, ...) makes the
task *unsupported*, with that step as the reason.
Every file the harness reads or copies from a task folder is confined to it
(`tasks.terminal.build_context`).
"""

from __future__ import annotations

import glob
import json
import os
import posixpath
import re
import shlex
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

from tasks.terminal.base_images import BASE_IMAGES, base_image
from tasks.sandbox_egress import configured_allow_list
from tasks.sandbox_mirror import mirror_holds, source_urls
from tasks.terminal.build_context import ContextEscape, ContextSource, SourceMissing, resolve_source
from tasks.terminal.harbor import Refused, read_settings

__all__ = ["BuildStep", "TerminalTask", "Unsupported", "context_sources", "load_task",
           "load_tasks", "network_policy", "translate_dockerfile"]

_NETWORK_TOOLS = re.compile(r"(^|[\s;&|(])(curl|wget|git\s+clone|uv\s|uvx\s|npm\s|pip3?\s+download"
                            r"|conda\s|cargo\s+install|go\s+install|rustup)")
_COMPOUND = re.compile(r"(^|[\s;&|])(for|while|until|if|case|function)\s|[{}()]|\$\(")
_APT = re.compile(r"^(?:DEBIAN_FRONTEND=\S+\s+)?(?:sudo\s+)?apt(?:-get)?\s+(.*)$")
_PIP = re.compile(r"^(?:python3?\s+-m\s+)?pip3?\s+install\s+(.*)$")
_PIP_ANYWHERE = re.compile(r"(^|[\s;&|(])(python3?\s+-m\s+)?pip3?\s+install\s")
_INDEX_FLAGS = ("--index-url", "-i", "--extra-index-url")
PUBLIC_INDEX = ("https://pypi.org/simple", "https://pypi.python.org/simple")
"""Index URLs a ``pip install --index-url`` may name: PyPI, which the registries egress reaches."""
_HEREDOC = re.compile(r"""<<(-?)(['"]?)([A-Za-z_][A-Za-z0-9_]*)\2""")


class Unsupported(Exception):
    """A task this project cannot run offline; the message names the step or the reason."""


def context_sources(context: Path, source: str, step: str) -> tuple[ContextSource, ...]:
    """`resolve_source`, its refusal raised as `Unsupported` naming `step` (a Dockerfile line
    or a task file), e.g. ``COPY ../../etc/passwd /app/x: source leaves the build context
    ('../../etc/passwd')``."""
    try:
        return resolve_source(context, source)
    except ContextEscape as exc:
        raise Unsupported(f"{step}: {exc}") from None


@dataclass(frozen=True)
class BuildStep:
    """One build step: ``("from", image label, Debian suite)`` (the emulated base image,
    `tasks.terminal.base_images`), ``("run", command)``, ``("copy", source, target)``,
    ``("workdir", path)``, ``("env", name, value)`` or ``("write", path, text)`` (a heredoc
    ``COPY``)."""

    kind: str
    args: tuple[str, ...]


@dataclass(frozen=True)
class TerminalTask:
    """One Terminal-Bench task, in either format, translated for the sandbox."""

    id: str
    format: str  # "tb1" or "tb2"
    path: Path
    instruction: str
    category: str
    difficulty: str
    packages: tuple[str, ...]
    steps: tuple[BuildStep, ...]
    workdir: str
    env: tuple[tuple[str, str], ...]
    tests_dir: Path
    solution: tuple[str, ...]  # shell scripts; the oracle plays them in order
    solution_dir: Path | None
    agent_timeout_s: float
    verifier_timeout_s: float
    notes: tuple[str, ...] = ()
    unsupported: str | None = None
    network: str = "none"  # "none" or "registries": the sandbox's policy (`network_policy`)
    build_network: str = "none"
    """``registries`` when the task's commands reach them (`network`) or a build step installs
    from PyPI (``pip install``), else ``none``."""
    context: Path | None = None
    """The Dockerfile's build context (None: the task folder in TB1, ``environment/`` in TB2)."""
    extras: dict = field(default_factory=dict, compare=False)


def _split_commands(run: str) -> list[str]:
    """Top-level ``&&``/``;`` parts of a RUN command (quotes respected)."""
    parts, current, quote, i = [], [], "", 0
    while i < len(run):
        ch = run[i]
        if quote:
            current.append(ch)
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
            current.append(ch)
        elif run.startswith("&&", i) or ch == ";":
            parts.append("".join(current).strip())
            current = []
            i += 2 if ch == "&" else 1
            continue
        else:
            current.append(ch)
        i += 1
    parts.append("".join(current).strip())
    return [p for p in parts if p]


def _check_pip(part: str) -> None:
    """`Unsupported` when a pip install names an index other than PyPI (`PUBLIC_INDEX`)."""
    words = shlex.split(part)
    for i, word in enumerate(words):
        flag, _, value = word.partition("=")
        if flag in _INDEX_FLAGS:
            url = value or (words[i + 1] if i + 1 < len(words) else "")
            if url.rstrip("/") not in PUBLIC_INDEX:
                raise Unsupported(f"RUN {part!r}: pip index {url} is not a package registry "
                                  "the sandbox reaches (PyPI only)")


MIRROR_ENV = "TERMINAL_BENCH_MIRROR"
"""A mirror folder (`tasks.sandbox_mirror`) serving build steps' sources outside the
registries: ``git clone`` of repositories it holds, ``curl``/``wget`` of files it holds."""
MIRROR_NOTE = "sources outside the registries served from the mirror folder"


def _outside_sources(run: str, notes: list[str]) -> None:
    """`Unsupported` unless every outside source `run` fetches (only ``git clone``,
    ``curl``, ``wget``) is in the mirror folder of `MIRROR_ENV`, the first missing URL named."""
    tools = {m.group(2).split()[0] for m in _NETWORK_TOOLS.finditer(" " + run)}
    urls = source_urls(run)
    if not urls or not tools <= {"curl", "wget", "git"}:
        raise Unsupported(f"RUN {run!r} needs the network at build time")
    root = os.environ.get(MIRROR_ENV)
    missing = [url for kind, url in urls if not (root and mirror_holds(Path(root), kind, url))]
    if missing:
        where = f"not in the mirror folder {root}" if root else f"${MIRROR_ENV} is unset"
        raise Unsupported(f"RUN {run!r} needs the network at build time: {missing[0]} is "
                          f"outside the registries ({where})")
    notes.append(MIRROR_NOTE)


def _translate_run(run: str, packages: list[str], notes: list[str]) -> str:
    """Collect apt/pip packages from `run`; return what is left to replay (may be empty).
    A compound command (loops, conditionals, groups) is kept whole and replayed with the
    offline ``apt-get`` stand-in on PATH; its packages are still added to the rootfs."""
    if _COMPOUND.search(run) or "\n" in run:
        if _PIP_ANYWHERE.search(run):
            _check_pip(run)
        if _NETWORK_TOOLS.search(" " + run):
            _outside_sources(run, notes)
        for match in re.finditer(r"apt(?:-get)?\s+(?:-\S+\s+)*install\s+([^;&|]*)", run):
            packages += [w.split("=")[0] for w in shlex.split(match.group(1))
                         if not w.startswith("-")]
        return run
    kept = []
    for part in _split_commands(run):
        apt = _APT.match(part)
        pip = _PIP.match(part)
        if apt:
            words = [w for w in shlex.split(apt.group(1))
                     if not w.startswith("-")]  # options may come before the command
            if words and words[0] in ("install",):
                names = [w for w in words[1:] if not w.startswith("-")]
                if any("=" in n for n in names):
                    notes.append(f"apt version pins dropped: {' '.join(names)}")
                packages += [n.split("=")[0] for n in names]
            continue  # update, clean, upgrade: nothing to replay offline
        if pip:
            _check_pip(part)
            notes.append("pip installs from PyPI at build time (registries egress)")
            kept.append(part)
            continue
        if part.startswith("rm -rf /var/lib/apt/lists"):
            continue
        if _NETWORK_TOOLS.search(" " + part):
            _outside_sources(part, notes)
        kept.append(part)
    return " && ".join(kept)


def _copy_steps(keyword: str, rest: str, line: str, context: Path, workdir: str
                ) -> list[BuildStep]:
    """The copy steps of one COPY/ADD (shell or JSON-array form; ``--chown``, ``--chmod``
    and ``--link`` ignored), every source confined to `context`, globs expanded."""
    flags = []
    while rest.startswith("--"):
        flag, _, rest = rest.partition(" ")
        flags.append(flag)
        rest = rest.strip()
    try:
        words = json.loads(rest) if rest.startswith("[") else shlex.split(rest)
    except ValueError:
        words = None
    if not isinstance(words, list) or len(words) < 2 or not all(isinstance(w, str)
                                                                 for w in words):
        raise Unsupported(f"unreadable {keyword} ({line!r})")
    if any(flag.startswith(("--from", "--parents", "--exclude")) for flag in flags):
        raise Unsupported(f"{keyword} options ({line!r})")
    if any("://" in w or w.startswith("git@") for w in words):
        raise Unsupported(f"{keyword} from a URL ({line!r})")
    target = words[-1] if words[-1].startswith("/") else f"{workdir.rstrip('/')}/{words[-1]}"
    sources = []  # as written; a glob as its matches (escaped: the build resolves them again)
    for source in words[:-1]:
        found = context_sources(context, source, line)
        sources += [glob.escape(f.name) for f in found] if glob.has_magic(source) else [source]
    if len(sources) > 1 and not target.endswith("/"):
        target += "/"  # several sources (a glob's matches included) go into a directory
    return [BuildStep("copy", (source, target)) for source in sources]


def _instructions(text: str) -> list[tuple[str, str]]:
    """The Dockerfile's instructions as ``(line, heredoc body)``: continuation lines joined,
    comments dropped, the body of a heredoc (``<<EOT`` ... ``EOT``) taken out of the stream
    ("" when the instruction has none; the first heredoc of a line only)."""
    lines, found, i = text.splitlines(), [], 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        while line.rstrip().endswith("\\") and i < len(lines):
            line = line.rstrip()[:-1] + " " + lines[i]
            i += 1
        body, match = "", _HEREDOC.search(line)
        if match:
            strip_tabs, delimiter, kept = match.group(1) == "-", match.group(3), []
            while i < len(lines) and (lines[i].lstrip("\t") if strip_tabs else lines[i]) \
                    != delimiter:
                kept.append(lines[i].lstrip("\t") if strip_tabs else lines[i])
                i += 1
            if i >= len(lines):
                raise Unsupported(f"heredoc {delimiter} never ends ({line.strip()!r})")
            i += 1
            body = "\n".join(kept) + "\n"
        found.append((line.strip(), body))
    return found


def _substitute(text: str, args: dict[str, str]) -> str:
    """``$NAME``/``${NAME}`` of the ``ARG`` defaults seen so far replaced by their values."""
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: args.get(m.group(1) or m.group(2),
                                                               m.group(0)), text)


def _from(rest: str, steps: list[BuildStep], notes: list[str]) -> str:
    """The emulation of a ``FROM`` (`tasks.terminal.base_images`); its workdir or "/"."""
    words = [w for w in rest.split() if not w.startswith("--")]
    name = words[0] if words else ""
    image = base_image(name)
    if image is None:
        known = ", ".join(i.label for i in BASE_IMAGES)
        raise Unsupported(f"base image {name} is not emulated (known: {known})")
    notes.append(image.note)
    steps.append(BuildStep("from", (image.label, image.suite)))  # its shared layer
    if image.workdir:
        steps.append(BuildStep("workdir", (image.workdir,)))
    return image.workdir or "/"


def translate_dockerfile(text: str, context: Path) -> tuple[list[str], list[BuildStep], str,
                                                                list[str]]:
    """Packages, replay steps, final workdir and notes of a Dockerfile (see module docstring).
    Raises `Unsupported` naming the first step that cannot be translated."""
    packages: list[str] = []
    steps: list[BuildStep] = []
    notes: list[str] = []
    args: dict[str, str] = {}
    workdir, seen_from = "/", False
    for line, body in _instructions(text):
        keyword, _, rest = line.partition(" ")
        keyword, rest = keyword.upper(), _substitute(rest.strip(), args)
        if keyword == "FROM":
            if seen_from:
                raise Unsupported(f"multi-stage build ({line!r})")
            seen_from = True
            workdir = _from(rest, steps, notes)
        elif keyword == "RUN":
            if rest.startswith("["):
                raise Unsupported(f"exec-form RUN ({line!r})")
            if rest.startswith("--"):
                raise Unsupported(f"RUN options ({line!r})")
            if body:  # RUN <<EOF script, or a command fed by a heredoc
                match = _HEREDOC.search(rest)
                rest = body if rest.startswith("<<") else f"{rest}\n{body}{match.group(3)}"
            command = _translate_run(rest, packages, notes)
            if command:
                steps.append(BuildStep("run", (command,)))
        elif keyword in ("COPY", "ADD") and body:
            target = rest.split()[-1]
            target = target if target.startswith("/") else f"{workdir.rstrip('/')}/{target}"
            steps.append(BuildStep("write", (target, body)))
        elif keyword in ("COPY", "ADD"):
            steps += _copy_steps(keyword, rest, line, context, workdir)
        elif keyword == "WORKDIR":
            workdir = rest if rest.startswith("/") else f"{workdir.rstrip('/')}/{rest}"
            steps.append(BuildStep("workdir", (workdir,)))
        elif keyword == "ENV":
            pairs = re.findall(r'(\w+)=("[^"]*"|\S+)', rest) or [tuple(rest.split(None, 1))]
            for name, value in pairs:
                steps.append(BuildStep("env", (name, value.strip('"'))))
        elif keyword == "ARG":
            name, _, default = rest.partition("=")
            args[name.strip()] = default.strip().strip('"')
        elif keyword in ("CMD", "ENTRYPOINT", "EXPOSE", "LABEL", "USER", "SHELL", "VOLUME",
                         "HEALTHCHECK", "STOPSIGNAL", "MAINTAINER"):
            if keyword == "USER":
                notes.append(f"USER {rest} ignored: agent commands run as the sandbox's root")
        else:
            raise Unsupported(f"Dockerfile instruction {keyword} ({line!r})")
    return sorted(set(packages)), steps, workdir, notes


def network_policy(environment: dict) -> str:
    """The network policy a TB2 task's ``[environment]`` table declares. The project's own
    ``network = "none"`` or ``"registries"`` wins. Else Harbor's ``network_mode`` (from
    ``allow_internet`` when absent: true, Harbor's default, is ``public``; false
    ``no-network``; ``allowed_hosts`` alone ``allowlist``): ``no-network`` is ``none``;
    ``public`` is ``registries``, the nearest the sandbox offers (package registries only,
    through its egress proxy, as TB1 tasks get); ``allowlist`` is ``registries`` when every
    allowed host is on the egress allow-list (`configured_allow_list`), ``none`` when it
    lists none. A table that declares nothing is ``none`` (the project's own tasks run
    offline). Any other value makes the task `Unsupported`, the value named."""
    declared = environment.get("network")
    if declared in ("none", "registries"):
        return declared
    if declared not in (None, False):
        raise Unsupported(f"the task declares network = {declared!r}; supported: 'none' or "
                          "'registries' (package registries only)")
    hosts = [str(h).strip().lower().rstrip(".") for h in environment.get("allowed_hosts") or []]
    mode = environment.get("network_mode") or ("allowlist" if hosts else "public"
                                               if environment.get("allow_internet") is True
                                               else "no-network")
    if mode in ("no-network", "public"):
        return "none" if mode == "no-network" else "registries"
    if mode != "allowlist":
        raise Unsupported(f"the task declares network_mode = {mode!r}; supported: "
                          "'no-network', 'public' or 'allowlist' (package registries only)")
    reachable = {e.lower() if e.startswith("[") else e.rsplit(":", 1)[0].lower()
                 for e in configured_allow_list()}
    outside = [h for h in hosts if h not in reachable]
    if outside:
        raise Unsupported(f"allowed_hosts {', '.join(outside)} are outside the registries the "
                          f"sandbox reaches ({', '.join(sorted(reachable))})")
    return "registries" if hosts else "none"


def _read_yaml(path: Path) -> dict:
    try:
        import yaml
    except ImportError:  # pragma: no cover - PyYAML comes with the project's dependencies
        from harness.core import MissingDependencyError
        raise MissingDependencyError("pyyaml", "dev", "TB1 task.yaml files") from None
    try:
        return yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:  # one line: the problem and where
        raise ValueError(f"{path.name}: {' '.join(str(exc).split())}") from None


def _tb1_instruction(meta: dict) -> str:
    if "instruction" in meta:
        return str(meta["instruction"])
    for entry in meta.get("descriptions") or []:
        if entry.get("key") == "base":
            return str(entry.get("description", ""))
    return ""


_TB2_FILES = ("task.toml", "instruction.md", "environment/Dockerfile", "tests", "solution")
_TB1_FILES = ("task.yaml", "Dockerfile", "tests", "run-tests.sh", "solution.sh",
              "solution.yaml", "docker-compose.yaml")


def compose_build(compose: Path, where: Path) -> tuple[Path, str]:
    """The build context (confined to `where`) and Dockerfile name of a TB1
    ``docker-compose.yaml`` with one service; `Unsupported` for several services, a service
    without ``build`` or a context that leaves `where`."""
    try:
        services = (_read_yaml(compose) or {}).get("services") or {}
    except (ValueError, OSError, AttributeError) as exc:
        raise Unsupported(f"docker-compose.yaml cannot be read: {exc}") from None
    if not isinstance(services, dict) or len(services) != 1:
        names = ", ".join(services) if isinstance(services, dict) else "?"
        raise Unsupported(f"docker-compose.yaml has {len(services)} services ({names}); "
                          "only single-service tasks are supported")
    (name, service), = services.items()
    build = (service or {}).get("build")
    if isinstance(build, str):
        build = {"context": build}
    if not isinstance(build, dict):
        raise Unsupported(f"docker-compose.yaml service {name} has no build section")
    context = str(build.get("context") or ".")
    if context.startswith("${T_BENCH_TASK_BUILD_CONTEXT_DIR}"):
        context = "." + context[len("${T_BENCH_TASK_BUILD_CONTEXT_DIR}"):]
    base = os.path.relpath(os.path.realpath(compose.parent), os.path.realpath(where))
    try:
        found = resolve_source(where, posixpath.normpath(posixpath.join(base, context)))[0].path
    except ContextEscape as exc:
        raise Unsupported(f"docker-compose.yaml build context: {exc}") from None
    return found, str(build.get("dockerfile") or "Dockerfile")


def _task_files(path: Path, names: tuple[str, ...]) -> dict[str, Path]:
    """The real path of each named task file or directory (the plain path of a missing one),
    each confined to the task folder; `Unsupported` naming the first that leaves it."""
    files = {}
    for name in names:
        try:
            files[name] = resolve_source(path, name)[0].path
        except SourceMissing:
            files[name] = path / name
        except ContextEscape as exc:
            raise Unsupported(f"task file {name}: {exc}") from None
    return files


def _tb1_solution(files: dict[str, Path]) -> tuple[str, ...]:
    if files["solution.sh"].exists():
        return (files["solution.sh"].read_text(),)
    if files["solution.yaml"].exists():
        entries = _read_yaml(files["solution.yaml"])
        return tuple(str(e["command"]) for e in entries if isinstance(e, dict) and "command" in e)
    return ()


def _finish(path: Path, fmt: str, files: dict[str, Path], dockerfile: str, *,
            instruction: str = "", meta: dict | None = None, solution: tuple[str, ...] = (),
            solution_dir: Path | None = None, agent_s: float = 900.0, verifier_s: float = 180.0,
            environment: dict | None = None, refused: str | None = None,
            context: Path | None = None, verifier: dict | None = None) -> TerminalTask:
    """The task, translated; `refused` (a task file that leaves the folder) or the first
    step that cannot be translated makes it unsupported."""
    meta = meta or {}
    packages: list[str] = []
    steps: list[BuildStep] = []
    notes: list[str] = []
    workdir, unsupported = "/app", None
    policy = "registries" if fmt == "tb1" else "none"  # TB1 containers had the internet
    tests = files.get("tests", path / "tests")
    try:
        if refused:
            raise Unsupported(refused)
        if fmt == "tb2":
            policy = network_policy(environment or {})
        for name, value in (("agent timeout", agent_s), ("verifier timeout", verifier_s)):
            if not 0 < value <= 86400:  # nan fails both comparisons
                raise Unsupported(f"{name} {value!r} s is out of range (0, 86400]")
        if context is not None:
            dockerfile_path = context / dockerfile
        elif not files[dockerfile].exists():
            raise Unsupported(f"no Dockerfile at {dockerfile} and no docker-compose.yaml")
        else:
            dockerfile_path = files[dockerfile]
        if not tests.is_dir():
            raise Unsupported("no tests directory")
        if not dockerfile_path.is_file():
            raise Unsupported(f"no Dockerfile at {dockerfile_path.relative_to(path.parent)}")
        packages, steps, workdir, notes = translate_dockerfile(
            dockerfile_path.read_text(), context or path / os.path.dirname(dockerfile))
        if workdir == "/":
            workdir = "/app"
    except Unsupported as exc:
        unsupported = str(exc)
    env = tuple((s.args[0], s.args[1]) for s in steps if s.kind == "env")
    # a build reaches the registries where the task's commands do (upstream builds had the
    # internet; a step may run a script that installs), or where a step installs from PyPI
    build_network = "registries" if policy == "registries" or any(
        s.kind == "run" and _PIP_ANYWHERE.search(" " + s.args[0]) for s in steps) else "none"
    return TerminalTask(
        id=path.name, format=fmt, path=path, instruction=instruction.strip(),
        category=str(meta.get("category") or "uncategorized"),
        difficulty=str(meta.get("difficulty") or "unknown"), packages=tuple(packages),
        steps=tuple(steps), workdir=workdir, env=env, tests_dir=tests, solution=solution,
        solution_dir=solution_dir, agent_timeout_s=agent_s, verifier_timeout_s=verifier_s,
        notes=tuple(dict.fromkeys(notes)), unsupported=unsupported, network=policy,
        build_network=build_network, context=context,
        extras={"tags": list(meta.get("tags") or []), **(verifier or {}),
                **({"mirror": os.environ[MIRROR_ENV]} if MIRROR_NOTE in notes else {})})


def load_task(path: Path) -> TerminalTask:
    """The task in directory `path` (TB2 if it has ``task.toml``, TB1 if ``task.yaml``); a
    task file that leaves the folder (a symlink out), cannot be read or parsed, or sets an
    out-of-range time limit makes it unsupported with one line."""
    path = Path(path)
    tb2 = os.path.lexists(path / "task.toml")
    if not tb2 and not os.path.lexists(path / "task.yaml"):
        raise Unsupported(f"{path} is neither a TB1 (task.yaml) nor a TB2 (task.toml) task")
    fmt, dockerfile = ("tb2", "environment/Dockerfile") if tb2 else ("tb1", "Dockerfile")
    try:
        files = _task_files(path, _TB2_FILES if tb2 else _TB1_FILES)
        return _load_tb2(path, files, dockerfile) if tb2 else _load_tb1(path, files, dockerfile)
    except Unsupported as exc:
        return _finish(path, fmt, {}, dockerfile, refused=str(exc))
    except (OSError, UnicodeDecodeError, ValueError, TypeError, AttributeError, KeyError) as exc:
        name = "task.toml" if tb2 else "task.yaml"
        reason = " ".join(str(exc).split())[:200]
        return _finish(path, fmt, {}, dockerfile,
                       refused=f"{name} or a task file cannot be read: "
                               f"{type(exc).__name__}: {reason}")


def _load_tb2(path: Path, files: dict[str, Path], dockerfile: str) -> TerminalTask:
    """A Harbor task: its task.toml settings as `tasks.terminal.harbor` reads them."""
    config = tomllib.loads(files["task.toml"].read_text())
    try:
        settings = read_settings(config, path)
    except Refused as exc:
        raise Unsupported(str(exc)) from None
    solve = files["solution"] / "solve.sh"
    task = _finish(path, "tb2", files, dockerfile, meta=config.get("metadata", {}),
                   instruction=files["instruction.md"].read_text()
                   if files["instruction.md"].is_file() else "",
                   solution=(solve.read_text(),) if solve.is_file() else (),
                   solution_dir=files["solution"] if solve.is_file() else None,
                   agent_s=settings.agent_timeout_s, verifier_s=settings.verifier_timeout_s,
                   environment=config.get("environment", {}))
    return replace(task, env=task.env + settings.env,
                   notes=tuple(dict.fromkeys(task.notes + settings.notes)),
                   extras={**task.extras, "memory_mb": settings.memory_mb,
                           "storage_mb": settings.storage_mb,
                           "verifier_env": dict(settings.verifier_env),
                           "solution_env": dict(settings.solution_env)})


DEFAULT_TEST_SCRIPTS = ("setup-uv-pytest.sh", "run-uv-pytest.sh")
"""The dataset scripts a TB1 task's tests get when its task.yaml names none (upstream's
default: ``defaults/run-tests.sh`` sources them)."""


def _tb1_verifier(path: Path, files: dict[str, Path], meta: dict) -> dict:
    """Where TB1's verifier comes from: ``run_tests``, the task's ``run-tests.sh`` or the
    dataset's ``defaults/run-tests.sh`` (None: plain pytest), and ``test_scripts``, the
    dataset's ``scripts/`` the task.yaml lists, upstream's `DEFAULT_TEST_SCRIPTS` when it
    lists none (copied into /tests beside the tests; those the dataset lacks are skipped)."""
    dataset = path.parent.parent
    run_tests = files["run-tests.sh"] if files["run-tests.sh"].is_file() else None
    if run_tests is None and (dataset / "defaults" / "run-tests.sh").is_file():
        run_tests = context_sources(dataset, "defaults/run-tests.sh", "run-tests.sh")[0].path
    listed = meta.get("test_scripts")
    names = listed if isinstance(listed, list) else DEFAULT_TEST_SCRIPTS
    scripts = [context_sources(dataset, f"scripts/{name}", f"test_scripts {name}")[0].path
               for name in names if isinstance(name, str)
               and os.path.lexists(dataset / "scripts" / name)]
    return {"run_tests": run_tests, "test_scripts": tuple(scripts)}


def _load_tb1(path: Path, files: dict[str, Path], dockerfile: str) -> TerminalTask:
    meta = _read_yaml(files["task.yaml"])
    if not isinstance(meta, dict):
        raise ValueError("task.yaml is not a mapping")
    context, env_name = None, meta.get("env_name")
    if env_name:  # a shared environment of the dataset: <dataset>/environments/<env_name>
        dataset = path.parent.parent
        compose = context_sources(dataset, f"environments/{env_name}/docker-compose.yaml",
                                  f"env_name {env_name}")[0].path
        context, dockerfile = compose_build(compose, dataset)
    elif files["docker-compose.yaml"].exists():
        context, dockerfile = compose_build(files["docker-compose.yaml"], path)
    return _finish(path, "tb1", files, dockerfile, meta=meta, context=context,
                   verifier=_tb1_verifier(path, files, meta),
                   instruction=_tb1_instruction(meta), solution=_tb1_solution(files),
                   agent_s=float(meta.get("max_agent_timeout_sec", 900)),
                   verifier_s=float(meta.get("max_test_timeout_sec", 180)))


def load_tasks(root: Path) -> list[TerminalTask]:
    """Every task directory directly under `root` (or under ``root/tasks``), sorted by id."""
    root = Path(root)
    if (root / "tasks").is_dir():
        root = root / "tasks"
    found = [d for d in sorted(root.iterdir()) if d.is_dir() and
             ((d / "task.toml").exists() or (d / "task.yaml").exists())]
    return [load_task(d) for d in found]
