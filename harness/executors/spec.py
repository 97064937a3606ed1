"""The ``--executor`` value: ``local``, ``ray`` (a local Ray instance) or ``ray:ADDRESS``
(an existing cluster, e.g. ``ray:127.0.0.1:6379`` or ``ray:auto``)."""

from __future__ import annotations

from dataclasses import dataclass

from harness.core import ConfigError

__all__ = ["ExecutorSpec", "parse_executor", "DEFAULT_MAX_RETRIES"]

DEFAULT_MAX_RETRIES = 3
"""Attempts beyond the first that an episode gets when its worker or node dies."""


@dataclass(frozen=True)
class ExecutorSpec:
    """kind: ``local`` or ``ray``; address: the Ray cluster (None: start a local instance);
    max_retries: extra attempts per episode lost with its worker; num_cpus: CPUs one
    episode task reserves on a Ray node when its suite declares no ``resources``;
    env_workers: 0 plays each episode as a Ray task, N > 0 in N environment-worker actors
    per suite (`harness.executors.ray_envs.EpisodeWorker`)."""

    kind: str = "local"
    address: str | None = None
    max_retries: int = DEFAULT_MAX_RETRIES
    num_cpus: float = 1.0
    env_workers: int = 0

    def describe(self) -> str:
        return self.kind if self.address is None else f"{self.kind}:{self.address}"


def parse_executor(text: str, *, max_retries: int = DEFAULT_MAX_RETRIES,
                   env_workers: int = 0) -> ExecutorSpec:
    """``local`` | ``ray`` | ``ray:ADDRESS`` as an `ExecutorSpec`; anything else is a
    `ConfigError`."""
    kind, _, address = text.strip().partition(":")
    if kind not in ("local", "ray") or (kind == "local" and address):
        raise ConfigError(f"--executor must be local, ray or ray:ADDRESS, got {text!r}")
    if max_retries < 0:
        raise ConfigError(f"max_retries must be >= 0, got {max_retries}")
    if env_workers < 0 or (env_workers and kind != "ray"):
        raise ConfigError(f"--env-workers needs --executor ray and a count >= 0, got "
                          f"{env_workers} with {text!r}")
    return ExecutorSpec(kind, address or None, max_retries, env_workers=env_workers)
