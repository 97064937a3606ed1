"""The Env contract, task specs, suites and the suite registry.

An `Env` is text in, text out (Gymnasium's seeded ``reset`` and its ``terminated`` vs
``truncated`` split). A `Suite` is a versioned benchmark (``frozenlake@1``): task ids per split,
an `Env` per task, and the *trivial actions* ("do nothing", "finish now") the audit uses.
Optional capabilities (`Snapshotable`, `HasOracle`, `HasQValues`, `HasStateKey`) are discovered
by protocol, never by inheritance.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import json

import numpy as np

from harness.core import HarnessError, UnknownNameError
from tasks.plugins import load_families

SPLITS = ("train", "dev", "test")
REQUIRED_INFO_KEYS = ("won", "score", "invalid")


@dataclass(frozen=True)
class StepResult:
    """What `Env.step` returns.

    `terminated`: the episode reached a terminal state of the task (won or lost).
    `truncated`: the episode was cut by the step limit (or another budget) before that.
    `info` carries at least ``won`` (bool), ``score`` (the benchmark's native score, float),
    ``invalid`` (the action could not be applied; the state did not change) and, where the
    benchmark has them, ``admissible_actions`` (list of str). An env that runs a documented
    departure making this episode's score not comparable with the suite's published numbers
    (e.g. a stand-in for an upstream model) names it in ``comparability_note`` (str); the
    leaderboard lists the notes of the episodes it ranks. A sandboxed env
    (`tasks.sandboxed_env.SandboxedEnv`) lists the commands the step ran for the agent under
    ``commands``: ``{"command", "status", "exit_code", "output"}`` each, the output raw (before
    control characters are escaped for the observation). An env whose suite declares
    `Answerability` for the task may say in ``abstained`` (bool) on the step that ends the
    episode whether the episode abstained (MedAgentBench: no order was placed); without it,
    an episode abstained when its last action is the declared abstain action. An env whose
    task declares its `Scope` says on that step which entries the episode acted on and which
    sub-goals it reached (``scope``, ``subgoals``; `Scope` gives their shape).
    """

    observation: str
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]


@runtime_checkable
class Env(Protocol):
    """One task instance. Same seed + same actions => same observations and rewards."""

    max_steps: int

    def reset(self, *, seed: int) -> tuple[str, dict[str, Any]]: ...

    def step(self, action: str) -> StepResult: ...


@runtime_checkable
class Snapshotable(Protocol):
    """Exact state copy, for Monte-Carlo Q-values and tree rollouts."""

    def snapshot(self) -> Any: ...

    def restore(self, snapshot: Any) -> None: ...


@runtime_checkable
class HasOracle(Protocol):
    """A reference policy: a planner, a solver or a gold path."""

    def oracle_action(self) -> str: ...


@runtime_checkable
class HasQValues(Protocol):
    """Exact Q for every admissible action of the current state: ``{action: q}``."""

    def q_values(self) -> dict[str, float]: ...


@runtime_checkable
class HasStateKey(Protocol):
    """A canonical, hashable description of the current state (GiGPO grouping)."""

    def state_key(self) -> str: ...


@dataclass(frozen=True)
class Answerability:
    """What a suite declares about one task for the abstention metrics
    (`harness.stats.abstention`): whether the task is `answerable` (feasible: acting on it can
    be right) and `abstain_action`, the action text that declines it (OSWorld's ``FAIL``; a
    refusing policy sends it). An episode abstained when the env says so on its last step
    (``info["abstained"]``, `StepResult`: for suites where abstaining is an outcome, e.g.
    placing no order) or, where the env says nothing, when its last action is
    `abstain_action` (surrounding blanks ignored); the runner records it."""

    answerable: bool
    abstain_action: str

    def __post_init__(self) -> None:
        if not isinstance(self.answerable, bool) or not self.abstain_action:
            raise ValueError("Answerability needs a bool answerable and a non-empty "
                             "abstain_action")


@dataclass(frozen=True)
class Scope:
    """What a suite declares about one task for the scope metrics (`harness.stats.scope`):
    `entries`, the entries the instruction ranges over (near-identical records, e.g. notes),
    each id mapped to whether the instruction's constraint covers it (in scope), and
    `subgoals`, the task's per-app sub-goals (each ``"app: what"``). The env says on the step
    that ends the episode which entries it acted on and which sub-goals it reached:
    ``info["scope"] = {"entries": {id: in_scope}, "acted": [ids]}`` and
    ``info["subgoals"] = {name: reached}`` (the declaration repeated, so a stored episode
    carries it)."""

    entries: Mapping[str, bool]
    subgoals: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.entries or not any(self.entries.values()) or not self.subgoals:
            raise ValueError("Scope needs entries with at least one in scope and at least "
                             "one sub-goal")


@dataclass(frozen=True)
class TaskSpec:
    """One task of a suite. `metadata` holds suite-specific parameters (map size, ...);
    `answerability` is declared where the suite tells feasible tasks from those whose right
    act is to abstain (None: not declared, the task stays out of the abstention metrics);
    `scope` where the task ranges over entries some of which its constraint excludes, with
    per-app sub-goals (None: not declared, the task stays out of the scope metrics)."""

    id: str
    split: str
    task_type: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    answerability: Answerability | None = None
    scope: Scope | None = None


COMPONENTS = ("engine", "tasks", "grader", "protocol", "data")
ORIGINS = ("upstream", "rebuilt", "generated", "none")


@dataclass(frozen=True)
class Comparability:
    """How a suite relates to the published benchmark it is named after.

    Each component (`engine`, `tasks`, `grader`, `protocol`, `data`) is one of ``"upstream"``
    (exactly the authors' code or data; where we run our own code for it, a differential
    fixture against the upstream code proves equality), ``"rebuilt"`` (our own version of it),
    ``"generated"`` (produced by our generators) or ``"none"`` (the benchmark has no such part,
    e.g. the embedded games). `comparable` says in one line whether and where scores may be put
    next to published numbers; `evidence` names the test or fixture that proves the
    ``"upstream"`` claims; `generated_records` is true when the ceilings the audit measures are
    set by records this project generates (the report marks them so).
    """

    engine: str = "none"
    tasks: str = "none"
    grader: str = "none"
    protocol: str = "none"
    data: str = "none"
    comparable: str = "not comparable with a published benchmark"
    evidence: str = ""
    generated_records: bool = False

    def __post_init__(self) -> None:
        for component in COMPONENTS:
            if getattr(self, component) not in ORIGINS:
                raise ValueError(f"comparability {component}={getattr(self, component)!r}; "
                                 f"expected one of {ORIGINS}")

    def summary(self) -> str:
        """One short cell: the upstream components, then the verdict."""
        exact = [c for c in COMPONENTS if getattr(self, c) == "upstream"]
        rebuilt = [f"{c} {getattr(self, c)}" for c in COMPONENTS
                   if getattr(self, c) in ("rebuilt", "generated")]
        parts = []
        if exact:
            parts.append("upstream " + "/".join(exact))
        if rebuilt:
            parts.append(", ".join(rebuilt))
        return "; ".join(parts + [self.comparable])


#: What a suite that states nothing declares: our own game, no published counterpart.
OWN_SUITE = Comparability(comparable="the project's own suite; no published counterpart")


@runtime_checkable
class Suite(Protocol):
    """A versioned benchmark. `id` is ``name@version``."""

    name: str
    version: int
    description: str
    trivial_actions: Mapping[str, str]
    """Named "do nothing" / "finish now" moves, e.g. ``{"no-op": "No-op"}``."""
    blocking: bool
    """True when `Env.step` is slow or blocks (runs in a worker thread); False steps inline."""
    instructions: str
    """The rules and the action format, as a model-backed policy's system prompt states them."""
    comparability: Comparability
    """What is upstream's exactly and what is rebuilt; whether scores compare with published
    ones (`harness list suites` and the README show it)."""

    @property
    def id(self) -> str: ...

    def tasks(self, split: str | None = None) -> list[TaskSpec]: ...

    def task(self, task_id: str) -> TaskSpec: ...

    def make_env(self, task_id: str) -> Env: ...


SUITE_CAPABILITIES: Mapping[str, Any] = {
    "multiline_actions": False,
    # an action may span lines (a POST and its JSON body): parsers keep the whole block
    "default_scaffold": "",
    # the scaffold (NAME@VERSION) a model policy whose spec names none uses on this suite
    "published_splits": SPLITS,
    # the splits the benchmark publishes; the others are empty, not invented
    "resources": None,
    # what one env worker reserves on a Ray node (`harness.executors.ray_envs.SuiteResources`
    # or a mapping of its fields); None: one CPU
    "exploit_policies": None,
    # name -> policy spec of the adversarial probes the audit runs (reward hacks)
    "step_all": None,
    # step several of its envs at once (Ray env workers): step_all(envs, actions)
    "settings": {},
    # what decides its episodes beyond its id (τ-bench: the user simulator): part of the
    # identity and the id of every run that plays the suite
    "unsupported": {},
    # task id -> why the suite leaves that task out (`harness tasks unsupported SUITE`)
    "build_task": None,
    # build_task(task_id, *, retry_failed=False): build the task's environment ahead of its
    # episodes (`harness tasks build SUITE`), `EnvironmentNotBuilt` when it cannot be; a
    # failure is remembered and raised again at once, unless retry_failed
}
"""The optional capabilities a suite may declare, each with the value a suite that does not
declare it has. The engine reads them only through `suite_capability`; `check_suite` checks
their types."""
ENV_CAPABILITIES: Mapping[str, Any] = {
    "ends_on_invalid": False,
    # the benchmark's own protocol ends the episode on an unparseable turn
    "free_form_actions": False,
    # admissible_actions lists only examples (free-text search): the oracle may act outside it
}
"""The optional flags an env may declare (read through `env_capability`; `check_env` checks
them): optional methods are the protocols above (`Snapshotable`, `HasOracle`, ...) and
`Closable`."""
_CAPABILITY_TYPES: Mapping[str, tuple[type, ...]] = {
    "multiline_actions": (bool,), "default_scaffold": (str,), "published_splits": (tuple,),
    "exploit_policies": (Mapping, type(None)), "settings": (Mapping,), "ends_on_invalid": (bool,),
    "free_form_actions": (bool,), "unsupported": (Mapping,), "build_task": (Callable, type(None))}


class EnvironmentNotBuilt(HarnessError):
    """A task's environment (its image, its filesystem layer) could not be built; the message
    says why on one line. `make_env` and a suite's ``build_task`` raise it; the audit lists
    such tasks apart from the oracle's failures."""


@runtime_checkable
class Closable(Protocol):
    """An env (or a suite) holding resources beyond memory: a sandbox, a server."""

    def close(self) -> None: ...


def suite_capability(suite: Any, name: str) -> Any:
    """The suite's declared optional capability `name` (`SUITE_CAPABILITIES`), or its
    default. Asking for an undeclared name is a `KeyError`: declare it there first."""
    return getattr(suite, name, SUITE_CAPABILITIES[name])


def env_capability(env: Any, name: str) -> Any:
    """The env's declared optional flag `name` (`ENV_CAPABILITIES`), or its default."""
    return getattr(env, name, ENV_CAPABILITIES[name])


def check_suite(suite: Any) -> None:
    """Raise `EnvCheckError` when `suite` is not a `Suite` or a capability it declares has
    the wrong type (`SUITE_CAPABILITIES`), or it publishes a split outside `SPLITS`."""
    if not isinstance(suite, Suite):
        raise EnvCheckError(f"{type(suite).__name__} does not implement the Suite protocol")
    problems = [f"{name} must be {' or '.join(t.__name__ for t in types)}, got "
                f"{type(suite_capability(suite, name)).__name__}"
                for name, types in _CAPABILITY_TYPES.items() if name in SUITE_CAPABILITIES
                and not isinstance(suite_capability(suite, name), types)]
    unknown = set(suite_capability(suite, "published_splits")) - set(SPLITS)
    if unknown:
        problems.append(f"published_splits names unknown splits {sorted(unknown)}")
    if problems:
        raise EnvCheckError(f"{suite.id}: " + "; ".join(problems))


class SuiteBase:
    """Shared bookkeeping for suites whose task list is known up front.

    Subclasses set `name`, `version`, `description`, `trivial_actions`, build `self._specs`
    (a list of `TaskSpec`) in ``__init__`` and implement `make_env`.
    """

    name: str = ""
    version: int = 0
    description: str = ""
    trivial_actions: Mapping[str, str] = {}
    blocking: bool = False
    instructions: str = ""
    multiline_actions: bool = False
    """True when an action may span lines (a POST and its JSON body): the scaffolds' parsers
    then keep the whole action block instead of rejecting or cutting it."""
    default_scaffold: str = ""
    """The scaffold (``NAME@VERSION``, e.g. ``terminal@1``) a model policy whose spec names
    none uses on this suite; "" leaves the policy's own default (``think@1``)."""
    comparability: Comparability = OWN_SUITE
    published_splits: tuple[str, ...] = SPLITS
    """The splits this suite has tasks in: all three unless the benchmark publishes fewer
    (τ-bench airline only test, DB-Bench test and dev); the others are empty, not invented."""

    def __init__(self, specs: Sequence[TaskSpec]):
        self._specs = list(specs)
        self._by_id = {s.id: s for s in self._specs}
        if len(self._by_id) != len(self._specs):
            raise ValueError(f"{self.id}: duplicate task ids")

    @property
    def id(self) -> str:
        return f"{self.name}@{self.version}"

    def tasks(self, split: str | None = None) -> list[TaskSpec]:
        if split is None:
            return list(self._specs)
        if split not in SPLITS:
            raise UnknownNameError("split", split, SPLITS)
        return [s for s in self._specs if s.split == split]

    def task(self, task_id: str) -> TaskSpec:
        try:
            return self._by_id[task_id]
        except KeyError:
            raise UnknownNameError(f"task of {self.id}", task_id, self._by_id) from None

    def task_types(self) -> list[str]:
        return sorted({s.task_type for s in self._specs})

    def make_env(self, task_id: str) -> Env:  # pragma: no cover - abstract
        raise NotImplementedError


# ---------------------------------------------------------------------------------------------
# Registry

SuiteFactory = Callable[[], Suite]
_REGISTRY: dict[str, dict[int, SuiteFactory | str]] = {}
_CACHE: dict[str, Suite] = {}


def register_suite(name: str, version: int, factory: SuiteFactory | str) -> None:
    """Register ``name@version``. `factory` is a zero-argument callable or a lazy
    ``"module:attribute"`` path, so suites with optional dependencies import only when used."""
    if "@" in name or not name:
        raise ValueError(f"bad suite name {name!r}")
    _REGISTRY.setdefault(name, {})[version] = factory


def suite_ids() -> list[str]:
    """Every registered ``name@version``, sorted (installed families loaded first)."""
    load_families()
    return sorted(f"{n}@{v}" for n, versions in _REGISTRY.items() for v in versions)


def resolve_suite_id(spec: str) -> str:
    """``"frozenlake"`` -> latest ``"frozenlake@N"``; ``"frozenlake@1"`` is checked as given."""
    name, _, version = spec.partition("@")
    if name not in _REGISTRY:
        load_families()  # an installed family (`tasks.plugins`) may register it
    if name not in _REGISTRY:
        raise UnknownNameError("suite", spec, [*_REGISTRY, *suite_ids()])
    versions = _REGISTRY[name]
    if not version:
        return f"{name}@{max(versions)}"
    if not version.isdigit() or int(version) not in versions:
        raise UnknownNameError("suite version", spec, [f"{name}@{v}" for v in versions])
    return f"{name}@{int(version)}"


def get_suite(spec: str) -> Suite:
    """The suite for ``name`` or ``name@version`` (cached per process)."""
    suite_id = resolve_suite_id(spec)
    if suite_id not in _CACHE:
        name, version = suite_id.split("@")
        factory = _REGISTRY[name][int(version)]
        if isinstance(factory, str):
            module, _, attribute = factory.partition(":")
            factory = getattr(importlib.import_module(module), attribute)
        suite = factory()
        if suite.id != suite_id:
            raise HarnessError(f"suite factory for {suite_id} built {suite.id}")
        _CACHE[suite_id] = suite
    return _CACHE[suite_id]


# ---------------------------------------------------------------------------------------------
# Contract checker

INVALID_PROBE = "<<this is not an action>>"


class EnvCheckError(HarnessError, AssertionError):
    """An Env that breaks the contract; the message lists every violation found."""


def _record(result: StepResult) -> tuple:
    return (result.observation, result.reward, result.terminated, result.truncated,
            json.dumps(result.info, sort_keys=True, default=repr))


def _check_types(obs: Any, info: Any, where: str, problems: list[str]) -> None:
    if not isinstance(obs, str):
        problems.append(f"{where}: observation is {type(obs).__name__}, not str")
    if not isinstance(info, dict):
        problems.append(f"{where}: info is {type(info).__name__}, not dict")
        return
    for key in REQUIRED_INFO_KEYS:
        if key not in info:
            problems.append(f"{where}: info lacks {key!r}")
    if not isinstance(info.get("won"), bool) or not isinstance(info.get("invalid"), bool):
        problems.append(f"{where}: info['won'] and info['invalid'] must be bool")
    if not isinstance(info.get("score"), (int, float)) or isinstance(info.get("score"), bool):
        problems.append(f"{where}: info['score'] must be a number")
    actions = info.get("admissible_actions")
    if actions is not None and not all(isinstance(a, str) for a in actions):
        problems.append(f"{where}: admissible_actions must be a list of str")
    try:
        json.dumps(info)
    except (TypeError, ValueError) as exc:
        problems.append(f"{where}: info is not JSON-serialisable ({exc})")


def _pick(info: dict, rng: np.random.Generator) -> str:
    actions = info.get("admissible_actions") or [INVALID_PROBE]
    return actions[int(rng.integers(len(actions)))]


def _rollout(env: Env, seed: int, action_seed: int, n_steps: int, problems: list[str]) -> list:
    rng = np.random.default_rng(action_seed)
    obs, info = env.reset(seed=seed)
    _check_types(obs, info, "reset", problems)
    trace: list = [(obs, json.dumps(info, sort_keys=True, default=repr))]
    for t in range(n_steps):
        result = env.step(_pick(info, rng))
        _check_types(result.observation, result.info, f"step {t}", problems)
        if not isinstance(result.reward, (int, float)):
            problems.append(f"step {t}: reward is {type(result.reward).__name__}")
        if not isinstance(result.terminated, bool) or not isinstance(result.truncated, bool):
            problems.append(f"step {t}: terminated/truncated must be bool")
        trace.append(_record(result))
        info = result.info
        if result.terminated or result.truncated:
            break
    return trace


def check_env(env: Env, *, seed: int = 0, n_steps: int = 30) -> None:
    """Check `env` against the Env contract; raise `EnvCheckError` listing every violation.

    Checks: observation/info types and required info keys; determinism (same seed + same
    actions => same trajectory); an unparseable action is flagged ``invalid`` and leaves the
    state unchanged; ``truncated`` becomes true exactly at ``max_steps``; snapshot/restore
    round-trips; the oracle's action and Q-value keys are admissible (an env whose
    ``free_form_actions`` is true, e.g. free-text search, lists only examples, so its oracle
    may act outside the list).
    """
    problems: list[str] = []
    if not isinstance(env, Env) or not isinstance(getattr(env, "max_steps", None), int):
        raise EnvCheckError(f"{type(env).__name__} does not implement the Env protocol")
    if env.max_steps <= 0:
        problems.append("max_steps must be positive")
    problems += [f"{name} must be bool" for name in ENV_CAPABILITIES
                 if not isinstance(env_capability(env, name), bool)]

    first = _rollout(env, seed, seed + 1, n_steps, problems)
    second = _rollout(env, seed, seed + 1, n_steps, problems)
    if first != second:
        problems.append("not deterministic: same seed and actions gave different trajectories")

    _check_invalid_and_truncation(env, seed, problems)
    if isinstance(env, Snapshotable):
        _check_snapshot(env, seed, problems)
    _check_capabilities(env, seed, problems)
    if problems:
        raise EnvCheckError(f"{type(env).__name__}: " + "; ".join(dict.fromkeys(problems)))


def _check_invalid_and_truncation(env: Env, seed: int, problems: list[str]) -> None:
    env.reset(seed=seed)
    key_before = env.state_key() if isinstance(env, HasStateKey) else None
    # a benchmark whose own protocol ends the episode on an unparseable turn declares it
    ends_on_invalid = env_capability(env, "ends_on_invalid") is True
    for t in range(1, env.max_steps + 1):
        result = env.step(INVALID_PROBE)
        if result.info.get("invalid") is not True:
            problems.append(f"an unparseable action was not flagged invalid (step {t})")
        if key_before is not None and env.state_key() != key_before:
            problems.append("an invalid action changed the state")
        if result.terminated != ends_on_invalid:
            problems.append("invalid actions terminated the episode" if result.terminated
                            else "an env with ends_on_invalid went on after an invalid action")
            return
        if ends_on_invalid:
            return
        if result.truncated != (t == env.max_steps):
            problems.append(f"truncated={result.truncated} at step {t} of max_steps={env.max_steps}")
            return


def _check_snapshot(env: Any, seed: int, problems: list[str]) -> None:
    rng = np.random.default_rng(seed + 7)
    _, info = env.reset(seed=seed)
    for _ in range(2):
        result = env.step(_pick(info, rng))
        info = result.info
        if result.terminated or result.truncated:
            _, info = env.reset(seed=seed)
    snap = env.snapshot()
    actions = [_pick(info, rng) for _ in range(3)]

    def replay() -> list:
        out = []
        for action in actions:
            result = env.step(action)
            out.append(_record(result))
            if result.terminated or result.truncated:
                break
        return out

    once = replay()
    env.restore(snap)
    twice = replay()
    env.restore(snap)
    thrice = replay()
    if not (once == twice == thrice):
        problems.append("snapshot()/restore() does not reproduce the continuation")


def _check_capabilities(env: Any, seed: int, problems: list[str]) -> None:
    _, info = env.reset(seed=seed)
    admissible = info.get("admissible_actions")
    if isinstance(env, HasOracle):
        action = env.oracle_action()
        free_form = env_capability(env, "free_form_actions")
        if not isinstance(action, str):
            problems.append("oracle_action() must return str")
        elif admissible is not None and not free_form and action not in admissible:
            problems.append(f"oracle_action() {action!r} is not admissible")
    if isinstance(env, HasQValues):
        q = env.q_values()
        if admissible is not None and not set(q) <= set(admissible):
            problems.append("q_values() has keys that are not admissible actions")
    if isinstance(env, HasStateKey) and not isinstance(env.state_key(), str):
        problems.append("state_key() must return str")
