"""Harbor (Terminal-Bench 2) task settings and reward files: what each documented
``task.toml`` key becomes in the sandbox, and how ``/logs/verifier`` is read.

Checked against harbor-framework/harbor: the task-config model
(``src/harbor/models/task/config.py``), the task documentation
(``docs/content/docs/tasks/index.mdx``), the verifier (``src/harbor/verifier/verifier.py``),
the oracle agent (``src/harbor/agents/oracle.py``) and the mean metric
(``src/harbor/metrics/mean.py``).

===========================================  =================================================
key                                          here
===========================================  =================================================
``version``/``schema_version``, ``source``,  information only (``[metadata]`` gives category,
``artifacts``, ``[task]``, ``[metadata]``    difficulty and tags)
``[agent] timeout_sec``                      each agent command's wall limit (900 s when
                                             absent; Harbor then sets none)
``[verifier] timeout_sec``                   the verifier's wall limit (600 s when absent, as
                                             Harbor)
``[verifier] env``, ``[solution] env``,      the verifier's, the oracle's and every command's
``[environment] env``                        environment; a value that reads a host variable
                                             (``${VAR}``) is refused: no host variable enters
``[environment] storage_mb`` (``storage``)   the size of the episode's writable layer
``[environment] memory_mb`` (``memory``)     each process's data limit (RLIMIT_DATA: private
                                             writable memory), never below the sandbox's
                                             default (Docker's limit is the container's
                                             resident memory)
``[environment] network_mode``,              the network policy
``allowed_hosts``, ``allow_internet``        (`tasks.terminal.taskdir.network_policy`)
``[environment] docker_image``               not pulled: ``environment/Dockerfile`` is
                                             translated instead; refused without one
``[environment] cpus``,                      noted, not applied: no CPU quota here; the
``build_timeout_sec``                        translated build limits each step itself
``[agent]``/``[verifier]`` ``user``,         noted, not applied: one sandbox user per suite,
``network_mode``, ``allowed_hosts``          one network policy per episode
``[environment] gpu_types``, ``skills_dir``  ignored (no GPUs here; agent-specific)
``[environment] gpus`` > 0, ``tpu``, ``os``  refused, the key named
other than linux, ``mcp_servers``,
``healthcheck``, ``[verifier.environment]``
or ``environment_mode = "separate"``,
``[[steps]]``, ``environment/
docker-compose.yaml``
===========================================  =================================================
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

__all__ = ["HarborSettings", "Refused", "harbor_reward", "read_settings"]

AGENT_TIMEOUT_S = 900.0
"""An agent command's wall limit when ``[agent] timeout_sec`` is absent (Harbor: no limit)."""
VERIFIER_TIMEOUT_S = 600.0
"""Harbor's default ``[verifier] timeout_sec``."""
_SIZE_UNITS = {"G": 1024.0, "M": 1.0, "K": 1 / 1024}


class Refused(ValueError):
    """A ``task.toml`` setting the sandbox cannot honour; the message names the key."""


@dataclass(frozen=True)
class HarborSettings:
    """What a task.toml asks of the sandbox (see the module docstring)."""

    agent_timeout_s: float
    verifier_timeout_s: float
    memory_mb: int | None
    storage_mb: int | None
    env: tuple[tuple[str, str], ...]
    verifier_env: tuple[tuple[str, str], ...]
    solution_env: tuple[tuple[str, str], ...]
    notes: tuple[str, ...]


def _table(config: dict, name: str) -> dict:
    value = config.get(name) or {}
    if not isinstance(value, dict):
        raise Refused(f"[{name}] is not a table")
    return value


def _seconds(section: dict, name: str, default: float) -> float:
    """``[name] timeout_sec`` as a float (its range is the loader's check)."""
    value = section.get("timeout_sec", default)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Refused(f"[{name}] timeout_sec = {value!r} is not a number of seconds")
    return float(value)


def _size_mb(environment: dict, name: str) -> int | None:
    """``<name>_mb`` or Harbor's deprecated ``<name>`` string (``"2G"``, ``"512M"``), which
    wins as in Harbor; a positive whole number of MiB."""
    key, value = f"{name}_mb", environment.get(f"{name}_mb")
    if environment.get(name) is not None:
        key, value = name, environment[name]
        text = str(value).strip().upper()
        try:
            value = float(text[:-1]) * _SIZE_UNITS[text[-1:]]
        except (KeyError, ValueError):
            raise Refused(f"[environment] {key} = {environment[name]!r} is not a size "
                          "like '2G' or '512M'") from None
        value = int(value) if math.isfinite(value) else value
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise Refused(f"[environment] {key} = {value!r} is not a positive number of MiB")
    return value


def _env(section: dict, name: str) -> tuple[tuple[str, str], ...]:
    table = section.get("env") or {}
    if not isinstance(table, dict):
        raise Refused(f"[{name}.env] is not a table")
    for key, value in table.items():
        if "${" in str(value):
            raise Refused(f"[{name}.env] {key} = {value!r} reads a host variable; no host "
                          "variable is passed into the sandbox")
    return tuple((str(key), str(value)) for key, value in table.items())


