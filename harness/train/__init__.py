"""The bundled RL training backend: multi-turn GRPO, Dr. GRPO, RLOO, REINFORCE++, PPO (GAE +
value head), GiGPO and tree rollouts, on tiny CPU models (HF generation) and on a GPU (vLLM).

Modules: `config` (one dataclass per algorithm), `rollout` (groups of G episodes through the
suite's Env and the scaffold; step-wise or whole-episode context), `transitions` (the record),
`advantages` (pure estimators), `loss` (PPO-clip family), `learner`, `sft`, `engine` /
`vllm_engine`, `checkpoint`, `trainer` (one seed), `run` (several seeds, the store),
`evaluation`, `cli` (``harness train``), `bench` (``harness bench train``).

torch, transformers and peft are imported lazily (the ``train`` extra).
"""
