"""What the viewer's pages read from the store: runs with their counts and error kinds, a
filtered and paginated episode list, one episode with its steps, and two policies' paired
outcomes. Every function takes an open (read-only) `Store` and returns frozen values; the
pages never touch SQL."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any
from urllib.parse import urlencode

import orjson

from harness.records import EpisodeKey, StepRecord, TurnRecord
from harness.store import Store

PAGE_SIZE = 50
"""Episodes per page of the episode list."""

FLAGS = {"invalid": "e.n_invalid > 0", "truncated": "e.truncated = 1",
         "errored": "e.status != 'ok'", "timeout": "e.status = 'timeout'"}
"""Episode flags the list filters by, as SQL conditions."""

_LIST_COLUMNS = ("run_id", "policy_id", "suite", "task_id", "eval_seed", "sample", "task_type",
                 "split", "status", "success", "score", "total_reward", "n_steps", "n_invalid",
                 "truncated", "wall_s")
_ORDER = "run_id, policy_id, suite, task_id, eval_seed, sample"


@dataclass(frozen=True)
class EpisodeFilter:
    """The episode list's state, as it appears in the URL's query string (empty: any)."""

    run: str = ""
    policy: str = ""
    suite: str = ""
    task_type: str = ""
    task: str = ""
    """A task id (the drill-down's last level and the audits' links)."""
    status: str = ""
    success: str = ""
    """``"1"`` successes only, ``"0"`` failures only (errored episodes included)."""
    flag: str = ""
    """One of `FLAGS`."""
    q: str = ""
    """Text searched in the steps (observations, actions, raw outputs) and final observation."""
    page: int = 1

    @classmethod
    def from_query(cls, params: Mapping[str, str]) -> EpisodeFilter:
        """The filter of a query string; unknown keys are ignored, a bad page is page 1."""
        values: dict[str, Any] = {f.name: params.get(f.name, "").strip() for f in fields(cls)
                                  if f.name not in ("page", "q")}
        values["q"] = params.get("q", "")
        if values["success"] not in ("", "0", "1"):
            values["success"] = ""
        if values["flag"] not in FLAGS:
            values["flag"] = ""
        try:
            values["page"] = max(1, int(params.get("page", "1")))
        except ValueError:
            values["page"] = 1
        return cls(**values)

    def query_string(self, **changes: Any) -> str:
        """This filter (with `changes`) as a query string, empty values left out."""
        state = replace(self, **changes)
        pairs = [(f.name, getattr(state, f.name)) for f in fields(state)]
        return urlencode([(k, v) for k, v in pairs if v not in ("", None) and
                          not (k == "page" and v == 1)])


@dataclass(frozen=True)
class EpisodeRow:
    """One line of the episode list."""

    run_id: str
    policy: str
    suite: str
    task_id: str
    eval_seed: int
    sample: int
    task_type: str
    split: str
    status: str
    success: bool
    score: float | None
    total_reward: float
    n_steps: int
    n_invalid: int
    truncated: bool
    wall_s: float

    @property
    def key(self) -> EpisodeKey:
        return EpisodeKey(self.policy, self.suite, self.task_id, self.eval_seed, self.sample)


def _row(values: Sequence[Any]) -> EpisodeRow:
    row = EpisodeRow(*values)
    return replace(row, success=bool(row.success), truncated=bool(row.truncated))


@dataclass(frozen=True)
class EpisodePage:
    rows: tuple[EpisodeRow, ...]
    total: int
    """Episodes matching the filter, over all pages."""
    filter: EpisodeFilter
    page_size: int

    @property
    def n_pages(self) -> int:
        return max(1, -(-self.total // self.page_size))


def _like(text: str) -> str:
    """A LIKE pattern (``ESCAPE '!'``) matching `text` anywhere."""
    return "%" + re.sub(r"([!%_])", r"!\1", text) + "%"


def _where(selected: EpisodeFilter) -> tuple[str, list[Any]]:
    clauses, params = [], []
    for column, value in (("run_id", selected.run), ("policy_id", selected.policy),
                          ("suite", selected.suite), ("task_type", selected.task_type),
                          ("task_id", selected.task), ("status", selected.status)):
        if value:
            clauses.append(f"e.{column} = ?")
            params.append(value)
    if selected.success:
        clauses.append("e.success = ?")
        params.append(int(selected.success))
    if selected.flag:
        clauses.append(FLAGS[selected.flag])
    if selected.q:
        # steps are stored as JSON text: search for the needle as JSON encodes it
        in_json = orjson.dumps(selected.q).decode()[1:-1]
        clauses.append("(e.final_observation LIKE ? ESCAPE '!' OR EXISTS (SELECT 1 FROM "
                       "trajectories t WHERE t.run_id = e.run_id AND t.policy_id = e.policy_id "
                       "AND t.suite = e.suite AND t.task_id = e.task_id AND t.eval_seed = "
                       "e.eval_seed AND t.sample = e.sample AND t.steps LIKE ? ESCAPE '!'))")
        params += [_like(selected.q), _like(in_json)]
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def list_episodes(store: Store, selected: EpisodeFilter, *, page_size: int = PAGE_SIZE
                  ) -> EpisodePage:
    """The page `selected.page` of the episodes matching `selected`, in key order."""
    where, params = _where(selected)
    total = store.query(f"SELECT COUNT(*) FROM episodes e{where}", params)[0][0]
    rows = store.query(f"SELECT {', '.join('e.' + c for c in _LIST_COLUMNS)} FROM episodes e"
                       f"{where} ORDER BY {_ORDER} LIMIT ? OFFSET ?",
                       [*params, page_size, (selected.page - 1) * page_size])
    return EpisodePage(tuple(_row(r) for r in rows), total, selected, page_size)


def filter_choices(store: Store, run: str = "") -> dict[str, list[str]]:
    """The values each filter can take (in `run` when given): run, policy, suite, task_type,
    status."""
    choices = {"run": [r[0] for r in store.query("SELECT run_id FROM runs ORDER BY created_at")]}
    where, params = (" WHERE run_id = ?", [run]) if run else ("", [])
    for name, column in (("policy", "policy_id"), ("suite", "suite"),
                         ("task_type", "task_type"), ("status", "status")):
        choices[name] = [r[0] for r in store.query(
            f"SELECT DISTINCT {column} FROM episodes{where} ORDER BY 1", params)]
    return choices


@dataclass(frozen=True)
class RunSummary:
    """One run as the runs page shows it."""

    run_id: str
    created_at: float
    config: dict[str, Any]
    code_version: str | None
    host: str | None
    packages: dict[str, Any]
    statuses: dict[str, int]
    """Episodes stored per status (``ok``, ``error``, ``timeout``)."""
    successes: int
    last_finished_at: float | None
    error_kinds: dict[str, int]
    """Errored or timed-out episodes per kind (the exception's class name, or ``timeout``)."""
    planned: int | None = None
    """At most this many episodes make the run (`planned_episodes`); None when its config
    does not say."""

    @property
    def n_episodes(self) -> int:
        return sum(self.statuses.values())


def planned_episodes(config: Mapping[str, Any]) -> int | None:
    """The episodes a run's stored config asks for: policies x suites x ``n_tasks`` x eval
    seeds x samples, or with ``task_ids`` policies x ids x eval seeds x samples (exact with one
    suite). An upper bound: a suite with fewer tasks of the chosen types plays them all. None
    when the config plays every task of its suites (no ``n_tasks``), names several suites
    beside ``task_ids``, or lacks a field (a run not begun by the runner)."""
    try:
        policies, suites = len(config["policies"]), len(config["suites"])
        seeds, samples = len(config["eval_seeds"]), int(config["samples"])
        task_ids, n_tasks = config.get("task_ids") or (), config["n_tasks"]
    except (KeyError, TypeError, ValueError):
        return None
    if task_ids:
        per_policy = len(task_ids) if suites == 1 else None
    else:
        per_policy = None if n_tasks is None else suites * int(n_tasks)
    return None if per_policy is None else policies * per_policy * seeds * samples


def error_kind(status: str, error: str | None) -> str:
    """The kind of a failed episode: ``timeout``, or the class name of the exception its
    traceback ends with (``ValueError``), or the error's first words."""
    if status == "timeout":
        return "timeout"
    lines = [line for line in (error or "").splitlines() if line.strip()]
    if not lines:
        return status
    match = re.match(r"([A-Za-z_][\w.]*)(:|$)", lines[-1].strip())
    return match.group(1) if match else lines[-1].strip()[:60]


def list_runs(store: Store) -> list[RunSummary]:
    """Every run, oldest first, with its episode counts, error kinds (most frequent first,
    then by name) and planned total."""
    counts: dict[str, dict[str, int]] = {}
    successes: dict[str, int] = {}
    last: dict[str, float] = {}
    for run_id, status, n, won, finished in store.query(
            "SELECT run_id, status, COUNT(*), SUM(success), MAX(finished_at) FROM episodes "
            "GROUP BY run_id, status"):
        counts.setdefault(run_id, {})[status] = n
        successes[run_id] = successes.get(run_id, 0) + int(won or 0)
        last[run_id] = max(last.get(run_id, finished), finished)
    kinds: dict[str, Counter] = {}
    for run_id, status, error in store.query(
            "SELECT run_id, status, error FROM episodes WHERE status != 'ok'"):
        kinds.setdefault(run_id, Counter())[error_kind(status, error)] += 1
    runs = []
    for run_id, config, code_version, packages, host, created_at in store.query(
            "SELECT run_id, config, code_version, packages, host, created_at FROM runs "
            "ORDER BY created_at"):
        config = json.loads(config)
        runs.append(RunSummary(run_id, created_at, config, code_version, host,
                               json.loads(packages or "{}"), counts.get(run_id, {}),
                               successes.get(run_id, 0), last.get(run_id),
                               dict(sorted(kinds.get(run_id, Counter()).items(),
                                           key=lambda kind: (-kind[1], kind[0]))),
                               planned_episodes(config)))
    return runs


@dataclass(frozen=True)
class EpisodeDetail:
    """One episode with everything stored about it."""

    row: EpisodeRow
    train_seed: int | None
    prompt_tokens: int
    completion_tokens: int
    retries: int
    model_latency_s: float
    error: str | None
    final_observation: str
    provenance: dict[str, Any]
    steps: tuple[StepRecord, ...]
    others: tuple[str, ...]
    """Other policies of the run that played the same task, eval seed and sample."""
    turns: tuple[TurnRecord, ...] = ()
    """The model turns (`Store.load_turns`): empty for scripted policies and for runs that
    stored none (older runs, ``store_turns = false``)."""


def load_episode(store: Store, run_id: str, key: EpisodeKey) -> EpisodeDetail | None:
    """The episode `key` of `run_id` with its steps and model turns, or None when there is
    none."""
    found = store.query(
        f"SELECT {', '.join(_LIST_COLUMNS)}, train_seed, prompt_tokens, completion_tokens, "
        "retries, model_latency_s, error, final_observation, policy_provenance FROM episodes "
        "WHERE run_id=? AND policy_id=? AND suite=? AND task_id=? AND eval_seed=? AND sample=?",
        (run_id, *key))
    if not found:
        return None
    values = found[0]
    n = len(_LIST_COLUMNS)
    steps = store.query("SELECT steps FROM trajectories WHERE run_id=? AND policy_id=? AND "
                        "suite=? AND task_id=? AND eval_seed=? AND sample=?", (run_id, *key))
    others = store.query("SELECT policy_id FROM episodes WHERE run_id=? AND suite=? AND "
                         "task_id=? AND eval_seed=? AND sample=? AND policy_id != ? ORDER BY 1",
                         (run_id, key.suite, key.task_id, key.eval_seed, key.sample,
                          key.policy_id))
    return EpisodeDetail(
        _row(values[:n]), values[n], *values[n + 1:n + 5], values[n + 5],
        values[n + 6] or "", json.loads(values[n + 7] or "{}"),
        tuple(StepRecord(*s) for s in orjson.loads(steps[0][0])) if steps else (),
        tuple(r[0] for r in others), tuple(store.load_turns(run_id, key)))


def first_divergence(a: Sequence[StepRecord], b: Sequence[StepRecord]) -> int | None:
    """The first step index where two trajectories differ (observation or action, or one
    has ended), or None when they are identical."""
    for t in range(max(len(a), len(b))):
        if t >= len(a) or t >= len(b):
            return t
        if (a[t].observation, a[t].action) != (b[t].observation, b[t].action):
            return t
    return None


@dataclass(frozen=True)
class PairedOutcomes:
    """Success of policy `a` against policy `b` on the episodes both played (same run, suite,
    task, eval seed and sample)."""

    a: str
    b: str
    counts: dict[tuple[bool, bool], int]
    """``(a succeeded, b succeeded) -> episodes``."""
    discordant: tuple[tuple[str, str, int, int, bool], ...]
    """``(suite, task_id, eval_seed, sample, a succeeded)`` where exactly one succeeded."""

    @property
    def n(self) -> int:
        return sum(self.counts.values())


def paired_outcomes(store: Store, run_id: str, a: str, b: str, *, suite: str = "",
                    limit: int = 200) -> PairedOutcomes:
    """The paired outcome table of `a` and `b` in `run_id` (and `suite` when given); at most
    `limit` discordant pairs are listed."""
    where = " AND x.suite = ?" if suite else ""
    join = ("FROM episodes x JOIN episodes y ON y.run_id = x.run_id AND y.policy_id = ? AND "
            "y.suite = x.suite AND y.task_id = x.task_id AND y.eval_seed = x.eval_seed AND "
            "y.sample = x.sample WHERE x.run_id = ? AND x.policy_id = ?")
    params = [b, run_id, a] + ([suite] if suite else [])
    counts = {(bool(x), bool(y)): n for x, y, n in store.query(
        f"SELECT x.success, y.success, COUNT(*) {join}{where} GROUP BY 1, 2", params)}
    discordant = store.query(
        f"SELECT x.suite, x.task_id, x.eval_seed, x.sample, x.success {join}{where} AND "
        f"x.success != y.success ORDER BY x.suite, x.task_id, x.eval_seed, x.sample LIMIT ?",
        [*params, limit])
    return PairedOutcomes(a, b, counts, tuple((s, t, e, m, bool(w)) for s, t, e, m, w
                                              in discordant))


@dataclass(frozen=True)
class TaskOutcomes:
    """Episodes and successes per (task, policy) of one suite's task type: the leaderboard's
    last drill-down level."""

    policies: tuple[str, ...]
    tasks: tuple[str, ...]
    counts: dict[tuple[str, str], tuple[int, int]]
    """``(task_id, policy) -> (episodes, successes)``."""


def task_outcomes(store: Store, run_id: str, suite: str, task_type: str) -> TaskOutcomes:
    """Per task of `task_type` in `suite` (of `run_id` when given), each policy's episodes and
    successes (errored episodes count as failures, as on the leaderboard)."""
    where, params = "suite = ? AND task_type = ?", [suite, task_type]
    if run_id:
        where, params = where + " AND run_id = ?", [*params, run_id]
    rows = store.query(f"SELECT task_id, policy_id, COUNT(*), SUM(success) FROM episodes "
                       f"WHERE {where} GROUP BY 1, 2 ORDER BY 1, 2", params)
    counts = {(task, policy): (int(n), int(won or 0)) for task, policy, n, won in rows}
    return TaskOutcomes(tuple(sorted({p for _, p in counts})),
                        tuple(dict.fromkeys(t for t, _ in counts)), counts)
