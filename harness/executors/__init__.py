"""Where `harness run` plays its episodes: ``local`` (the asyncio runner, `harness.runner`)
or ``ray[:ADDRESS]`` (Ray tasks or env-worker actors on a cluster,
`harness.executors.ray_executor`)."""

from __future__ import annotations

from typing import Any

from harness.executors.spec import ExecutorSpec, parse_executor

__all__ = ["ExecutorSpec", "parse_executor", "execute"]


def execute(config: Any, executor: str | ExecutorSpec = "local", **kwargs: Any) -> Any:
    """Play `config` (a `harness.config.RunConfig`) with `executor`: `harness.runner.run`
    for ``local``, `run_on_ray` for ``ray[:ADDRESS]``; `kwargs` (``policies``, ``on_plan``,
    ``on_episode``) go to either. Returns the `RunSummary`."""
    spec = parse_executor(executor) if isinstance(executor, str) else executor
    if spec.kind == "local":
        from harness.runner import run

        return run(config, **kwargs)
    from harness.executors.ray_executor import run_on_ray
    from harness.store import Store

    with Store(config.db) as store:
        return run_on_ray(config, spec, store=store, **kwargs)
