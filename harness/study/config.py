"""The study file: a declared grid of training recipes, training seeds and evaluation seeds.

A study TOML has top-level keys (`StudyConfig`), ``[base]`` (recipe keys applied over the
``recipe`` file, as in a training TOML), ``[factors]`` (a dotted recipe key -> its levels),
optional ``[[cells]]`` (listed combinations instead of the full product), ``[[arms]]``
(recipes outside the grid: the start checkpoint as ``updates = 0``, a positive control on
another suite, ...), optional ``[[grafts]]`` (`GraftConfig`: the target arm's model with
chosen parameter groups taken from a trained arm, evaluated against both), optional
``[[merges]]`` (`MergeConfig`: trained arms merged with a named method, compared with their
baseline, e.g. a jointly trained arm, and with each other), ``[eval]`` (`EvalPlan`) and
``[analysis]`` (`AnalysisConfig`). Every cell's and arm's recipe is built into a
`TrainConfig` when the file is read, so a bad key or value fails at once with the training
config's one-line error.

    name = "smoke"
    recipe = "examples/frozenlake_grpo.toml"
    seeds = [0, 1, 2]
    [base]
    updates = 20
    [factors]
    "optim.lr" = [1e-4, 3e-4]
    "algorithm.kl_coef" = [0.0, 0.04]
    [[arms]]
    name = "start"
    seeds = [0]
    recipe = { updates = 0 }
    [eval]
    n_tasks = 50
    eval_seeds = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
    [analysis]
    baseline = "start"
    margin = 0.05
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from harness.core import ConfigError, HarnessError, UnknownNameError, read_toml
from harness.stats.multiplicity import METHODS
from harness.train.config import TrainConfig, make_train_config

__all__ = ["ArmConfig", "GraftConfig", "MergeConfig", "EvalPlan", "AnalysisConfig",
           "StudyConfig", "Arm", "load_study_config", "make_study_config", "ROLES"]

ROLES = ("cell", "arm", "positive_control", "graft", "merge")
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._=,+-]*$")


def _help(text: str, default: Any, **kwargs: Any) -> Any:
    if isinstance(default, (list, tuple)):
        return field(default_factory=lambda value=tuple(default): value, metadata={"help": text})
    if isinstance(default, dict):
        return field(default_factory=dict, metadata={"help": text})
    return field(default=default, metadata={"help": text}, **kwargs)


@dataclass(frozen=True)
class ArmConfig:
    """A recipe outside the grid, trained (or, with ``updates = 0``, only built) per seed."""

    name: str = _help("arm name: its policy id in the store", "")
    recipe: dict = _help("recipe keys over the study's base (dotted keys or tables)", {})
    file: str = _help("a recipe TOML replacing the study's `recipe` file for this arm", "")
    seeds: tuple[int, ...] = _help("training seeds (default: the study's); one seed for a "
                                   "fixed artefact such as the start checkpoint", ())
    baseline: str = _help("arm this one is compared with (default: analysis.baseline; '' "
                          "for the baseline itself)", "")
    role: str = _help("'arm' (reported, outside the family of cells) or 'positive_control' "
                      "(a recipe expected to help, e.g. a start with headroom)", "arm")


@dataclass(frozen=True)
class GraftConfig:
    """A graft arm: `target`'s model with the parameter groups `groups` taken from `source`'s
    model of the same training seed (`harness.study.weights.graft_checkpoint`), evaluated
    like any arm and compared with both ends."""

    name: str = _help("graft arm name", "")
    source: str = _help("the trained arm the groups come from (a cell or an arm)", "")
    target: str = _help("the arm receiving them (default: analysis.baseline, the start)", "")
    groups: tuple[str, ...] = _help("selectors: embeddings, attention, mlp, norms, other, "
                                    "GROUP@LAYER or layer:N", ())


@dataclass(frozen=True)
class MergeConfig:
    """A merge arm: the models of `sources` (same training seed) merged with `method` over the
    `base` arm's model (`harness.merge.models.merge_models`), evaluated like any arm."""

    name: str = _help("merge arm name", "")
    method: str = _help("linear, task_arithmetic, ties, ram, ramplus or ramplus_tl", "")
    sources: tuple[str, ...] = _help("the trained arms merged (two or more)", ())
    base: str = _help("the arm whose model is the common base (default: analysis.baseline)",
                      "")
    baseline: str = _help("the arm this merge is compared with (default: analysis.baseline;"
                          " e.g. a jointly trained arm)", "")
    weights: tuple[float, ...] = _help("per source (or one for all)", ())
    densities: tuple[float, ...] = _help("ties: per source (or one for all)", ())
    epsilon: float = _help("ram*: changed means |delta| > epsilon", 1e-5)


