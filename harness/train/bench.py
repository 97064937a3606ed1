"""`harness bench train`: training throughput of the bundled backend next to TRL's
`GRPOTrainer` doing the same work.

Same work on both sides: the same randomly initialised tiny Qwen2 model (byte-level
tokenizer, compact chat template), the same single-turn prompts (the first observation of
``frozenlake-random@1`` train maps with the suite's instruction line), the same group size,
batch, completion budget, temperature, learning rate and loss settings (GRPO, no KL, one
iteration per batch), and the same reward: `first_move_reward` of the reply's first line.
Throughput is (prompt + completion) tokens of all samples per second of wall time over the
timed updates (the first update is a warm-up and not timed); each side runs its updates back
to back in this process, TRL first.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.records import StepRecord  # noqa: F401 - re-exported type of the env steps
from tasks.base import StepResult, SuiteBase, TaskSpec, get_suite, register_suite

__all__ = ["BENCH_SUITE", "GUIDED_SUITE", "first_move_reward", "FirstMoveSuite", "GuidedSuite",
           "TrainBench",
           "RolloutEngineRun", "bench_train", "bench_rollout_engines", "train_report"]

BENCH_SUITE = "bench-frozenlake-first-move"
BASE_SUITE = "frozenlake-random@1"
"""The suite whose train maps the bench's prompts come from (through the registry)."""


def _first_line(reply: str) -> str:
    """The reply's first non-blank line, stripped ("" when there is none)."""
    return next((part.strip() for part in reply.splitlines() if part.strip()), "")


def first_move_reward(reply: str, oracle: str) -> float:
    """1.0 for the oracle's first move; otherwise half the share of ASCII letters among the
    reply's first line's characters (a dense reward, so groups rarely tie)."""
    line = _first_line(reply)
    if line.lower() == oracle.lower():
        return 1.0
    if not line:
        return 0.0
    return 0.5 * sum(c.isascii() and c.isalpha() for c in line) / len(line)


class _FirstMoveEnv:
    """One step: the reply is scored by `first_move_reward` against the oracle's move."""

    max_steps = 1

    def __init__(self, inner: Any):
        self.inner = inner

    def reset(self, *, seed: int):
        obs, info = self.inner.reset(seed=seed)
        self._oracle = self.inner.oracle_action()
        self._moves = {move.lower() for move in info["admissible_actions"]}
        return obs, info

    def step(self, action: str) -> StepResult:
        reward = first_move_reward(action, self._oracle)
        line = _first_line(action)
        invalid = not line.isascii() or line.lower() not in self._moves  # names no move
        info = {"won": reward == 1.0, "score": reward, "invalid": invalid}
        return StepResult("", reward, True, False, info)


class FirstMoveSuite(SuiteBase):
    """Single-turn bench suite over `BASE_SUITE`'s train maps."""

    name = BENCH_SUITE
    version = 1
    description = "bench only: the first move of frozenlake-random maps, one step"
    trivial_actions = {"left": "Left"}

    def __init__(self) -> None:
        self.base = get_suite(BASE_SUITE)
        self.instructions = self.base.instructions
        super().__init__([TaskSpec(t.id, t.split, t.task_type, t.metadata)
                          for t in self.base.tasks("train")])

    def make_env(self, task_id: str) -> _FirstMoveEnv:
        return _FirstMoveEnv(self.base.make_env(task_id))


GUIDED_SUITE = "bench-frozenlake-guided"


class _GuidedEnv:
    """`BASE_SUITE`'s episode with a dense reward: each step scores the reply by
    `first_move_reward` against the oracle's move from that state, then plays it on the map.
    ``won`` is the map's; ``score`` the mean step reward so far."""

    def __init__(self, inner: Any):
        self.inner, self.max_steps = inner, inner.max_steps
        self._rewards: list[float] = []

    def reset(self, *, seed: int):
        self._rewards = []
        return self.inner.reset(seed=seed)

    def step(self, action: str) -> StepResult:
        reward = first_move_reward(action, self.inner.oracle_action())
        result = self.inner.step(_first_line(action))
        self._rewards.append(reward)
        info = {**result.info, "score": sum(self._rewards) / len(self._rewards)}
        return StepResult(result.observation, reward, result.terminated, result.truncated,
                          info)

    def oracle_action(self) -> str:
        return self.inner.oracle_action()


