"""SFT warm start: behaviour cloning on the oracle's trajectories or on stored successful
episodes, through the same scaffold and prompts that RL and evaluation use.

Samples are `TrainSample`s whose response is the demonstrated action text followed by the
end-of-turn token (step context), or the whole demonstrated dialogue with the loss on the
action tokens only (episode context). The loss is the token-mean cross-entropy over the
demonstrated action tokens.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Sequence
from typing import Any

from harness.core import HarnessError, make_rng
from harness.train.config import SFTConfig
from harness.train.learner import TrainSample, forward_logprobs, make_optimizer, make_schedule
from harness.policies.scaffold import BareScaffold
from harness.train.prompting import Tokenization
from tasks.base import HasOracle, Suite, TaskSpec

log = logging.getLogger(__name__)

__all__ = ["demonstration_samples", "oracle_demonstrations", "stored_demonstrations",
           "sft_train"]


def demonstration_samples(instructions: str, episodes: Sequence[Sequence[tuple[str, str]]],
                          *, tokenization: Tokenization, scaffold: BareScaffold,
                          context: str) -> list[TrainSample]:
    """Samples from demonstrated episodes, each a list of ``(observation, action)`` steps."""
    samples = []
    for steps in episodes:
        if context == "step":
            for t, (obs, action) in enumerate(steps):
                messages = scaffold.render(instructions, scaffold.window(steps[:t]), obs)
                prompt = tokenization.prompt_ids(messages)
                reply = tokenization.reply_ids(action)
                samples.append(TrainSample(tuple(prompt + reply), len(prompt),
                                           (1.0,) * len(reply), (0.0,) * len(reply),
                                           (0.0,) * len(reply)))
            continue
        prompt = tokenization.prompt_ids(scaffold.render(instructions, [], steps[0][0]))
        response, mask = [], []
        for t, (_, action) in enumerate(steps):
            reply = tokenization.reply_ids(action)
            response += reply
            mask += [1.0] * len(reply)
            if t + 1 < len(steps):
                turn = tokenization.observation_turn_ids(steps[t + 1][0])
                response += turn
                mask += [0.0] * len(turn)
        zeros = (0.0,) * len(response)
        samples.append(TrainSample(tuple(prompt + response), len(prompt), tuple(mask), zeros,
                                   zeros))
    return samples


def oracle_demonstrations(suite: Suite, tasks: Sequence[TaskSpec], *,
                          seed_of: Callable[[TaskSpec], int], max_steps: int | None = None,
                          noise: float = 0.0, rollins: int = 1, seed: int = 0
                          ) -> list[list[tuple[str, str]]]:
    """``(observation, oracle action)`` steps on each task.

    With ``noise = 0`` these are the oracle's own (successful) trajectories. With ``noise > 0``
    the roll-in takes a uniformly random admissible action with that probability and every
    visited state is labelled with the oracle's action (DART noise injection, Laskey et al.
    2017), so the demonstrations also cover the states just off the oracle's path; `rollins`
    such episodes per task, their randomness derived from `seed`.
    """
    episodes = []
    for task in tasks:
        for rollin in range(rollins if noise else 1):
            rng = make_rng("sft-rollin", seed, task.id, rollin)
            steps = _labelled_rollin(suite, task, seed_of(task), max_steps, noise, rng)
            if steps:
                episodes.append(steps)
    return episodes


def _labelled_rollin(suite: Suite, task: TaskSpec, env_seed: int, max_steps: int | None,
                     noise: float, rng: Any) -> list[tuple[str, str]]:
    env = suite.make_env(task.id)
    if not isinstance(env, HasOracle):
        raise HarnessError(f"sft.source = 'oracle' needs a suite with an oracle; {suite.id} "
                           "has none")
    obs, info = env.reset(seed=env_seed)
    steps, done = [], False
    while not done:
        action = env.oracle_action()
        steps.append((obs, action))
        admissible = info.get("admissible_actions") or [action]
        if noise and rng.random() < noise:
            action = admissible[int(rng.integers(len(admissible)))]
        result = env.step(action)
        obs, info = result.observation, result.info
        done = result.terminated or result.truncated or (
            max_steps is not None and len(steps) >= max_steps)
    return steps if (noise or info.get("won", False)) else []


def stored_demonstrations(db: str, policy: str, suite: str,
                          task_ids: Collection[str] | None = None
                          ) -> list[list[tuple[str, str]]]:
    """Successful episodes of `policy` on `suite` from the results store (on `task_ids` only,
    when given)."""
    from harness.records import EpisodeKey
    from harness.store import Store

    with Store(db) as store:
        frame = store.load_episodes(policy=policy, suite=suite, statuses=["ok"])
        frame = frame[frame["success"]]
        if task_ids is not None:
            frame = frame[frame["task_id"].isin(set(task_ids))]
        episodes = []
        for row in frame.itertuples():
            key = EpisodeKey(row.policy, row.suite, row.task_id, row.eval_seed, row.sample)
            episodes.append([(s.observation, s.action) for s in store.load_steps(row.run_id, key)])
    if not episodes:
        raise HarnessError(f"no successful stored episodes of policy {policy!r} on {suite} "
                           f"in {db}" + (" on the chosen task types" if task_ids else ""))
    return episodes


def sft_train(model: Any, samples: Sequence[TrainSample], config: SFTConfig, *, pad_id: int,
              seed: int, on_step: Callable[[int, dict[str, float]], None] | None = None
              ) -> list[dict[str, float]]:
    """`config.steps` AdamW steps of token-mean cross-entropy on the response tokens.

    Batches are drawn without replacement within each pass over the samples, in an order
    derived from `seed`. Returns the metrics of every step.
    """
    import torch

    if not samples:
        raise HarnessError("SFT has no demonstration samples")
    parameters = [p for p in model.parameters() if p.requires_grad]
    optimizer = make_optimizer(parameters, config)
    schedule = make_schedule(optimizer, schedule=config.schedule,
                             warmup_steps=config.warmup_steps, total_steps=config.steps)
    autocast = next(model.parameters()).device.type == "cuda"
    order: list[int] = []
    epoch, history = 0, []
    model.train()
    for step in range(config.steps):
        if len(order) < config.batch_size:
            order += make_rng(seed, "sft", epoch).permutation(len(samples)).tolist()
            epoch += 1
        batch = [samples[i] for i in order[:config.batch_size]]
        del order[:config.batch_size]
        started = time.perf_counter()
        logprobs, _, _ = forward_logprobs(model, batch, pad_id=pad_id, autocast=autocast)
        mask = torch.zeros_like(logprobs)
        for i, s in enumerate(batch):
            mask[i, :len(s.mask)] = torch.tensor(s.mask)
        loss = -(logprobs * mask).sum() / mask.sum().clamp(min=1)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(parameters, config.grad_clip or float("inf"))
        optimizer.step()
        schedule.step()
        tokens = sum(len(s.ids) for s in batch)
        metrics = {"sft_loss": float(loss.detach()), "lr": schedule.get_last_lr()[0],
                   "grad_norm": float(norm),
                   "tokens_per_s": tokens / max(time.perf_counter() - started, 1e-9)}
        history.append(metrics)
        if on_step:
            on_step(step, metrics)
        model.train()
    return history