@dataclass(frozen=True)
class EvalPlan:
    """How every model of the study is evaluated (through `harness run`)."""

    split: str = _help("split evaluated", "test")
    n_tasks: int = _help("tasks evaluated (the first N of the split, round-robin across "
                         "task types)", 50)
    eval_seeds: tuple[int, ...] = _help("evaluation seeds (the paper used 25)",
                                        tuple(range(10)))
    greedy: bool = _help("evaluate greedy decoding (one episode per task and eval seed)", True)
    samples: int = _help("sampled episodes per task and eval seed at the rollout temperature "
                         "(0 = greedy only)", 4)
    concurrency: int = _help("episodes in flight (also the model's batch size)", 256)


@dataclass(frozen=True)
class AnalysisConfig:
    """How verdicts are reached (see `harness.study.verdicts`)."""

    baseline: str = _help("arm every cell is compared with (e.g. the start checkpoint)", "")
    baseline_by: dict = _help("per factor, level -> the arm cells at that level are compared "
                              "with instead (e.g. each initialisation against its own start: "
                              "[analysis.baseline_by.\"model.source\"])", {})
    metric: str = _help("'success' or 'score'", "success")
    margin: float = _help("equivalence margin in metric units (0.05 = five points); a "
                          "judgement the study must state", 0.05)
    alpha: float = _help("family-wise (holm) or false-discovery (fdr_bh) level", 0.05)
    multiplicity: str = _help("'holm' (Holm 1979, the default) or 'fdr_bh' (Benjamini-"
                              "Hochberg)", "holm")
    smallest_effect: float = _help("smallest effect of interest: the power against it is "
                                   "reported per cell", 0.1)
    power: float = _help("power at which the minimum detectable effect is stated", 0.8)
    headroom_k: int = _help("k of the start's pass@k - greedy headroom per task (0 = off; "
                            "needs eval.samples >= k)", 4)
    n_resamples: int = _help("hierarchical bootstrap resamples per cell", 4000)


@dataclass(frozen=True)
class Arm:
    """One resolved model family of the study: a grid cell or a declared arm."""

    name: str
    role: str
    recipe: TrainConfig
    seeds: tuple[int, ...]
    baseline: str
    levels: tuple[tuple[str, Any], ...] = ()
    graft: GraftConfig | None = None
    """For a graft arm: what it is made of (its baseline is the graft's target)."""
    merge: MergeConfig | None = None
    """For a merge arm: what it is made of."""


@dataclass(frozen=True)
class StudyConfig:
    """A declared study; `arms()` resolves the grid and the declared arms."""

    name: str = _help("study name: prefix of its run ids and checkpoint folders", "")
    recipe: str = _help("base training recipe TOML (every cell starts from it)", "")
    base: dict = _help("recipe keys over the recipe file, shared by every cell", {})
    factors: dict = _help("dotted recipe key -> list of levels", {})
    cells: tuple[dict, ...] = _help("listed combinations (default: the full product)", ())
    seeds: tuple[int, ...] = _help("training seeds of every cell (the paper used 6)", (0, 1, 2))
    arms: tuple[ArmConfig, ...] = _help("arms outside the grid", ())
    grafts: tuple[GraftConfig, ...] = _help("graft arms (built from trained arms, not trained)",
                                            ())
    merges: tuple[MergeConfig, ...] = _help("merge arms (built from trained arms, not "
                                            "trained)", ())
    out_dir: str = _help("checkpoint folder of the study", "results/study")
    db: str = _help("results database", "results/harness.db")
    report_dir: str = _help("folder `harness study report` writes", "reports/study")
    eval: EvalPlan = field(default_factory=EvalPlan)
    analysis: AnalysisConfig = field(default_factory=AnalysisConfig)
    root: str = _help("folder relative recipe paths are read from (the study file's)", ".")

    def arms_resolved(self) -> tuple[Arm, ...]:
        return _resolve(self)

    def arm(self, name: str) -> Arm:
        arms = {a.name: a for a in self.arms_resolved()}
        if name not in arms:
            raise UnknownNameError("study arm", name, arms)
        return arms[name]


