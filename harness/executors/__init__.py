"""Where `harness run` plays its episodes: ``local`` (the asyncio runner, `harness.runner`)
or ``ray[:ADDRESS]`` (Ray tasks on a cluster, `harness.executors.ray_executor`)."""

from harness.executors.spec import ExecutorSpec, parse_executor

__all__ = ["ExecutorSpec", "parse_executor"]
