"""Training configuration: frozen dataclasses, one per algorithm, that TOML files serialise.

Each field's ``help`` metadata is its ``--help`` text and says where the default comes from.
A TOML file has top-level keys (`TrainConfig`) and the sections ``[model]``, ``[rollout]``,
``[algorithm]`` (with ``name = "grpo"`` etc.), ``[optim]``, ``[sft]`` and ``[eval]``.
Conflicting settings raise `ConfigError` naming both settings and how to fix them.
"""

from __future__ import annotations

from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, ClassVar

from harness.core import ConfigError, UnknownNameError, read_toml
from harness.executors.spec import parse_executor

__all__ = [
    "ModelConfig", "RolloutConfig", "AlgorithmConfig", "GRPOConfig", "DrGRPOConfig",
    "RLOOConfig", "ReinforcePPConfig", "PPOConfig", "GiGPOConfig", "TreeConfig", "OptimConfig",
    "SFTConfig", "EvalConfig", "TrainConfig", "ALGORITHMS", "AGGREGATIONS", "load_train_config",
    "make_train_config", "config_help",
]

AGGREGATIONS = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum",
                "seq-mean-token-sum-norm")
KL_ESTIMATORS = ("k1", "k3")
SCHEDULES = ("constant", "cosine")


def _help(text: str, default: Any = MISSING, **kwargs: Any) -> Any:
    if isinstance(default, (list, tuple)):
        kwargs["default_factory"] = lambda value=tuple(default): value
    elif default is not MISSING:
        kwargs["default"] = default
    return field(metadata={"help": text}, **kwargs)


@dataclass(frozen=True)
class ModelConfig:
    """Which model is trained and how (full fine-tuning or LoRA)."""

    source: str = _help("'tiny' (a fresh random-init model of the shape below, built locally) "
                        "or a path to a Hugging Face model or harness checkpoint directory",
                        "tiny")
    arch: str = _help("tiny model architecture: qwen2 or gpt2", "qwen2")
    hidden: int = _help("tiny model hidden size", 128)
    layers: int = _help("tiny model layers", 4)
    heads: int = _help("tiny model attention heads", 4)
    kv_heads: int = _help("tiny model key/value heads (qwen2)", 2)
    intermediate: int = _help("tiny model MLP width", 512)
    init_seed: int = _help("seed of the tiny model's random initialisation (not the train "
                           "seed: every training seed starts from the same weights)", 0)
    init_std: float = _help("tiny model: std of the normal initialisation of every linear and "
                            "embedding weight; 0 = the architecture's default "
                            "(initializer_range 0.02, which leaves a 1M-parameter model on a "
                            "long plateau; 0.1 ~ 1/sqrt(hidden) learns far sooner)", 0.0)
    lora_rank: int = _help("LoRA rank (peft); 0 = full fine-tuning (the default for tiny "
                           "models)", 0)
    lora_alpha: float = _help("LoRA alpha (peft default 8; Hu et al. 2021 use alpha = rank)",
                              16.0)
    lora_dropout: float = _help("LoRA dropout", 0.0)
    chat_template: str = _help("'model' (the tokenizer's own chat template) or 'compact' (no "
                               "role markers: the shortest prompt for tiny byte-level models); "
                               "saved with every checkpoint", "model")
    device: str = _help("'auto' (cuda when available), 'cpu' or 'cuda'", "auto")
    threads: int = _help("torch CPU threads (0 = torch's default)", 0)