def _dotted(values: dict[str, Any]) -> dict[str, Any]:
    """``{"optim.lr": 1}`` -> ``{"optim": {"lr": 1}}``, merged with nested tables."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        parts = key.split(".")
        target = out
        for part in parts[:-1]:
            target = target.setdefault(part, {})
            if not isinstance(target, dict):
                raise ConfigError(f"recipe key {key!r} sets inside {part!r}, which is a value")
        if isinstance(value, dict):
            value = _dotted(value)
            target[parts[-1]] = _merge(target.get(parts[-1], {}), value)
        else:
            target[parts[-1]] = value
    return out


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(a)
    for key, value in b.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _label(key: str, value: Any, levels: Any = ()) -> str:
    """``factor=level`` for cell names; a path shows as many trailing parts as tell it apart
    from the factor's other `levels` (``source=seed-0/sft``)."""
    short = key.split(".")[-1]
    if isinstance(value, float):
        text = f"{value:g}"
    elif isinstance(value, str):
        others = [str(v) for v in levels if isinstance(v, str) and v != value]
        parts = Path(value).parts or (value,)
        depth = 1
        while depth < len(parts) and any(
                Path(o).parts[-depth:] == parts[-depth:] for o in others):
            depth += 1
        tail = "/".join(parts[-depth:])
        text = re.sub(r"[^A-Za-z0-9._+/-]", "_", tail)[-24:].replace("/", "-")
    else:
        text = str(value)
    return f"{short}={text}"


def _recipe(study: StudyConfig, file: str, where: str, *layers: dict[str, Any]) -> TrainConfig:
    data: dict[str, Any] = {}
    path = file or study.recipe
    if path:
        p = Path(path)
        if not p.is_absolute() and not p.exists():
            p = Path(study.root) / p
        data = read_toml(p)
    for layer in (study.base, *layers):
        data = _merge(data, _dotted(layer))
    data.update(out_dir=str(Path(study.out_dir)), db=study.db)
    try:
        return make_train_config(data)
    except ConfigError as error:
        raise ConfigError(f"{where}: {error}") from None


def _grid(study: StudyConfig) -> list[dict[str, Any]]:
    for key, levels in study.factors.items():
        if not isinstance(levels, (list, tuple)) or not levels:
            raise ConfigError(f"factor {key!r} needs a non-empty list of levels")
    if study.cells:
        for cell in study.cells:
            unknown = [k for k in cell if k not in study.factors] if study.factors else []
            if unknown:
                raise UnknownNameError("factor", unknown[0], study.factors)
        return [dict(cell) for cell in study.cells]
    keys = list(study.factors)
    return [dict(zip(keys, combo)) for combo in itertools.product(*study.factors.values())]


def _cell_baseline(study: StudyConfig, levels: dict[str, Any]) -> str:
    """The arm a cell at `levels` is compared with (`AnalysisConfig.baseline_by`)."""
    chosen = study.analysis.baseline
    for factor, mapping in study.analysis.baseline_by.items():
        if factor not in study.factors:
            raise UnknownNameError("factor of analysis.baseline_by", factor, study.factors)
        if not isinstance(mapping, dict):
            raise ConfigError(f"analysis.baseline_by.{factor!r} must map levels to arm names")
        known = [str(level) for level in study.factors[factor]]
        for level in mapping:
            if level not in known:
                raise UnknownNameError(f"level of {factor!r} in analysis.baseline_by", level,
                                       known)
        if factor in levels and str(levels[factor]) in mapping:
            chosen = mapping[str(levels[factor])]
    return chosen


