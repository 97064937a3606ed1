"""τ-bench audits: gold replay, the end-at-once ceiling, and the user-simulator audit.

The user-simulator audit plays the gold agent (`TauEnv.oracle_action`) against the chosen user
simulator: the gold agent never errs, so every episode it loses is the user's fault (the user
ended the conversation early or refused a transaction the task needs). `UserAudit` reports
that share per domain with a Wilson 95% interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from statsmodels.stats.proportion import proportion_confint

from tasks.taubench.suite import TauSuite

__all__ = ["play", "UserAudit", "user_simulator_audit", "ceiling"]


def play(suite: TauSuite, task_id: str, *, seed: int = 0, action: str | None = None
         ) -> tuple[dict[str, Any], list[str]]:
    """One episode of `task_id`: the gold agent, or `action` repeated (a trivial action).
    Returns the final step's info and the observations."""
    env = suite.make_env(task_id)
    observation, info = env.reset(seed=seed)
    trace = [observation]
    for _ in range(env.max_steps):
        result = env.step(action if action is not None else env.oracle_action())
        trace.append(result.observation)
        info = result.info
        if result.terminated or result.truncated:
            break
    return info, trace


@dataclass(frozen=True)
class UserAudit:
    """Gold-agent episodes lost, i.e. failures the user simulator caused."""

    suite: str
    user: str
    episodes: int
    user_failures: int
    low: float
    high: float
    failed_tasks: tuple[str, ...]

    @property
    def rate(self) -> float:
        return self.user_failures / self.episodes if self.episodes else 0.0


def user_simulator_audit(suite: TauSuite, *, split: str = "test",
                         seeds: Sequence[int] = (0,)) -> UserAudit:
    """Play the gold agent on every task of `split` with each seed (module docstring)."""
    failed, episodes = [], 0
    for spec in suite.tasks(split):
        for seed in seeds:
            info, _ = play(suite, spec.id, seed=seed)
            episodes += 1
            if not info.get("won"):
                failed.append(f"{spec.id}/seed{seed}")
    low, high = (proportion_confint(len(failed), episodes, method="wilson") if episodes
                 else (0.0, 1.0))
    return UserAudit(suite.id, str(suite.user_spec), episodes, len(failed), float(low),
                     float(high), tuple(failed))


def ceiling(suite: TauSuite, trivial: str, *, split: str = "test", seed: int = 0) -> float:
    """Mean score of the trivial action `trivial` (`suite.trivial_actions`) over `split`."""
    action = suite.trivial_actions[trivial]
    scores = [play(suite, s.id, seed=seed, action=action)[0]["score"] for s in suite.tasks(split)]
    return sum(scores) / len(scores) if scores else 0.0
