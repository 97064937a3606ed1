"""`audit_suite`: is a benchmark's reward trustworthy? Measured with the runner, stored.

One audit of a suite's split plays two runs through `harness.runner` (so they resume and
land in the store like any run):

- the *base run*: the base policy, ``k`` samples of each task at eval seed 0, for
  learnability under GRPO and sampling headroom (`harness.audit.learnability`);
- the *probe run*: every trivial probe, the oracle (when the suite has one), the suite's
  declared exploits and the greedy policy (when given), ``eval_seeds`` seeds per task, for
  the reward ceilings (`harness.audit.ceilings`) and, per task, whether a forgery probe (an
  exploit named ``forge:...``) changed the verdict (`harness.audit.forgery`).

A task whose environment did not build (the suite's ``build_task`` says so: a recorded
failure answers at once) is listed apart and left out of every rate: it is not an oracle
failure. Then it re-grades a spread of the stored trajectories (`harness.audit.determinism`) and
writes the result to the store's ``audits`` table (`harness.audit.records`).
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from harness.audit.ceilings import oracle_ceiling, success_by_type, trivial_ceiling
from harness.audit.determinism import check_determinism
from harness.audit.forgery import forgery_by_task
from harness.audit.learnability import headroom_by_type, learnability
from harness.audit.probes import Probe, exploit_probes, trivial_probes
from harness.audit.records import write_audit
from harness.audit.result import UNBUILT_COLUMNS, AuditResult
from harness.config import RunConfig
from harness.core import ConfigError, HarnessError
from harness.policies import make_policy
from harness.executors import execute, parse_executor
from harness.runner import RunAborted
from harness.store import Store
from tasks import get_suite
from tasks.base import (SPLITS, Env, EnvironmentNotBuilt, HasOracle, Suite,
                        suite_capability)

__all__ = ["AuditConfig", "AuditResult", "BasePolicyFailed", "audit_suite", "unbuilt_tasks"]

log = logging.getLogger(__name__)


class BasePolicyFailed(HarnessError):
    """The base policy errored on (nearly) every episode, so learnability cannot be measured."""


@dataclass(frozen=True)
class AuditConfig:
    """What one audit measures. Defaults: k=8 samples (a common GRPO group size), a 10%
    trivial-ceiling threshold."""

    suite: str
    split: str = "test"
    base_policy: str = "random"
    k: int = 8
    n_tasks: int | None = None
    eval_seeds: int = 2
    threshold: float = 0.10
    greedy_policy: str | None = None
    regrades: int = 3
    max_regraded: int = 100
    db: str = "results/harness.db"
    concurrency: int = 8
    executor: str = "local"
    """Where episodes play: local, ray or ray:ADDRESS (`harness.executors`)."""

    def __post_init__(self) -> None:
        parse_executor(self.executor)
        if self.split not in SPLITS:
            raise ConfigError(f"split must be one of {', '.join(SPLITS)}, got {self.split!r}")
        for name, low in (("k", 2), ("eval_seeds", 1), ("regrades", 1), ("max_regraded", 0),
                          ("concurrency", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ConfigError(f"audit {name} must be an integer >= {low}, got {value!r}")
        if self.n_tasks is not None and (not isinstance(self.n_tasks, int) or self.n_tasks < 1):
            raise ConfigError(f"audit n_tasks must be a positive integer, got {self.n_tasks!r}")
        if not 0 <= self.threshold < 1:
            raise ConfigError(f"audit threshold must lie in [0, 1), got {self.threshold}")

    def identity(self) -> dict[str, Any]:
        """The fields that decide what is measured (stored with the audit)."""
        data = asdict(self)
        for name in ("db", "concurrency", "executor"):
            data.pop(name)
        return data


def _digest(data: dict[str, Any]) -> str:
    return hashlib.blake2b(json.dumps(data, sort_keys=True).encode(), digest_size=5).hexdigest()


def _run(config: AuditConfig, suite: Suite, run_id: str, policies: list, *, samples: int,
         eval_seeds: tuple[int, ...], max_error_rate: float) -> pd.DataFrame:
    run_config = RunConfig(policies=tuple(p.id for p in policies), suites=(suite.id,),
                           split=config.split, n_tasks=config.n_tasks, eval_seeds=eval_seeds,
                           samples=samples, db=config.db, run_id=run_id,
                           concurrency=config.concurrency, max_error_rate=max_error_rate)
    execute(run_config, config.executor, policies=policies)
    with Store(config.db) as store:
        return store.load_episodes(run_id=run_id)


def unbuilt_tasks(suite: Suite, frame: pd.DataFrame) -> pd.DataFrame:
    """The tasks of `frame` (episodes) none of whose episodes played and whose environment the
    suite's ``build_task`` says does not build, with the reason (`UNBUILT_COLUMNS`); none
    for a suite that declares no ``build_task``."""
    build = suite_capability(suite, "build_task")
    if build is None or frame.empty:
        return pd.DataFrame(columns=UNBUILT_COLUMNS)
    played = frame.groupby("task_id")["status"].agg(lambda s: bool((s == "ok").any()))
    types = frame.groupby("task_id")["task_type"].first()
    rows = []
    for task_id in sorted(played.index[~played]):
        try:
            build(task_id)
        except EnvironmentNotBuilt as exc:
            rows.append({"task_id": task_id, "task_type": str(types[task_id]),
                         "reason": " ".join(str(exc).split())})
    return pd.DataFrame(rows, columns=UNBUILT_COLUMNS)


def _built_only(suite: Suite, frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` without the tasks whose environment did not build; a `HarnessError` saying
    so when no task is left."""
    unbuilt = unbuilt_tasks(suite, frame)
    built = frame[~frame["task_id"].isin(set(unbuilt["task_id"]))]
    if len(unbuilt) and built.empty:
        raise HarnessError(f"the audit of {suite.id} stopped: the environments of "
                           f"{len(unbuilt)} tasks did not build ({', '.join(unbuilt['task_id'])})"
                           f"; `harness tasks build {suite.id}` says why")
    return built