def _resolve(study: StudyConfig) -> tuple[Arm, ...]:
    analysis = study.analysis
    arms: list[Arm] = []
    for levels in _grid(study):
        name = ",".join(_label(k, v, study.factors.get(k, ())) for k, v in levels.items()) \
            or "cell"
        recipe = _recipe(study, "", f"cell {name}", levels, {"name": f"{study.name}.{name}"})
        arms.append(Arm(name, "cell", recipe, study.seeds, _cell_baseline(study, levels),
                        tuple(levels.items())))
    for arm in study.arms:
        if arm.role not in ROLES[1:]:
            raise UnknownNameError("arm role", arm.role, ROLES[1:])
        recipe = _recipe(study, arm.file, f"arm {arm.name}", arm.recipe,
                         {"name": f"{study.name}.{arm.name}"})
        baseline = arm.baseline if arm.baseline or arm.name == analysis.baseline else ""
        arms.append(Arm(arm.name, arm.role, recipe, tuple(arm.seeds) or study.seeds, baseline))
    arms += _grafts(study, arms) + _merges(study, arms)
    names = [a.name for a in arms]
    for name in names:
        if not NAME.match(name):
            raise ConfigError(f"arm name {name!r}: use letters, digits and . _ = , + -")
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ConfigError(f"two arms are named {dup[0]!r}; give every arm its own name")
    for arm in arms:
        if arm.baseline and arm.baseline not in names:
            raise UnknownNameError(f"baseline of {arm.name}", arm.baseline, names)
        if arm.baseline == arm.name:
            raise ConfigError(f"arm {arm.name!r} is its own baseline")
        if arm.baseline:
            base_seeds = next(a.seeds for a in arms if a.name == arm.baseline)
            if len(base_seeds) != 1 and set(base_seeds) != set(arm.seeds):
                raise ConfigError(f"arm {arm.name!r} (seeds {list(arm.seeds)}) and its baseline "
                                  f"{arm.baseline!r} (seeds {list(base_seeds)}): a baseline "
                                  "has one seed (a fixed model) or the same seeds (paired)")
    return tuple(arms)


def _grafts(study: StudyConfig, arms: list[Arm]) -> list[Arm]:
    from harness.study.weights import check_selectors

    by_name = {a.name: a for a in arms}
    out = []
    for graft in study.grafts:
        where = f"graft {graft.name!r}"
        if graft.source not in by_name:
            raise UnknownNameError(f"source of {where}", graft.source, by_name)
        target = graft.target or study.analysis.baseline
        if target not in by_name:
            raise UnknownNameError(f"target of {where}", target, by_name)
        try:
            groups = check_selectors(graft.groups)
        except HarnessError as error:
            raise ConfigError(f"{where}: {error}") from None
        source = by_name[graft.source]
        if source.recipe.updates == 0:
            raise ConfigError(f"{where}: source {source.name!r} is not trained (updates = 0)")
        recipe = dataclasses.replace(source.recipe, name=f"{study.name}.{graft.name}")
        out.append(Arm(graft.name, "graft", recipe, source.seeds, target,
                       graft=GraftConfig(graft.name, source.name, target, groups)))
    return out