@dataclass(frozen=True)
class RolloutConfig:
    """How episodes are sampled: groups, context mode, decoding, tree branching."""

    engine: str = _help("'hf' (transformers, CPU or GPU) or 'vllm' (vLLM's engine on its "
                        "build's device, a GPU or the CPU; weights synced after each update)",
                        "hf")
    tasks_per_update: int = _help("tasks (groups) sampled from the train split per update", 16)
    task_types: tuple[str, ...] = _help("train only on these task types of the train split "
                                        "(a specialist: its RL tasks and its SFT "
                                        "demonstrations; empty: every type)", ())
    group_size: int = _help("episodes per task from the same env seed (G of GRPO; DeepSeekMath "
                            "uses 64, verl-agent 8)", 8)
    context: str = _help("'step': one sample per step, prompt = the last `history` steps + "
                         "the observation (verl-agent); 'episode': one sample per episode, "
                         "the whole dialogue, loss on the model's own tokens only", "step")
    history: int = _help("steps of (observation, action) history in a step-wise prompt", 0)
    temperature: float = _help("sampling temperature (the loss uses the same tempered "
                               "log-probabilities)", 1.0)
    max_new_tokens: int = _help("token budget of one model turn", 8)
    max_steps: int | None = _help("cap on steps per episode (the env's own limit when unset)",
                                  None)
    generation_batch: int = _help("prompts per generation forward pass", 1024)
    branches: int = _help("tree rollouts: copies forked from an env snapshot at each branch "
                          "step (1 = no tree)", 1)
    branch_steps: tuple[int, ...] = _help("tree rollouts: the steps at which episodes fork",
                                          ())
    gpu_memory_utilization: float | None = _help(
        "vllm engine: fraction of GPU memory it may take (colocated with the learner); unset: "
        "0.3 on a GPU, 0.1 of host memory on vLLM's CPU build", None)
    sync_tolerance: float = _help(
        "vllm engine: 0 = off; > 0: each update compares, on 8 sampled transitions, the "
        "behaviour log-probs with the learner's and, after the weight sync, the engine's with "
        "the learner's (metrics vllm_behaviour_max_abs_diff, vllm_sync_max_abs_diff), and "
        "stops the run when either exceeds this", 0.0)
    executor: str = _help("where env steps run: 'local' (this process), 'ray' (Ray env-worker "
                          "actors on a local Ray instance) or 'ray:ADDRESS' (an existing "
                          "cluster); the learner and generation stay here", "local")
    env_workers: int = _help("executor 'ray': env-worker actors (each holds many Envs)", 2)
    compact_budget: int | None = _help(
        "context compaction (context 'episode'): when the next observation turn would take "
        "the context past this many tokens, the model summarises the episode so far and "
        "continues from the summary in a new segment (its own sequence; advantages carry "
        "across segments); unset = off", None)
    compact_tokens: int = _help("context compaction: new tokens of a summary", 32)
    compact_prompt: str = _help("context compaction: the summary prompt "
                                "(harness.policies.compaction)", "summary@1")


@dataclass(frozen=True)
class AlgorithmConfig:
    """Policy-loss settings shared by every algorithm (PPO-clip family)."""

    name: ClassVar[str] = ""
    estimator: ClassVar[str] = ""
    clip_low: float = _help("PPO clip below: ratio >= 1 - clip_low (Schulman et al. 2017: 0.2)",
                            0.2)
    clip_high: float = _help("PPO clip above: ratio <= 1 + clip_high (DAPO's clip-higher uses "
                             "0.28)", 0.2)
    dual_clip: float | None = _help("dual-clip constant c > 1 bounding the loss of negative "
                                    "advantages (Ye et al. 2020 use 3); unset = off", None)
    aggregation: str = _help("loss aggregation: token-mean (DAPO), seq-mean-token-mean "
                             "(GRPO), seq-mean-token-sum, seq-mean-token-sum-norm (Dr. GRPO); "
                             "denominators span the whole accumulated batch", "token-mean")
    kl_coef: float = _help("weight of the KL penalty to the reference (initial) policy", 0.0)
    kl_estimator: str = _help("KL estimator: k1 (log-ratio) or k3 (Schulman 2020, as GRPO)",
                              "k3")
    entropy_coef: float = _help("entropy bonus weight", 0.0)
    epochs: int = _help("passes over each rollout batch", 1)
    minibatches: int = _help("optimizer steps per pass (the batch is split evenly)", 1)

    def estimator_params(self) -> dict[str, Any]:
        """Keyword arguments of this algorithm's advantage estimator."""
        return {}


@dataclass(frozen=True)
class GRPOConfig(AlgorithmConfig):
    """GRPO (Shao et al. 2024): group-normalised outcome advantages, KL 0.04, clip 0.2."""

    name: ClassVar[str] = "grpo"
    estimator: ClassVar[str] = "grpo"
    aggregation: str = _help("see AlgorithmConfig (GRPO: seq-mean-token-mean)",
                             "seq-mean-token-mean")
    kl_coef: float = _help("KL weight (DeepSeekMath: 0.04)", 0.04)
    scale_std: bool = _help("divide by the group std (False = Dr. GRPO's advantage)", True)
    eps: float = _help("added to the group std", 1e-6)

    def estimator_params(self) -> dict[str, Any]:
        return {"scale_std": self.scale_std, "eps": self.eps}