class GuidedSuite(SuiteBase):
    """Multi-step bench suite over `BASE_SUITE`'s train and test maps with the oracle's
    dense per-step reward (learning shows within minutes on a CPU; the compaction tests)."""

    name = GUIDED_SUITE
    version = 1
    description = "bench only: frozenlake-random maps, each step rewarded like the first move"
    trivial_actions = {"left": "Left"}

    def __init__(self) -> None:
        self.base = get_suite(BASE_SUITE)
        self.instructions = self.base.instructions
        super().__init__([TaskSpec(t.id, t.split, t.task_type, t.metadata)
                          for split in ("train", "test") for t in self.base.tasks(split)])

    def make_env(self, task_id: str) -> _GuidedEnv:
        return _GuidedEnv(self.base.make_env(task_id))


@dataclass(frozen=True)
class TrainBench:
    """Tokens per second of both trainers over the timed updates."""

    updates: int
    samples_per_update: int
    ours_tokens_per_s: float
    trl_tokens_per_s: float
    ours_s: float
    trl_s: float

    @property
    def ratio(self) -> float:
        return self.ours_tokens_per_s / self.trl_tokens_per_s


@dataclass(frozen=True)
class RolloutEngineRun:
    """Sampling throughput of one rollout engine over the timed updates: sampled tokens per
    second of generation time (`collect`'s ``generate_s``), and whole updates."""

    engine: str
    sampled_tokens: int
    generate_s: float
    update_tokens_per_s: float

    @property
    def tokens_per_s(self) -> float:
        return self.sampled_tokens / self.generate_s


def _ours_config(tmp: Path, model_dir: Path, prompts: int, group: int, updates: int,
                 max_new_tokens: int, lr: float, engine: str = "hf") -> Any:
    from harness.train.config import GRPOConfig, TrainConfig, make_train_config

    return make_train_config({
        "name": f"bench-{engine}", "suite": f"{BENCH_SUITE}@1", "updates": updates,
        "out_dir": str(tmp / "ours"), "db": str(tmp / "bench.db"), "transitions_every": 0,
        "model": {"source": str(model_dir), "chat_template": "model"},
        "rollout": {"tasks_per_update": prompts, "group_size": group, "engine": engine,
                    "max_new_tokens": max_new_tokens, "temperature": 1.0},
        "optim": {"lr": lr, "micro_batch": prompts * group, "grad_clip": 1.0},
    }, TrainConfig(algorithm=GRPOConfig(kl_coef=0.0, clip_low=0.2, clip_high=0.2)))


def _run_ours(config: Any) -> tuple[float, float, RolloutEngineRun]:
    from harness.train.trainer import Trainer

    trainer = Trainer(config, 0)
    try:
        trainer.prepare()
        trainer.update()  # warm-up, not timed
        tokens, sampled, generate_s, started = 0, 0, 0.0, time.perf_counter()
        while trainer.step < config.updates:
            result = trainer.update()
            tokens += sum(len(t.prompt_ids) + len(t.response_ids)
                          for t in result.batch.transitions)
            sampled += int(result.metrics["sampled_tokens"])
            generate_s += result.batch.stats["generate_s"]
        elapsed = time.perf_counter() - started
    finally:
        close = getattr(trainer.engine, "close", None)
        if close is not None:
            close()
    run = RolloutEngineRun(config.rollout.engine, sampled, generate_s, tokens / elapsed)
    return tokens, elapsed, run


def _bench_prompts(n: int) -> list[dict[str, Any]]:
    """Conversational prompts (system = instructions, user = first observation) with the
    oracle's first move, for TRL's dataset."""
    suite = get_suite(BASE_SUITE)
    rows = []
    for task in suite.tasks("train")[:n]:
        env = suite.make_env(task.id)
        obs, _ = env.reset(seed=0)
        rows.append({"prompt": [{"role": "system", "content": suite.instructions},
                                {"role": "user", "content": obs}],
                     "oracle": env.oracle_action()})
    return rows