def _base_episodes(config: AuditConfig, suite: Suite, run_id: str) -> pd.DataFrame:
    """The base run's episodes. Its error budget (half the episodes) stops a base policy that
    fails; where environments that did not build explain the errors (a rerun replays just
    the errored episodes), the rest is played and the budget applies to the built tasks."""
    policy = make_policy(config.base_policy)
    try:
        frame = _run(config, suite, run_id, [policy], samples=config.k, eval_seeds=(0,),
                     max_error_rate=0.5)
    except RunAborted as exc:
        with Store(config.db, readonly=True) as store:
            frame = store.load_episodes(run_id=run_id)
        if not unbuilt_tasks(suite, frame).empty:
            frame = _run(config, suite, run_id, [policy], samples=config.k, eval_seeds=(0,),
                         max_error_rate=1.0)
            built = _built_only(suite, frame)
            if (built["status"] != "ok").mean() > 0.5:
                raise BasePolicyFailed(f"base policy {config.base_policy!r} fails on "
                                       f"{suite.id}: more than half of its episodes on tasks "
                                       "whose environment built errored; the audit stopped")
        elif frame.empty or (frame["status"] == "ok").any():
            raise BasePolicyFailed(f"base policy {config.base_policy!r} fails on {suite.id}; "
                                   f"the audit stopped ({exc})") from None
    built = _built_only(suite, frame)
    errors = built[built["status"] != "ok"]
    if len(errors) == len(built):
        last = (errors["error"].iloc[-1] or "").strip().splitlines()[-1:]
        raise BasePolicyFailed(f"base policy {config.base_policy!r} errored on every one of its "
                               f"{len(built)} episodes on {suite.id}; the audit stopped (last "
                               f"error: {last})")
    return frame


def _probes(config: AuditConfig, suite: Suite, notes: list[str]) -> list[Probe]:
    probes = trivial_probes(suite)
    if not suite.trivial_actions:
        notes.append(f"{suite.id} declares no trivial actions: only the built-in probes "
                     "(empty answer, invalid output, random) were played")
    if isinstance(_first_env(suite, config.split), HasOracle):
        probes.append(Probe("oracle", "oracle", make_policy("oracle")))
    else:
        notes.append(f"{suite.id} has no oracle: the oracle ceiling was not measured")
    probes += exploit_probes(suite)
    if config.greedy_policy:
        probes.append(Probe(f"greedy {config.greedy_policy}", "greedy",
                            make_policy(config.greedy_policy)))
    unique: dict[str, Probe] = {}
    for probe in probes:
        earlier = unique.get(probe.policy.id)
        if earlier is not None and earlier.kind == "trivial" and probe.kind == "exploit":
            # a suite lists an exploit among its trivial actions so `noop:NAME` can play it;
            # it is reported as the exploit it is, not as a trivial move
            unique[probe.policy.id] = probe
            continue
        if probe.policy.id in unique:
            notes.append(f"probe {probe.name!r} is the same policy as "
                         f"{unique[probe.policy.id].name!r}; played once")
            continue
        unique[probe.policy.id] = probe
    return list(unique.values())