@dataclass(frozen=True)
class DrGRPOConfig(AlgorithmConfig):
    """Dr. GRPO (Liu et al. 2025): no std division, constant-length token sum, no KL."""

    name: ClassVar[str] = "dr_grpo"
    estimator: ClassVar[str] = "dr_grpo"
    aggregation: str = _help("see AlgorithmConfig (Dr. GRPO: seq-mean-token-sum-norm)",
                             "seq-mean-token-sum-norm")


@dataclass(frozen=True)
class RLOOConfig(AlgorithmConfig):
    """RLOO (Ahmadian et al. 2024): leave-one-out baseline, sequence-level loss."""

    name: ClassVar[str] = "rloo"
    estimator: ClassVar[str] = "rloo"
    aggregation: str = _help("see AlgorithmConfig (RLOO: seq-mean-token-sum)",
                             "seq-mean-token-sum")


@dataclass(frozen=True)
class ReinforcePPConfig(AlgorithmConfig):
    """REINFORCE++ with a group baseline (Hu et al. 2025): batch-normalised advantages."""

    name: ClassVar[str] = "reinforce_pp"
    estimator: ClassVar[str] = "reinforce_pp"
    eps: float = _help("added to the batch std", 1e-6)

    def estimator_params(self) -> dict[str, Any]:
        return {"eps": self.eps}


@dataclass(frozen=True)
class PPOConfig(AlgorithmConfig):
    """PPO with GAE and a value head (Schulman et al. 2017; Ouyang et al. 2022)."""

    name: ClassVar[str] = "ppo"
    estimator: ClassVar[str] = "gae"
    gamma: float = _help("discount over steps (1.0 for episodic LLM tasks)", 1.0)
    lam: float = _help("GAE lambda (Schulman et al. 2016: 0.95)", 0.95)
    value_coef: float = _help("value loss weight", 0.5)
    value_clip: float = _help("value clipping range around the rollout's values", 0.2)
    epochs: int = _help("passes over each rollout batch (PPO: several)", 2)
    minibatches: int = _help("optimizer steps per pass", 2)

    def estimator_params(self) -> dict[str, Any]:
        return {"gamma": self.gamma, "lam": self.lam}


@dataclass(frozen=True)
class GiGPOConfig(AlgorithmConfig):
    """GiGPO (Feng et al. 2025): episode groups plus anchor-state step groups."""

    name: ClassVar[str] = "gigpo"
    estimator: ClassVar[str] = "gigpo"
    step_weight: float = _help("weight of the step-level advantage (paper: 1.0)", 1.0)
    gamma: float = _help("discount of step returns (paper: 0.95)", 0.95)
    scale_std: bool = _help("normalise by the group std (both levels)", True)
    eps: float = _help("added to the std", 1e-6)
    kl_coef: float = _help("KL weight (paper: 0.01)", 0.01)

    def estimator_params(self) -> dict[str, Any]:
        return {"step_weight": self.step_weight, "gamma": self.gamma,
                "scale_std": self.scale_std, "eps": self.eps}


@dataclass(frozen=True)
class TreeConfig(AlgorithmConfig):
    """Tree rollouts forked from env snapshots, advantages from sibling returns (TreeRL)."""

    name: ClassVar[str] = "tree"
    estimator: ClassVar[str] = "tree"
    leaf_weighting: bool = _help("scale by 1/sqrt(leaves below the node) (TreeRL)", True)
    local_only: bool = _help("sibling-relative advantage only (no tree-level term)", False)

    def estimator_params(self) -> dict[str, Any]:
        return {"leaf_weighting": self.leaf_weighting, "local_only": self.local_only}


ALGORITHMS: dict[str, type[AlgorithmConfig]] = {
    cls.name: cls for cls in (GRPOConfig, DrGRPOConfig, RLOOConfig, ReinforcePPConfig,
                              PPOConfig, GiGPOConfig, TreeConfig)}
GROUP_ALGORITHMS = ("grpo", "dr_grpo", "rloo", "reinforce_pp", "gigpo")