def _run_trl(tmp: Path, model_dir: Path, prompts: int, group: int, updates: int,
             max_new_tokens: int, lr: float) -> tuple[float, float]:
    from harness.core import require

    datasets = require("datasets", "train", "the TRL comparison bench")
    trl = require("trl", "train", "the TRL comparison bench")
    transformers = require("transformers", "train", "training")
    marks: list[tuple[float, int]] = []

    class Clock(transformers.TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            marks.append((time.perf_counter(), int(state.num_input_tokens_seen)))

    def reward(prompts, completions, oracle, **kwargs):
        return [first_move_reward(c[0]["content"] if isinstance(c, list) else c, o)
                for c, o in zip(completions, oracle)]

    rows = _bench_prompts(prompts * (updates + 1))
    with warnings.catch_warnings():  # transformers' own deprecation notes about TRL's fields
        warnings.simplefilter("ignore", FutureWarning)
        config = trl.GRPOConfig(
            output_dir=str(tmp / "trl"), per_device_train_batch_size=prompts * group,
            num_generations=group, max_completion_length=max_new_tokens, learning_rate=lr,
            beta=0.0, num_iterations=1, epsilon=0.2, temperature=1.0, top_p=1.0, top_k=0,
            max_steps=updates, logging_steps=10_000, save_strategy="no", report_to="none",
            use_cpu=True, bf16=False, seed=0, dataloader_num_workers=0,
            lr_scheduler_type="constant", warmup_steps=0, weight_decay=0.0, max_grad_norm=1.0,
            disable_tqdm=True, log_completions=False, shuffle_dataset=False)
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir)
    trainer = trl.GRPOTrainer(model=model, reward_funcs=reward, args=config,
                              train_dataset=datasets.Dataset.from_list(rows),
                              processing_class=tokenizer, callbacks=[Clock()])
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.train()  # TRL prints its log dicts; the report prints only its own lines
    (t0, n0), (t1, n1) = marks[0], marks[-1]
    return float(n1 - n0), t1 - t0


def bench_train(*, prompts: int = 8, group: int = 8, updates: int = 6, max_new_tokens: int = 8,
                lr: float = 1e-4) -> TrainBench:
    """Both trainers on the same work (module docstring); `updates` includes one warm-up."""
    from harness.policies.tiny import make_tiny_model

    if f"{BENCH_SUITE}@1" not in __import__("tasks").suite_ids():
        register_suite(BENCH_SUITE, 1, FirstMoveSuite)
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        model_dir = make_tiny_model(tmp / "model", seed=0)
        trl_tokens, trl_s = _run_trl(tmp, model_dir, prompts, group, updates, max_new_tokens, lr)
        config = _ours_config(tmp, model_dir, prompts, group, updates, max_new_tokens, lr)
        ours_tokens, ours_s, _ = _run_ours(config)
    return TrainBench(updates - 1, prompts * group, ours_tokens / ours_s, trl_tokens / trl_s,
                      ours_s, trl_s)


def bench_rollout_engines(*, prompts: int = 8, group: int = 8, updates: int = 6,
                          max_new_tokens: int = 8, lr: float = 1e-4,
                          engines: tuple[str, ...] = ("hf", "vllm")) -> list[RolloutEngineRun]:
    """The same GRPO work as `bench_train` with each rollout engine, in this run."""
    from harness.policies.tiny import make_tiny_model

    if f"{BENCH_SUITE}@1" not in __import__("tasks").suite_ids():
        register_suite(BENCH_SUITE, 1, FirstMoveSuite)
    runs = []
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        model_dir = make_tiny_model(tmp / "model", seed=0)
        for engine in engines:
            config = _ours_config(tmp, model_dir, prompts, group, updates, max_new_tokens, lr,
                                  engine)
            runs.append(_run_ours(config)[2])
    return runs


def rollout_engine_lines(runs: list[RolloutEngineRun]) -> list[str]:
    base = next(r for r in runs if r.engine == "hf")
    lines = ["rollout engines, the same GRPO work in this run (sampled tokens per second of "
             "generation; whole updates beside)"]
    for run in runs:
        ratio = "(baseline)" if run is base else \
            f"ratio to hf {run.tokens_per_s / base.tokens_per_s:.2f}"
        lines.append(f"  rollout.engine = {run.engine:5s}: {run.tokens_per_s:8.0f} sampled "
                     f"tokens/s  {ratio}; updates {run.update_tokens_per_s:.0f} tokens/s")
    return lines


def train_report(args: Any) -> list[str]:
    """Lines of `harness bench train`: against TRL, then (where vLLM is installed) vLLM
    rollouts against transformers rollouts."""
    from harness.policies.vllm_client import VLLMUnavailableError, check_vllm

    lines = _trl_lines(bench_train())
    try:
        check_vllm()
    except VLLMUnavailableError as error:
        return [*lines, f"rollout engines: vllm not measured ({error})"]
    return [*lines, *rollout_engine_lines(bench_rollout_engines())]


def _trl_lines(result: TrainBench) -> list[str]:
    return [f"GRPO on the same tiny Qwen2 (random init), {result.samples_per_update} samples "
            f"per update (8 prompts x group 8), 8 new tokens, {result.updates} timed updates",
            f"  TRL GRPOTrainer      : {result.trl_tokens_per_s:10.0f} tokens/s "
            f"({result.trl_s:.1f}s)",
            f"  harness.train        : {result.ours_tokens_per_s:10.0f} tokens/s "
            f"({result.ours_s:.1f}s)",
            f"  ratio harness/TRL    : {result.ratio:10.2f}  (target >= 1.00)"]
