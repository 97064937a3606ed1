"""Run configuration: a frozen dataclass; TOML files and CLI flags only serialise it.

Field docstrings (the ``help`` metadata) are the ``harness run --help`` text.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from harness.core import ConfigError, UnknownNameError, read_toml


MAX_EPISODES_PER_TASK = 1_000_000
"""Bound on eval seeds x samples per (policy, task): a plan is checked before it is built."""


def _help(text: str, **kwargs: Any) -> Any:
    return field(metadata={"help": text}, **kwargs)


@dataclass(frozen=True)
class RunConfig:
    """Everything that decides which episodes a run plays and how."""

    policies: tuple[str, ...] = _help("policy specs, e.g. random, noop, oracle", default=())
    suites: tuple[str, ...] = _help("suite ids, e.g. frozenlake or frozenlake@1", default=())
    split: str = _help("task split: train, dev or test", default="test")
    task_types: tuple[str, ...] = _help("only tasks of these task types (all when empty)",
                                        default=())
    n_tasks: int | None = _help("N tasks of the split per suite, taken round-robin across "
                                "task types (all when unset)",
                                default=None)
    task_ids: tuple[str, ...] = _help("play exactly these tasks of the split, in this order, "
                                      "from whichever suites of the run have them (instead of "
                                      "n_tasks and task_types)", default=())
    eval_seeds: tuple[int, ...] = _help("evaluation seeds (env and sampling randomness)",
                                        default=(0,))
    samples: int = _help("samples per (task, eval seed), for pass@k", default=1)
    max_steps: int | None = _help("cap on steps per episode (the env's own limit otherwise)",
                                  default=None)
    episode_timeout_s: float = _help("wall-clock limit per episode in seconds", default=600.0)
    concurrency: int = _help("episodes in flight at once", default=8)
    max_error_rate: float = _help("stop the run when more than this fraction of episodes "
                                  "errors (checked after 10 episodes)", default=0.5)
    db: str = _help("results database path", default="results/harness.db")
    run_id: str | None = _help("run id (default: derived from the config, so rerunning the "
                               "same command resumes the same run)", default=None)
    store_turns: bool = _help("store every model turn's messages and raw reply (compressed); "
                              "false skips them for huge runs", default=True)

    def __post_init__(self) -> None:
        _validate(self)

    def identity(self) -> dict[str, Any]:
        """The fields that decide which episodes are played (stored with the run).
        ``task_ids`` only when set, so the run ids of configs without it stay as they were."""
        data = asdict(self)
        for name in ("concurrency", "db", "run_id", "max_error_rate", "episode_timeout_s",
                     "store_turns"):
            data.pop(name)
        if not data["task_ids"]:
            data.pop("task_ids")
        return data

    def resolved_run_id(self) -> str:
        if self.run_id:
            return self.run_id
        digest = hashlib.blake2b(json.dumps(self.identity(), sort_keys=True).encode(),
                                 digest_size=6).hexdigest()
        return f"run-{digest}"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _validate(config: RunConfig) -> None:
    minimum = {"n_tasks": 0, "samples": 1, "max_steps": 1, "concurrency": 1}
    optional = ("n_tasks", "max_steps")
    for name, low in minimum.items():
        value = getattr(config, name)
        if value is None and name in optional:
            continue
        if not _is_int(value):
            raise ConfigError(f"{name} must be an integer, got {value!r}")
        if value < low:
            raise ConfigError(f"{name} must be >= {low}, got {value}")
    for name in ("policies", "suites", "task_types", "task_ids"):
        value = getattr(config, name)
        if not isinstance(value, tuple) or not all(isinstance(v, str) and v for v in value):
            raise ConfigError(f"{name} must be a list of non-empty strings, got {value!r}")
    _validate_task_ids(config)
    if not isinstance(config.store_turns, bool):
        raise ConfigError(f"store_turns must be true or false, got {config.store_turns!r}")
    for name in ("max_error_rate", "episode_timeout_s"):
        value = getattr(config, name)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value != value:
            raise ConfigError(f"{name} must be a number, got {value!r}")
    if not isinstance(config.eval_seeds, tuple):
        raise ConfigError(f"eval_seeds must be a count or a list of seeds, got "
                          f"{config.eval_seeds!r}")
    if not config.eval_seeds:
        raise ConfigError("eval_seeds must list at least one seed")
    for seed in config.eval_seeds:
        if not _is_int(seed) or seed < 0:
            raise ConfigError(f"eval seeds must be integers >= 0, got {seed!r}")
    if len(config.eval_seeds) * config.samples > MAX_EPISODES_PER_TASK:
        raise ConfigError(f"{len(config.eval_seeds)} eval seeds x {config.samples} samples is "
                          f"more than {MAX_EPISODES_PER_TASK:,} episodes per task")
    if len(set(config.eval_seeds)) != len(config.eval_seeds):
        raise ConfigError(f"eval_seeds has duplicates: {list(config.eval_seeds)}")
    if not 0 <= config.max_error_rate <= 1:
        raise ConfigError(f"max_error_rate must lie in [0, 1], got {config.max_error_rate}")
    if not config.episode_timeout_s > 0:
        raise ConfigError(f"episode_timeout_s must be > 0, got {config.episode_timeout_s}")
    if config.split not in ("train", "dev", "test"):
        raise UnknownNameError("split", str(config.split), ("train", "dev", "test"))
    for name in ("db", "run_id"):
        value = getattr(config, name)
        if not (isinstance(value, str) and value) and not (name == "run_id" and value is None):
            raise ConfigError(f"{name} must be a non-empty string, got {value!r}")


def _validate_task_ids(config: RunConfig) -> None:
    """`task_ids` (already a tuple of non-empty strings): no duplicates, and not together with
    another setting that chooses tasks."""
    if not config.task_ids:
        return
    duplicates = [task_id for task_id, n in Counter(config.task_ids).items() if n > 1]
    if duplicates:
        raise ConfigError(f"task_ids lists {', '.join(map(repr, duplicates))} more than once")
    if config.n_tasks is not None:
        raise ConfigError("task_ids and n_tasks both choose the tasks to play; set one of them "
                          "(task_ids plays exactly the tasks it lists)")
    if config.task_types:
        raise ConfigError("task_ids and task_types both choose the tasks to play; set one of "
                          "them (task_ids plays exactly the tasks it lists)")


FIELD_NAMES = tuple(f.name for f in fields(RunConfig))


def _coerce(name: str, value: Any) -> Any:
    if name in ("policies", "suites", "task_types", "task_ids"):
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{name} must be a list of strings, got {value!r}")
        return tuple(value)
    if name == "eval_seeds":
        if isinstance(value, int) and not isinstance(value, bool):
            if not 1 <= value <= MAX_EPISODES_PER_TASK:
                raise ConfigError(f"eval_seeds as a count must be >= 1 and <= "
                                  f"{MAX_EPISODES_PER_TASK:,}, got {value}")
            return tuple(range(value))
        return tuple(value) if isinstance(value, (list, tuple)) else value
    if name in ("episode_timeout_s", "max_error_rate") and isinstance(value, int):
        return float(value)
    return value


def make_run_config(values: dict[str, Any], base: RunConfig | None = None) -> RunConfig:
    """A `RunConfig` from plain values (TOML or flags), checking names and types."""
    for name in values:
        if name not in FIELD_NAMES:
            raise UnknownNameError("run config key", name, FIELD_NAMES)
    coerced = {name: _coerce(name, value) for name, value in values.items()}
    try:
        return replace(base, **coerced) if base else RunConfig(**coerced)
    except TypeError as exc:
        raise ConfigError(f"bad run config: {exc}") from None


def load_run_config(path: str | Path, overrides: dict[str, Any] | None = None) -> RunConfig:
    """Read a TOML run config (keys at the top level or under ``[run]``), then apply
    `overrides` (flags given on the command line win)."""
    path = Path(path)
    data = read_toml(path)
    if "run" in data:
        if not isinstance(data["run"], dict) or len(data) > 1:
            raise ConfigError(f"{path}: put every key under [run] or none of them")
        data = data["run"]
    return make_run_config({**data, **(overrides or {})})