@dataclass(frozen=True)
class OptimConfig:
    """AdamW, schedule, clipping and micro-batching of the RL updates."""

    lr: float = _help("peak learning rate", 1e-4)
    schedule: str = _help("'constant' or 'cosine' (to 0 at the last update)", "constant")
    warmup_steps: int = _help("linear warm-up optimizer steps", 0)
    weight_decay: float = _help("AdamW weight decay", 0.0)
    betas: tuple[float, float] = _help("AdamW betas", (0.9, 0.999))
    adam_eps: float = _help("AdamW epsilon", 1e-8)
    grad_clip: float = _help("clip the global gradient norm to this (0 = off)", 1.0)
    micro_batch: int = _help("samples per forward/backward pass (gradients accumulate over "
                             "the minibatch; the loss does not depend on this)", 256)


@dataclass(frozen=True)
class SFTConfig:
    """Behaviour cloning before RL, on the oracle's or stored successful episodes."""

    steps: int = _help("optimizer steps (0 = no SFT)", 0)
    source: str = _help("'oracle' (the suite's reference policy on the train split) or "
                        "'store' (successful episodes of `store_policy` in the database)",
                        "oracle")
    store_policy: str = _help("policy id whose successful stored episodes are cloned", "")
    lr: float = _help("peak learning rate", 1e-3)
    schedule: str = _help("'constant' or 'cosine'", "cosine")
    warmup_steps: int = _help("linear warm-up steps", 0)
    batch_size: int = _help("(prompt, action) samples per step", 64)
    grad_clip: float = _help("clip the global gradient norm to this (0 = off)", 1.0)
    max_tasks: int | None = _help("use only the first N train tasks of `rollout.task_types` "
                                  "(all when unset)", None)
    noise: float = _help("oracle source: probability that the roll-in takes a random action "
                         "(every visited state keeps the oracle's label; DART, Laskey et al. "
                         "2017); 0 = the oracle's own trajectories", 0.0)
    rollins: int = _help("oracle source with noise: roll-in episodes per task", 1)
    save_at: tuple[int, ...] = _help("also keep checkpoints of these SFT steps (sft-<step>/): "
                                     "an under-trained and a saturated start from one run", ())


@dataclass(frozen=True)
class EvalConfig:
    """Held-out evaluation of the trained policy (greedy and sampled), stored as episodes."""

    split: str = _help("split evaluated", "test")
    n_tasks: int = _help("tasks evaluated (the first N of the split, round-robin across task "
                         "types)", 500)
    samples: int = _help("sampled episodes per task (0 = greedy only)", 1)
    headroom_k: int = _help("also measure sampling headroom pass@k - greedy with k samples "
                            "before training (0 = off)", 0)
    at_start: bool = _help("evaluate the initial policy too (a paired before/after test)",
                           True)


@dataclass(frozen=True)
class TrainConfig:
    """One training recipe; `harness train --seeds 0 1 2` runs it once per training seed."""

    name: str = _help("policy id of the trained model in the store and leaderboard", "")
    suite: str = _help("suite id trained on (its train split)", "frozenlake-random@1")
    updates: int = _help("RL updates (one rollout batch each)", 100)
    seeds: tuple[int, ...] = _help("training seeds (the --seeds flag overrides)", (0,))
    out_dir: str = _help("directory of checkpoints and transition files", "results/train")
    db: str = _help("results database (metrics per update, evaluation episodes)",
                    "results/harness.db")
    checkpoint_every: int = _help("save a checkpoint every N updates (0 = only at the end)", 0)
    transitions_every: int = _help("save the rollout transitions every N updates (0 = never)",
                                   1)
    model: ModelConfig = field(default_factory=ModelConfig)
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    algorithm: AlgorithmConfig = field(default_factory=GRPOConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    sft: SFTConfig = field(default_factory=SFTConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)

    def __post_init__(self) -> None:
        _validate(self)

    def resolved_name(self) -> str:
        return self.name or f"{self.algorithm.name}-{self.suite.split('@')[0]}"

    def to_dict(self) -> dict[str, Any]:
        """Plain values (what TOML holds), with ``algorithm.name`` spelled out."""
        data = asdict(self)
        data["algorithm"] = {"name": self.algorithm.name, **data["algorithm"]}
        return data


# ---------------------------------------------------------------------------------------------
# Validation: each message names the conflicting settings and the fix

def _check_range(where: str, value: Any, low: float, high: float | None = None,
                 integer: bool = False) -> None:
    kind = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind):
        raise ConfigError(f"{where} must be {'an integer' if integer else 'a number'}, "
                          f"got {value!r}")
    if value < low or (high is not None and value > high):
        bound = f"in [{low}, {high}]" if high is not None else f">= {low}"
        raise ConfigError(f"{where} must be {bound}, got {value}")


