"""The bundled RL training backend: multi-turn GRPO, Dr. GRPO, RLOO, REINFORCE++, PPO (GAE +
value head), GiGPO and tree rollouts, on tiny CPU models (HF generation) and on a GPU (vLLM).

Modules: `config` (one dataclass per algorithm), `rollout` (groups of G episodes in lockstep
through the episode core `harness.episodes` and the ``bare@2`` scaffold; step-wise or
whole-episode context), `transitions` (the record), `advantages` (pure estimators), `loss`
(PPO-clip family), `learner`, `sft`, `engine` (HF sampling) / `vllm_engine` (rollouts on the
project's one vLLM engine), `checkpoint`, `trainer` (one seed), `run` (several seeds, the
store), `evaluation` (checkpoints played by the runner, as ``harness run --policy
checkpoint:PATH``), `cli` (``harness train``), `bench` (``harness bench train``).

torch, transformers and peft are imported lazily (the ``train`` extra).
"""