def _merges(study: StudyConfig, arms: list[Arm]) -> list[Arm]:
    from harness.merge.methods import METHODS

    by_name = {a.name: a for a in arms}
    out = []
    for merge in study.merges:
        where = f"merge {merge.name!r}"
        if merge.method not in METHODS:
            raise UnknownNameError(f"method of {where}", merge.method, METHODS)
        if len(merge.sources) < 2:
            raise ConfigError(f"{where} needs two or more sources")
        for name in (*merge.sources, merge.base or study.analysis.baseline):
            if name not in by_name:
                raise UnknownNameError(f"arm of {where}", name, by_name)
        first = by_name[merge.sources[0]]
        for name in merge.sources[1:]:
            if by_name[name].seeds != first.seeds:
                raise ConfigError(f"{where}: sources {first.name!r} and {name!r} have other "
                                  "training seeds; merged models pair by seed")
        recipe = dataclasses.replace(first.recipe, name=f"{study.name}.{merge.name}")
        resolved = dataclasses.replace(merge, base=merge.base or study.analysis.baseline,
                                       baseline=merge.baseline or study.analysis.baseline)
        out.append(Arm(merge.name, "merge", recipe, first.seeds, resolved.baseline,
                       merge=resolved))
    return out


def _section(cls: type, where: str, values: Any) -> Any:
    if not isinstance(values, dict):
        raise ConfigError(f"[{where}] must be a table of keys")
    names = {f.name for f in fields(cls)}
    for key in values:
        if key not in names:
            raise UnknownNameError(f"{where} key", key, names)
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()})


def make_study_config(values: dict[str, Any], *, root: str | Path = ".") -> StudyConfig:
    """A validated `StudyConfig` from plain values (a parsed study TOML)."""
    values = dict(values)
    eval_plan = _section(EvalPlan, "eval", values.pop("eval", {}))
    analysis = _section(AnalysisConfig, "analysis", values.pop("analysis", {}))
    arms = tuple(_section(ArmConfig, "arms", a) for a in values.pop("arms", []))
    grafts = tuple(_section(GraftConfig, "grafts", g) for g in values.pop("grafts", []))
    merges = tuple(_section(MergeConfig, "merges", g) for g in values.pop("merges", []))
    tables = {"eval", "analysis", "arms", "grafts", "merges"}
    top = {f.name for f in fields(StudyConfig)} - tables - {"root"}
    for key in values:
        if key not in top:
            raise UnknownNameError("study key", key, top | tables)
    plain = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}
    study = StudyConfig(**plain, arms=arms, grafts=grafts, merges=merges, eval=eval_plan,
                        analysis=analysis, root=str(root))
    _validate(study)
    return study


def _validate(study: StudyConfig) -> None:
    if not study.name or not NAME.match(study.name):
        raise ConfigError(f"study name {study.name!r}: set `name` (letters, digits, . _ -)")
    if not study.seeds:
        raise ConfigError("seeds must list at least one training seed")
    e, a = study.eval, study.analysis
    if not e.eval_seeds or e.n_tasks < 1 or e.samples < 0:
        raise ConfigError("[eval] needs eval_seeds, n_tasks >= 1 and samples >= 0")
    if not e.greedy and not e.samples:
        raise ConfigError("[eval] greedy = false and samples = 0 evaluate nothing; set one")
    if a.multiplicity not in METHODS:
        raise UnknownNameError("multiplicity method", a.multiplicity, METHODS)
    if a.metric not in ("success", "score"):
        raise UnknownNameError("metric", a.metric, ("success", "score"))
    if not 0 < a.alpha < 0.5 or not 0 < a.power < 1 or not a.margin > 0:
        raise ConfigError("[analysis] needs 0 < alpha < 0.5, 0 < power < 1 and margin > 0")
    if a.headroom_k and a.headroom_k > e.samples:
        raise ConfigError(f"analysis.headroom_k = {a.headroom_k} needs eval.samples >= "
                          f"{a.headroom_k} (pass@k from the sampled episodes); lower one")
    arms = study.arms_resolved()
    if not a.baseline:
        raise ConfigError("[analysis] baseline must name the arm cells are compared with "
                          f"(arms: {[x.name for x in arms if x.role != 'cell']})")
    study.arm(a.baseline)
    if len(study.seeds) * len(e.eval_seeds) < 2:
        raise ConfigError("a cell needs at least two training seeds or two eval seeds")


def load_study_config(path: str | Path) -> StudyConfig:
    """Read and validate a study TOML (relative recipe paths: the cwd, then its folder)."""
    path = Path(path)
    return make_study_config(read_toml(path), root=path.parent)
