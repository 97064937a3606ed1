"""Terminal-Bench task directories (TB1 and TB2/Harbor) and their Dockerfile translation.

TB1: ``task.yaml`` (instruction, category, difficulty, timeouts), ``Dockerfile``,
``run-tests.sh``, ``tests/test_outputs.py``, ``solution.sh`` or ``solution.yaml``.
TB2 (Harbor): ``task.toml``, ``instruction.md``, ``environment/Dockerfile``, ``tests/test.sh``
(writes ``/logs/verifier/reward.txt``), ``solution/solve.sh``.

The Dockerfile becomes build steps on the Debian rootfs: ``FROM`` picks nothing (every task
runs on the project's Debian bookworm rootfs), ``apt-get install`` adds Debian packages to the
rootfs recipe, ``pip install X`` adds Debian's ``python3-x``, ``COPY``/``WORKDIR``/``ENV`` and
the rest of each ``RUN`` replay in the sandbox as root without network. A step that cannot be
translated (a second ``FROM``, ``ADD`` of a URL, a download at build time, ...) makes the task
*unsupported*, with that step as the reason.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["BuildStep", "TerminalTask", "Unsupported", "load_task", "load_tasks",
           "translate_dockerfile"]

_NETWORK_TOOLS = re.compile(r"(^|[\s;&|(])(curl|wget|git\s+clone|uv\s|uvx\s|npm\s|pip3?\s+download"
                            r"|conda\s|cargo\s+install|go\s+install|rustup)")
_COMPOUND = re.compile(r"(^|[\s;&|])(for|while|until|if|case|function)\s|[{}()]|\$\(")
_APT = re.compile(r"^(?:DEBIAN_FRONTEND=\S+\s+)?(?:sudo\s+)?apt(?:-get)?\s+(.*)$")
_PIP = re.compile(r"^(?:python3?\s+-m\s+)?pip3?\s+install\s+(.*)$")


class Unsupported(Exception):
    """A task this project cannot run offline; the message names the step or the reason."""


@dataclass(frozen=True)
class BuildStep:
    """One build step: ``("run", command)``, ``("copy", source, target)``, ``("workdir",
    path)`` or ``("env", name, value)``."""

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


def _debian_name(pip_name: str) -> str:
    base = re.split(r"[<>=!~\[ ;]", pip_name, maxsplit=1)[0].strip().lower().replace("_", "-")
    return "python3-" + base


def _translate_run(run: str, packages: list[str], notes: list[str]) -> str:
    """Collect apt/pip packages from `run`; return what is left to replay (may be empty).
    A compound command (loops, conditionals, groups) is kept whole and replayed with the
    offline ``apt-get`` stand-in on PATH; its packages are still added to the rootfs."""
    if _COMPOUND.search(run):
        if _NETWORK_TOOLS.search(" " + run):
            raise Unsupported(f"RUN {run!r} needs the network at build time")
        for match in re.finditer(r"apt(?:-get)?\s+install\s+([^;&|]*)", run):
            packages += [w.split("=")[0] for w in shlex.split(match.group(1))
                         if not w.startswith("-")]
        return run
    kept = []
    for part in _split_commands(run):
        apt = _APT.match(part)
        pip = _PIP.match(part)
        if apt:
            words = shlex.split(apt.group(1))
            if words and words[0] in ("install",):
                names = [w for w in words[1:] if not w.startswith("-")]
                if any("=" in n for n in names):
                    notes.append(f"apt version pins dropped: {' '.join(names)}")
                packages += [n.split("=")[0] for n in names]
            continue  # update, clean, upgrade: nothing to replay offline
        if pip:
            words = [w for w in shlex.split(pip.group(1)) if not w.startswith("-")]
            if any(w.endswith((".txt", ".whl")) or "/" in w for w in words):
                raise Unsupported(f"RUN {part!r}: pip install of files needs the network")
            packages += [_debian_name(w) for w in words]
            notes.append("pip packages replaced by Debian python3-* packages (versions differ)")
            continue
        if part.startswith("rm -rf /var/lib/apt/lists"):
            continue
        if _NETWORK_TOOLS.search(" " + part):
            raise Unsupported(f"RUN {part!r} needs the network at build time")
        kept.append(part)
    return " && ".join(kept)


def translate_dockerfile(text: str, context: Path) -> tuple[list[str], list[BuildStep], str,
                                                                list[str]]:
    """Packages, replay steps, final workdir and notes of a Dockerfile (see module docstring).
    Raises `Unsupported` naming the first step that cannot be translated."""
    logical = re.sub(r"\\\s*\n", " ", text)
    packages: list[str] = []
    steps: list[BuildStep] = []
    notes: list[str] = []
    workdir, seen_from = "/", False
    for raw in logical.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        keyword, _, rest = line.partition(" ")
        keyword, rest = keyword.upper(), rest.strip()
        if keyword == "FROM":
            if seen_from:
                raise Unsupported(f"multi-stage build ({line!r})")
            seen_from = True
            notes.append(f"base image {rest.split()[0]} replaced by Debian bookworm")
        elif keyword == "RUN":
            if rest.startswith("["):
                raise Unsupported(f"exec-form RUN ({line!r})")
            if rest.startswith("--"):
                raise Unsupported(f"RUN options ({line!r})")
            command = _translate_run(rest, packages, notes)
            if command:
                steps.append(BuildStep("run", (command,)))
        elif keyword in ("COPY", "ADD"):
            words = [w for w in shlex.split(rest) if not w.startswith("--")]
            if any("://" in w for w in words):
                raise Unsupported(f"{keyword} from a URL ({line!r})")
            if len(words) < 2 or words[0].startswith("["):
                raise Unsupported(f"unreadable {keyword} ({line!r})")
            target = words[-1] if words[-1].startswith("/") else f"{workdir.rstrip('/')}/{words[-1]}"
            for source in words[:-1]:
                if not (context / source).exists():
                    raise Unsupported(f"{keyword} source {source!r} is missing")
                steps.append(BuildStep("copy", (source, target)))
        elif keyword == "WORKDIR":
            workdir = rest if rest.startswith("/") else f"{workdir.rstrip('/')}/{rest}"
            steps.append(BuildStep("workdir", (workdir,)))
        elif keyword == "ENV":
            pairs = re.findall(r'(\w+)=("[^"]*"|\S+)', rest) or [tuple(rest.split(None, 1))]
            for name, value in pairs:
                steps.append(BuildStep("env", (name, value.strip('"'))))
        elif keyword in ("CMD", "ENTRYPOINT", "EXPOSE", "LABEL", "USER", "SHELL", "VOLUME",
                         "ARG", "HEALTHCHECK", "STOPSIGNAL", "MAINTAINER"):
            if keyword == "USER":
                notes.append(f"USER {rest} ignored: agent commands run as the sandbox's agent")
        else:
            raise Unsupported(f"Dockerfile instruction {keyword} ({line!r})")
    return sorted(set(packages)), steps, workdir, notes


def _read_yaml(path: Path) -> dict:
    try:
        import yaml
    except ImportError:  # pragma: no cover - PyYAML comes with the project's dependencies
        from harness.core import MissingDependencyError
        raise MissingDependencyError("pyyaml", "dev", "TB1 task.yaml files") from None
    return yaml.safe_load(path.read_text()) or {}


def _tb1_instruction(meta: dict) -> str:
    if "instruction" in meta:
        return str(meta["instruction"])
    for entry in meta.get("descriptions") or []:
        if entry.get("key") == "base":
            return str(entry.get("description", ""))
    return ""


def _tb1_solution(path: Path) -> tuple[str, ...]:
    if (path / "solution.sh").exists():
        return ((path / "solution.sh").read_text(),)
    if (path / "solution.yaml").exists():
        entries = _read_yaml(path / "solution.yaml")
        return tuple(str(e["command"]) for e in entries if isinstance(e, dict) and "command" in e)
    return ()


def _finish(task_id: str, fmt: str, path: Path, instruction: str, meta: dict,
            dockerfile: Path, tests: Path, solution: tuple[str, ...], solution_dir: Path | None,
            agent_s: float, verifier_s: float, network: bool) -> TerminalTask:
    packages: list[str] = []
    steps: list[BuildStep] = []
    notes: list[str] = []
    workdir, unsupported = "/app", None
    try:
        if network:
            raise Unsupported("the task declares it needs the internet at run time")
        if not dockerfile.exists():
            raise Unsupported(f"no Dockerfile at {dockerfile.relative_to(path)}")
        if not tests.is_dir():
            raise Unsupported("no tests directory")
        packages, steps, workdir, notes = translate_dockerfile(dockerfile.read_text(),
                                                               dockerfile.parent)
        if workdir == "/":
            workdir = "/app"
    except Unsupported as exc:
        unsupported = str(exc)
    env = tuple((s.args[0], s.args[1]) for s in steps if s.kind == "env")
    return TerminalTask(
        id=task_id, format=fmt, path=path, instruction=instruction.strip(),
        category=str(meta.get("category") or "uncategorized"),
        difficulty=str(meta.get("difficulty") or "unknown"), packages=tuple(packages),
        steps=tuple(steps), workdir=workdir, env=env, tests_dir=tests, solution=solution,
        solution_dir=solution_dir, agent_timeout_s=agent_s, verifier_timeout_s=verifier_s,
        notes=tuple(dict.fromkeys(notes)), unsupported=unsupported,
        extras={"tags": list(meta.get("tags") or [])})


def load_task(path: Path) -> TerminalTask:
    """The task in directory `path` (TB2 if it has ``task.toml``, TB1 if ``task.yaml``)."""
    path = Path(path)
    if (path / "task.toml").exists():
        config = tomllib.loads((path / "task.toml").read_text())
        meta = config.get("metadata", {})
        environment = config.get("environment", {})
        network = bool(environment.get("allow_internet") or environment.get("network"))
        solve = path / "solution" / "solve.sh"
        return _finish(path.name, "tb2", path, (path / "instruction.md").read_text()
                       if (path / "instruction.md").exists() else "", meta,
                       path / "environment" / "Dockerfile", path / "tests",
                       (solve.read_text(),) if solve.exists() else (),
                       path / "solution" if solve.exists() else None,
                       float(config.get("agent", {}).get("timeout_sec", 900)),
                       float(config.get("verifier", {}).get("timeout_sec", 180)), network)
    if (path / "task.yaml").exists():
        meta = _read_yaml(path / "task.yaml")
        return _finish(path.name, "tb1", path, _tb1_instruction(meta), meta,
                       path / "Dockerfile", path / "tests", _tb1_solution(path), None,
                       float(meta.get("max_agent_timeout_sec", 900)),
                       float(meta.get("max_test_timeout_sec", 180)), False)
    raise Unsupported(f"{path} is neither a TB1 (task.yaml) nor a TB2 (task.toml) task")


def load_tasks(root: Path) -> list[TerminalTask]:
    """Every task directory directly under `root` (or under ``root/tasks``), sorted by id."""
    root = Path(root)
    if (root / "tasks").is_dir():
        root = root / "tasks"
    found = [d for d in sorted(root.iterdir()) if d.is_dir() and
             ((d / "task.toml").exists() or (d / "task.yaml").exists())]
    return [load_task(d) for d in found]