def _validate_algorithm(a: AlgorithmConfig) -> None:
    _check_range("algorithm.clip_low", a.clip_low, 0.0, 1.0)
    _check_range("algorithm.clip_high", a.clip_high, 0.0)
    if a.dual_clip is not None and (not isinstance(a.dual_clip, (int, float)) or a.dual_clip <= 1):
        raise ConfigError(f"algorithm.dual_clip must be > 1 (Ye et al. use 3), got "
                          f"{a.dual_clip!r}; remove it to turn dual clipping off")
    if a.aggregation not in AGGREGATIONS:
        raise UnknownNameError("loss aggregation", a.aggregation, AGGREGATIONS)
    if a.kl_estimator not in KL_ESTIMATORS:
        raise UnknownNameError("KL estimator", a.kl_estimator, KL_ESTIMATORS)
    _check_range("algorithm.kl_coef", a.kl_coef, 0.0)
    _check_range("algorithm.entropy_coef", a.entropy_coef, 0.0)
    _check_range("algorithm.epochs", a.epochs, 1, integer=True)
    _check_range("algorithm.minibatches", a.minibatches, 1, integer=True)


def _validate_compaction(r: RolloutConfig) -> None:
    if r.compact_budget is None:
        return
    from harness.policies.compaction import summary_prompt

    _check_range("rollout.compact_budget", r.compact_budget, 1, integer=True)
    _check_range("rollout.compact_tokens", r.compact_tokens, 1, integer=True)
    summary_prompt(r.compact_prompt)
    if r.context != "episode":
        raise ConfigError(f"rollout.compact_budget={r.compact_budget} needs rollout.context = "
                          f"'episode' (got {r.context!r}): a step-wise prompt never grows; set "
                          "context = 'episode' or remove compact_budget")


def _validate(c: TrainConfig) -> None:
    r, a, o = c.rollout, c.algorithm, c.optim
    _validate_algorithm(a)
    for where, value, low in (("updates", c.updates, 0), ("rollout.tasks_per_update",
                              r.tasks_per_update, 1), ("rollout.group_size", r.group_size, 1),
                              ("rollout.history", r.history, 0), ("rollout.max_new_tokens",
                              r.max_new_tokens, 1), ("rollout.branches", r.branches, 1),
                              ("optim.micro_batch", o.micro_batch, 1), ("sft.steps",
                              c.sft.steps, 0), ("sft.batch_size", c.sft.batch_size, 1),
                              ("eval.n_tasks", c.eval.n_tasks, 0), ("eval.samples",
                              c.eval.samples, 0), ("eval.headroom_k", c.eval.headroom_k, 0)):
        _check_range(where, value, low, integer=True)
    _check_range("rollout.temperature", r.temperature, 1e-3)
    _check_range("rollout.sync_tolerance", r.sync_tolerance, 0.0)
    _check_range("optim.lr", o.lr, 0.0)
    for where, value in (("optim.schedule", o.schedule), ("sft.schedule", c.sft.schedule)):
        if value not in SCHEDULES:
            raise UnknownNameError(f"{where}", value, SCHEDULES)
    if r.engine not in ("hf", "vllm"):
        raise UnknownNameError("rollout engine", r.engine, ("hf", "vllm"))
    if r.context not in ("step", "episode"):
        raise UnknownNameError("rollout context", r.context, ("step", "episode"))
    parse_executor(r.executor)  # local | ray | ray:ADDRESS, else a ConfigError
    _check_range("rollout.env_workers", r.env_workers, 1, integer=True)
    _validate_compaction(r)
    if r.context == "episode" and r.history:
        raise ConfigError(f"rollout.history={r.history} conflicts with rollout.context="
                          "'episode' (the whole episode is the context); set history = 0 or "
                          "context = 'step'")
    if a.name in GROUP_ALGORITHMS and r.group_size < 2 and c.updates > 0:
        raise ConfigError(f"algorithm '{a.name}' with rollout.group_size=1 gives every "
                          "advantage 0; set rollout.group_size >= 2 or use algorithm 'ppo'")
    tree = r.branches > 1
    if tree != (a.name == "tree"):
        raise ConfigError(f"rollout.branches={r.branches} conflicts with algorithm "
                          f"'{a.name}': tree rollouts (branches > 1 with branch_steps) go with "
                          "algorithm 'tree' and only with it")
    if tree and r.context != "step":
        raise ConfigError("tree rollouts (rollout.branches > 1) share prefix steps and need "
                          "rollout.context = 'step'")
    if tree and not r.branch_steps:
        raise ConfigError("rollout.branches > 1 needs rollout.branch_steps (e.g. [0, 2])")
    if c.sft.source not in ("oracle", "store"):
        raise UnknownNameError("sft source", c.sft.source, ("oracle", "store"))
    if c.sft.source == "store" and c.sft.steps and not c.sft.store_policy:
        raise ConfigError("sft.source = 'store' needs sft.store_policy (the policy id whose "
                          "successful episodes are cloned)")
    if c.model.lora_rank and c.model.lora_rank < 0:
        raise ConfigError("model.lora_rank must be >= 0")
    if not c.seeds:
        raise ConfigError("seeds must list at least one training seed")


