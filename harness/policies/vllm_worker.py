"""The vLLM worker: the process that holds the project's one ``vllm.LLM``.

Run by `harness.policies.vllm_client` as ``PYTHON vllm_worker.py SOCKET`` with the
interpreter that has vLLM (``HARNESS_VLLM_PYTHON``; on a GPU machine with the ``gpu`` extra,
the project's own). It imports nothing from the project, only the standard library, vLLM,
torch and safetensors, so it runs in a second environment whose pins (vLLM's CPU build pins
transformers, fastapi and setuptools) cannot share the project's.

Protocol: it listens on the Unix socket SOCKET (``multiprocessing.connection``, the key in
``HARNESS_VLLM_AUTHKEY``), accepts one client, and answers each request dict with a reply
dict, builtins only: ``{"ok": True, ...}`` or ``{"ok": False, "error": "..."}``.

- ``start``: ``kwargs`` for ``vllm.LLM`` -> ``version``, ``platform`` (cpu, cuda, ...).
- ``generate``: ``prompts`` (token-id lists) and ``params`` (``SamplingParams`` keyword
  dicts, one per prompt) -> ``outputs``: per prompt, per choice ``text``, ``token_ids``,
  ``finish_reason``, ``logprobs`` (of the chosen tokens) and ``top`` (``(text, logprob)``
  by rank, per token).
- ``score``: ``pairs`` of (prefix ids, target ids) -> ``logprobs`` of each target token
  given everything before it (vLLM's prompt log-probs).
- ``reload``: ``path`` of a safetensors file of the full model in checkpoint names; the
  weights are loaded in place (``reload_weights``) and the prefix cache is reset.
- ``close``: replies, then the process exits.

The engine runs in this process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``, set by the client):
weights reach it without a second copy, and ``if __name__ == "__main__"`` guards are this
file's business, not the caller's.
"""

from __future__ import annotations

import os
import sys
import traceback
from multiprocessing.connection import Listener
from typing import Any


def _completion(output: Any, want_logprobs: bool, top_n: int) -> dict[str, Any]:
    ids = [int(t) for t in output.token_ids]
    logprobs, top = None, None
    if want_logprobs and output.logprobs:
        logprobs = [float(step[t].logprob) for step, t in zip(output.logprobs, ids)]
        if top_n:
            top = [[(item.decoded_token or "", float(item.logprob))
                    for _, item in sorted(step.items(), key=lambda kv: kv[1].rank or 0)
                    ][:top_n] for step in output.logprobs]
    return {"text": output.text, "token_ids": ids,
            "finish_reason": output.finish_reason or "stop", "logprobs": logprobs, "top": top}


def _retie_output_layer(model: Any) -> None:
    """With tied embeddings the output layer is the embedding's weight, which the checkpoint
    holds once (and vLLM skips ``lm_head.*``): after a reload, point it at the embedding's
    reloaded weight again and redo its post-load processing (on the CPU, the packed copy its
    matrix product reads), or the logits keep the old weights."""
    config = getattr(model, "config", None)
    text = getattr(config, "get_text_config", lambda: config)()
    lm_head = getattr(model, "lm_head", None)
    embed = getattr(getattr(model, "model", None), "embed_tokens", None)
    if not getattr(text, "tie_word_embeddings", False) or lm_head is None or embed is None:
        return
    lm_head.weight = embed.weight
    method = getattr(lm_head, "quant_method", None)
    if method is not None and hasattr(method, "process_weights_after_loading"):
        method.process_weights_after_loading(lm_head)


class Worker:
    def __init__(self) -> None:
        self.llm: Any = None
        self.vllm: Any = None

    def start(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        import vllm
        from vllm.platforms import current_platform

        self.vllm = vllm
        self.llm = vllm.LLM(**kwargs)
        return {"version": getattr(vllm, "__version__", ""),
                "platform": str(current_platform.device_type)}

    def generate(self, prompts: list[list[int]], params: list[dict[str, Any]]
                 ) -> dict[str, Any]:
        sampling = [self.vllm.SamplingParams(**p) for p in params]
        results = self.llm.generate([{"prompt_token_ids": ids} for ids in prompts], sampling,
                                    use_tqdm=False)
        outputs = []
        for result, p in zip(results, params):
            top_n = int(p.get("logprobs") or 0)
            outputs.append([_completion(o, p.get("logprobs") is not None, top_n)
                            for o in result.outputs])
        return {"outputs": outputs}

    def score(self, pairs: list[tuple[list[int], list[int]]]) -> dict[str, Any]:
        params = self.vllm.SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0)
        prompts = [{"prompt_token_ids": list(prefix) + list(target)} for prefix, target in pairs]
        results = self.llm.generate(prompts, [params] * len(prompts), use_tqdm=False)
        scores = []
        for result, (prefix, target) in zip(results, pairs):
            ids = list(prefix) + list(target)
            steps = result.prompt_logprobs[len(prefix):]
            scores.append([float(step[ids[len(prefix) + i]].logprob)
                           for i, step in enumerate(steps)])
        return {"logprobs": scores}

    def reload(self, path: str) -> dict[str, Any]:
        from safetensors.torch import load_file

        weights = load_file(path)
        self.llm.collective_rpc("reload_weights",
                                kwargs={"weights_iterator": iter(weights.items())})
        self.llm.apply_model(_retie_output_layer)
        self.llm.reset_prefix_cache()
        return {"tensors": len(weights)}

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        if op == "start":
            return self.start(request["kwargs"])
        if self.llm is None:
            raise RuntimeError(f"{op!r} before start")
        if op == "generate":
            return self.generate(request["prompts"], request["params"])
        if op == "score":
            return self.score(request["pairs"])
        if op == "reload":
            return self.reload(request["path"])
        raise ValueError(f"unknown request {op!r}")


def serve(address: str, authkey: bytes) -> None:
    worker = Worker()
    with Listener(address, family="AF_UNIX", authkey=authkey) as listener:
        with listener.accept() as conn:
            while True:
                try:
                    request = conn.recv()
                except EOFError:
                    return
                if request.get("op") == "close":
                    conn.send({"ok": True})
                    return
                try:
                    reply = {"ok": True, **worker.answer(request)}
                except Exception as error:  # reported to the client, which raises it
                    trace = traceback.format_exc()
                    print(trace, file=sys.stderr, flush=True)
                    reply = {"ok": False, "error": f"{type(error).__name__}: {error}",
                             "trace": "\n".join(trace.splitlines()[-12:])}
                conn.send(reply)


if __name__ == "__main__":
    serve(sys.argv[1], bytes.fromhex(os.environ.pop("HARNESS_VLLM_AUTHKEY")))
