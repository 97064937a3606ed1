"""Trainer rollouts on vLLM's CPU build: behaviour log-probs equal the learner's on the same
tokens, weight syncs (full and LoRA) leave the engine scoring as the learner does (and the
check fails before a sync), groups sample independently, seeds repeat; the CPU twin of the GPU
smoke recipe trains 5 GRPO updates with the sync checked after each."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

from harness.store import Store
from tests.harness.policies.llm_support import harness_command, subprocess_env
from tests.harness.policies.vllm_support import TOLERANCE, VLLM_MARKS, make_random_model

pytestmark = VLLM_MARKS
ROOT = __import__("pathlib").Path(__file__).resolve().parents[3]


def _perturb(model, seed: int, scale: float, only: str = "") -> None:
    import torch

    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if only in name:
                parameter.add_(torch.randn(parameter.shape, generator=generator) * scale)


def _behaviour_gap(rollout, model, prompts, samples, temperature):
    from harness.train.vllm_engine import learner_logprobs

    learner = learner_logprobs(model, [(p, s.ids) for p, s in zip(prompts, samples)],
                               temperature=temperature)
    return max(float(np.max(np.abs(np.asarray(s.logprobs) - lp)))
               for s, lp in zip(samples, learner))


def test_behaviour_logprobs_and_weight_syncs_full_and_lora(tmp_path):
    import torch
    import transformers
    from peft import LoraConfig, get_peft_model

    from harness.train.vllm_engine import VLLMRollout

    path = make_random_model(tmp_path / "tiny")
    model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    rng = np.random.default_rng(1)
    prompts = [[int(t) for t in rng.integers(0, 256, size=12)] for _ in range(4)]
    grouped = [p for p in prompts for _ in range(4)]
    rollout = VLLMRollout(path, eos_id=258, model=model)
    try:
        samples = rollout.generate(grouped, max_new_tokens=8, temperature=1.0, seed=7)
        assert all(len(s.ids) == len(s.logprobs) > 0 for s in samples)
        assert all(len({samples[4 * g + i].ids for i in range(4)}) > 1 for g in range(4))
        assert samples == rollout.generate(grouped, max_new_tokens=8, temperature=1.0, seed=7)
        gaps = [_behaviour_gap(rollout, model, grouped, samples, 1.0)]
        cooled = rollout.generate(grouped, max_new_tokens=8, temperature=0.7, seed=8)
        gaps.append(_behaviour_gap(rollout, model, grouped, cooled, 0.7))
        probes = [(p, s.ids) for p, s in zip(grouped, samples)][:8]

        _perturb(model, 0, 0.05)  # an update of the full model
        stale = rollout.check_sync(model, probes)
        rollout.sync(model)
        synced = rollout.check_sync(model, probes)

        lora = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=[
            "q_proj", "v_proj", "gate_proj"], lora_dropout=0.0))
        _perturb(lora, 1, 0.2, only="lora_B")  # an update of the adapters
        stale_lora = rollout.check_sync(lora, probes)
        rollout.sync(lora)
        synced_lora = rollout.check_sync(lora, probes)
        after = rollout.generate(grouped, max_new_tokens=8, temperature=1.0, seed=9)
        gaps.append(_behaviour_gap(rollout, lora, grouped, after, 1.0))
    finally:
        rollout.close()
    print(f"behaviour vs learner max |diff| {max(gaps):.2e}; after a sync: full "
          f"{synced:.2e} (before {stale:.2e}), LoRA {synced_lora:.2e} (before {stale_lora:.2e})")
    assert max(gaps) < TOLERANCE
    assert synced < TOLERANCE and synced_lora < TOLERANCE
    assert stale > 100 * TOLERANCE and stale_lora > 100 * TOLERANCE  # the check can fail


def test_the_cpu_twin_of_the_gpu_smoke_recipe_checks_the_sync_after_each_update(tmp_path):
    from harness.train.metrics_table import load_train_metrics

    db = tmp_path / "train.db"
    result = subprocess.run(harness_command(
        "train", "--config", str(ROOT / "examples" / "cpu_vllm_smoke.toml"), "--seeds", "0",
        "--out-dir", str(tmp_path / "out"), "--db", str(db)), env=subprocess_env(),
        capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "out" / "cpu-vllm-smoke" / "seed-0" / "step-000005").is_dir()
    with Store(db) as store:
        metrics = load_train_metrics(store)
    assert list(metrics.step) == [0, 1, 2, 3, 4]
    for column in ("vllm_behaviour_max_abs_diff", "vllm_sync_max_abs_diff"):
        assert metrics[column].notna().all() and (metrics[column] < 1e-4).all(), column
    print("per update:", metrics[["step", "vllm_behaviour_max_abs_diff",
                                  "vllm_sync_max_abs_diff"]].to_string(index=False))


@pytest.mark.parametrize("tolerance", [-1.0])
def test_a_negative_sync_tolerance_is_refused(tolerance):
    from harness.core import ConfigError
    from harness.train.config import make_train_config

    with pytest.raises(ConfigError, match="sync_tolerance"):
        make_train_config({"rollout": {"engine": "vllm", "sync_tolerance": tolerance}})