def _first_env(suite: Suite, split: str) -> Env | None:
    """An env of the first task of `split` whose environment builds (None when none does)."""
    for spec in suite.tasks(split):
        try:
            return suite.make_env(spec.id)
        except EnvironmentNotBuilt:
            continue
    return None


def _without_unbuilt(suite: Suite, base: pd.DataFrame, probes: pd.DataFrame,
                     notes: list[str]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """`base` and `probes` without the episodes of tasks whose environment did not build,
    and those tasks (`unbuilt_tasks`)."""
    unbuilt = unbuilt_tasks(suite, pd.concat([base, probes], ignore_index=True))
    if unbuilt.empty:
        return base, probes, unbuilt
    left_out = set(unbuilt["task_id"])
    notes.append(f"{len(unbuilt)} tasks whose environment did not build are left out of every "
                 "rate (not oracle failures; listed apart)")
    return (base[~base["task_id"].isin(left_out)], probes[~probes["task_id"].isin(left_out)],
            unbuilt)


def _error_note(frame: pd.DataFrame, what: str) -> str | None:
    errors = int((frame["status"] != "ok").sum())
    if not errors:
        return None
    return f"{errors} of {len(frame)} {what} episodes errored (counted as failures)"


def audit_suite(config: AuditConfig) -> AuditResult:
    """Audit ``config.suite`` (see the module docstring) and store the result in
    ``config.db``. `UnknownNameError` for an unknown suite or policy; `BasePolicyFailed` when
    the base policy errors on every episode."""
    suite = get_suite(config.suite)
    if not suite.tasks(config.split):
        raise HarnessError(f"{suite.id} has no {config.split} tasks to audit")
    identity = {"suite_id": suite.id, **config.identity()}
    digest = _digest(identity)
    audit_id = f"audit-{suite.id}-{config.split}-{digest}"
    base_run, probe_run = f"{audit_id}-base", f"{audit_id}-probes"
    notes: list[str] = []

    base = _base_episodes(config, suite, base_run)
    probes = _probes(config, suite, notes)
    probe_frame = _run(config, suite, probe_run, [p.policy for p in probes], samples=1,
                       eval_seeds=tuple(range(config.eval_seeds)), max_error_rate=1.0)
    base, probe_frame, unbuilt = _without_unbuilt(suite, base, probe_frame, notes)
    notes += [n for n in (_error_note(base, "base-policy"), _error_note(probe_frame, "probe"))
              if n]
    kinds = {p.policy.id: (p.name, p.kind) for p in probes}
    rates = success_by_type(probe_frame, kinds)
    oracle_ids = [p.policy.id for p in probes if p.kind == "oracle"]
    failures = (oracle_ceiling(probe_frame, oracle_ids[0])[1] if oracle_ids
                else pd.DataFrame(columns=["task_id", "task_type", "n", "successes", "rate",
                                           "verdict"]))
    greedy = None
    if config.greedy_policy:
        greedy = probe_frame[probe_frame["eval_seed"].isin(base["eval_seed"].unique())]
    headroom = headroom_by_type(base, config.base_policy, config.k, greedy=greedy,
                                greedy_policy=config.greedy_policy)
    if not config.greedy_policy:
        notes.append("no greedy policy given: headroom is pass@k over one sample (pass@1) of "
                     "the base policy")
    with Store(config.db) as store:
        n_regraded, flaky = check_determinism(
            suite, store, pd.concat([base, probe_frame], ignore_index=True),
            regrades=config.regrades, limit=config.max_regraded)
    result = AuditResult(
        audit_id=audit_id, suite=suite.id, split=config.split, config=identity,
        run_ids=(base_run, probe_run), notes=tuple(notes), rates=rates,
        ceiling=trivial_ceiling(rates, threshold=config.threshold), oracle_failures=failures,
        learnability=learnability(base, config.base_policy, config.k), headroom=headroom,
        n_regraded=n_regraded, flaky=flaky, unbuilt=unbuilt,
        forgery=forgery_by_task(probe_frame, kinds))
    write_audit(config.db, result)
    log.info("audit %s stored in %s", audit_id, config.db)
    return result
