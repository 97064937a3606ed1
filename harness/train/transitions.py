"""The transition record: the exchange format between rollouts, advantage estimation and the
learner, saved per update so that a run can be inspected and exported.

One `Transition` is one training sample: a step (step-wise context) or a whole episode
(episode context). Files are gzipped JSON lines (`save_transitions` / `load_transitions`);
`transitions_frame` is the tidy view for inspection and export (one row per transition).
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import orjson
import pandas as pd

__all__ = ["Transition", "save_transitions", "load_transitions", "transitions_frame"]


@dataclass(frozen=True)
class Transition:
    """One training sample, exactly as sampled.

    prompt_ids: the context the model replied to; response_ids: every id after it (in an
    episode context: the model's replies interleaved with observation turns); logprobs: the
    behaviour log-probability of each response id (0.0 where `loss_mask` is 0); loss_mask: 1
    on ids the model sampled, 0 on observation turns; token_steps: for each response id, the
    index (within the episode) of the step it belongs to (in a step context: the step
    itself), -1 on observation turns.
    reward: the step's reward (step context) or the episode return (episode context);
    step_rewards / state_keys: per step of the sample (one entry in a step context), the
    reward and the env's `state_key()` before the action; group_id: ``"{update}/{task}/{seed}"``
    (the G episodes of one task and env seed); seed: the env seed; policy_version: the
    learner step whose weights sampled it; node / parent: tree rollout node ids (-1 if none).
    """

    prompt_ids: tuple[int, ...]
    response_ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    loss_mask: tuple[int, ...]
    token_steps: tuple[int, ...]
    reward: float
    step_rewards: tuple[float, ...]
    state_keys: tuple[str, ...]
    actions: tuple[str, ...]
    group_id: str
    task_id: str
    episode: int
    step: int
    seed: int
    policy_version: int
    done: bool
    success: bool
    node: int = -1
    parent: int = -1

    @property
    def n_sampled(self) -> int:
        return int(sum(self.loss_mask))


_TUPLES = {f.name for f in fields(Transition) if str(f.type).startswith("tuple")}


def save_transitions(transitions: Iterable[Transition], path: str | os.PathLike) -> Path:
    """Write `transitions` to a ``.jsonl.gz`` file (one JSON object per line)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wb", compresslevel=3) as handle:
        for transition in transitions:
            handle.write(orjson.dumps(asdict(transition)) + b"\n")
    return path


def load_transitions(path: str | os.PathLike) -> list[Transition]:
    """Read a file written by `save_transitions`."""
    out = []
    with gzip.open(Path(path), "rb") as handle:
        for line in handle:
            data = orjson.loads(line)
            out.append(Transition(**{k: tuple(v) if k in _TUPLES else v
                                     for k, v in data.items()}))
    return out


def transitions_frame(transitions: Sequence[Transition]) -> pd.DataFrame:
    """One row per transition: ids and per-token lists as list cells, plus ``n_prompt``,
    ``n_response`` and ``n_sampled`` token counts (ready for ``to_parquet``)."""
    rows = []
    for t in transitions:
        row = asdict(t)
        row.update(n_prompt=len(t.prompt_ids), n_response=len(t.response_ids),
                   n_sampled=t.n_sampled)
        rows.append({k: list(v) if isinstance(v, tuple) else v for k, v in row.items()})
    return pd.DataFrame(rows)