# ---------------------------------------------------------------------------------------------
# Building from plain values (TOML, flags)

_SECTIONS = {"model": ModelConfig, "rollout": RolloutConfig, "optim": OptimConfig,
             "sft": SFTConfig, "eval": EvalConfig}


def _coerce(cls: type, where: str, values: dict[str, Any]) -> dict[str, Any]:
    names = {f.name: f for f in fields(cls)}
    out = {}
    for key, value in values.items():
        if key not in names:
            raise UnknownNameError(f"{where} key", key, names)
        if isinstance(value, list):
            value = tuple(value)
        if isinstance(value, int) and not isinstance(value, bool) and \
                names[key].type in ("float", "float | None"):
            value = float(value)
        out[key] = value
    return out


def make_train_config(values: dict[str, Any], base: TrainConfig | None = None) -> TrainConfig:
    """A `TrainConfig` from plain values (top-level keys and section tables)."""
    base = base or TrainConfig()
    values = dict(values)
    sections: dict[str, Any] = {}
    for name, cls in _SECTIONS.items():
        if name in values:
            table = values.pop(name)
            if not isinstance(table, dict):
                raise ConfigError(f"[{name}] must be a table of keys")
            sections[name] = replace(getattr(base, name), **_coerce(cls, name, table))
    if "algorithm" in values:
        table = dict(values.pop("algorithm"))
        algo_name = table.pop("name", base.algorithm.name)
        if algo_name not in ALGORITHMS:
            raise UnknownNameError("algorithm", algo_name, ALGORITHMS)
        cls = ALGORITHMS[algo_name]
        start = base.algorithm if isinstance(base.algorithm, cls) else cls()
        sections["algorithm"] = replace(start, **_coerce(cls, f"algorithm '{algo_name}'", table))
    top = {f.name for f in fields(TrainConfig)} - set(_SECTIONS) - {"algorithm"}
    plain = _coerce(TrainConfig, "train config", {k: v for k, v in values.items()})
    for key in plain:
        if key not in top:
            raise UnknownNameError("train config key", key, top | set(_SECTIONS) | {"algorithm"})
    try:
        return replace(base, **plain, **sections)
    except TypeError as exc:
        raise ConfigError(f"bad train config: {exc}") from None


def load_train_config(path: str | Path, overrides: dict[str, Any] | None = None) -> TrainConfig:
    """Read a TOML train config, then apply `overrides` (plain values, flags win)."""
    path = Path(path)
    data = read_toml(path)
    config = make_train_config(data)
    return make_train_config(overrides, base=config) if overrides else config


def config_help(cls: type = TrainConfig) -> dict[str, str]:
    """``{field: help text}`` of a config dataclass (the ``--help`` text)."""
    return {f.name: f.metadata.get("help", "") for f in fields(cls)}