def _refuse(config: dict, task_dir: Path) -> None:
    """`Refused` naming the first setting the sandbox cannot provide."""
    environment, verifier = _table(config, "environment"), _table(config, "verifier")
    if config.get("steps") or config.get("multi_step_reward_strategy"):
        raise Refused("multi-step task ([[steps]]); only single-step tasks are supported")
    if verifier.get("environment") is not None or verifier.get("environment_mode") == "separate":
        raise Refused("a separate verifier environment ([verifier.environment]) is not "
                      "supported: the verifier runs in the agent's sandbox")
    if str(environment.get("os", "linux")).lower() != "linux":
        raise Refused(f"[environment] os = {environment['os']!r}; only linux tasks run here")
    if environment.get("gpus") or environment.get("tpu"):
        what = (f"{environment['gpus']} GPU(s)" if environment.get("gpus") else "a TPU")
        raise Refused(f"the task needs {what} ([environment]); the sandbox has none")
    if environment.get("mcp_servers"):
        names = ", ".join(str(s.get("name", "?")) if isinstance(s, dict) else "?"
                          for s in environment["mcp_servers"])
        raise Refused(f"[environment] mcp_servers ({names}) are not started here")
    if environment.get("healthcheck"):
        raise Refused("[environment.healthcheck] waits for a service the container starts; "
                      "the sandbox starts none")
    if (task_dir / "environment" / "docker-compose.yaml").exists():
        raise Refused("environment/docker-compose.yaml (a multi-container Harbor environment) "
                      "is not supported")
    image = environment.get("docker_image")
    if image and not (task_dir / "environment" / "Dockerfile").is_file():
        raise Refused(f"[environment] docker_image {image} is a prebuilt image, not pulled "
                      "here, and there is no environment/Dockerfile to translate")


def _notes(config: dict, memory_mb: int | None) -> list[str]:
    """What the task asks that is read but not applied, and why."""
    environment, notes = _table(config, "environment"), []
    if environment.get("docker_image"):
        notes.append(f"docker_image {environment['docker_image']} not pulled: "
                     "environment/Dockerfile translated instead")
    if environment.get("cpus") is not None:
        notes.append(f"cpus = {environment['cpus']} not applied: no CPU quota in the sandbox")
    if environment.get("build_timeout_sec") is not None:
        notes.append("build_timeout_sec not applied: the translated build limits each step")
    if memory_mb is not None:
        notes.append(f"memory {memory_mb} MiB: a per-process data limit here, never "
                     "below the sandbox's default")
    for name in ("agent", "verifier"):
        section = _table(config, name)
        if section.get("user") not in (None, "root", 0):
            notes.append(f"[{name}] user = {section['user']!r} not applied: commands run as "
                         "the suite's sandbox user")
        if section.get("network_mode") is not None or section.get("allowed_hosts"):
            notes.append(f"[{name}] network override not applied: one network policy per "
                         "episode")
    mode = environment.get("network_mode")
    public = mode == "public" or (mode is None and environment.get("allow_internet") is True
                                  and not environment.get("allowed_hosts"))
    if public and environment.get("network") is None:
        notes.append("Harbor's public network (its default) is given as the package "
                     "registries only")
    return notes


def read_settings(config: dict, task_dir: Path) -> HarborSettings:
    """The settings of a parsed ``task.toml`` in `task_dir` (module docstring); `Refused`
    naming the first key the sandbox cannot honour or a value of the wrong kind."""
    _refuse(config, task_dir)
    environment = _table(config, "environment")
    memory_mb = _size_mb(environment, "memory")
    return HarborSettings(
        agent_timeout_s=_seconds(_table(config, "agent"), "agent", AGENT_TIMEOUT_S),
        verifier_timeout_s=_seconds(_table(config, "verifier"), "verifier",
                                    VERIFIER_TIMEOUT_S),
        memory_mb=memory_mb, storage_mb=_size_mb(environment, "storage"),
        env=_env(environment, "environment"),
        verifier_env=_env(_table(config, "verifier"), "verifier"),
        solution_env=_env(_table(config, "solution"), "solution"),
        notes=tuple(_notes(config, memory_mb)))


def _number(value: object) -> float | None:
    """A reward value as Harbor takes it: an int or float (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return float(value)
    except OverflowError:  # a JSON integer beyond float's range
        return math.inf


def _text_reward(text: str) -> tuple[float | None, str]:
    if not text.strip():
        return None, "reward.txt is empty"
    try:
        return float(text), "reward.txt"
    except ValueError:
        return None, "reward.txt is not a number"


def harbor_reward(reward_json: str | None, reward_txt: str | None) -> tuple[float, str]:
    """Harbor's reading of ``/logs/verifier`` (None: the file is absent): ``reward.json``
    first, an object whose numeric fields are named rewards (``reward.txt``'s number joins
    them as ``reward`` when they have none); the episode's reward is ``reward``, else the
    only one. Else ``reward.txt``, one number. A missing, empty, unreadable or non-finite
    reward is 0.0, with what was wrong as the verdict; a finite one is kept as written."""
    if reward_json is not None:
        if not reward_json.strip():
            return 0.0, "reward.json is empty"
        try:
            parsed = json.loads(reward_json)
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            return 0.0, "reward.json is not a JSON object"
        rewards = {str(k): number for k, v in parsed.items()
                   if (number := _number(v)) is not None}
        if "reward" not in rewards and reward_txt is not None:
            value, _ = _text_reward(reward_txt)
            rewards.update({} if value is None else {"reward": value})
        if "reward" not in rewards and len(rewards) != 1:
            return 0.0, (f"reward.json has {len(rewards)} numeric rewards and none named "
                         "'reward'")
        value = rewards.get("reward", next(iter(rewards.values())))
        named = ", ".join(f"{k}={v:g}" for k, v in sorted(rewards.items()))
        if not math.isfinite(value):
            return 0.0, f"reward.json: {value} is not a finite reward"
        return value, f"reward.json ({named})"
    if reward_txt is None:
        return 0.0, "no reward.txt or reward.json"
    value, verdict = _text_reward(reward_txt)
    if value is None:
        return 0.0, verdict
    if not math.isfinite(value):
        return 0.0, f"reward.txt: {value} is not a finite reward"
    return value, verdict
