"""`harness serve --engine vllm` on vLLM's CPU build: `harness run --policy openai:...`
against it takes the same actions as an in-process ``hf:`` run of the same model, and its
completions endpoint scores prompts (echo + logprobs) as transformers does."""

from __future__ import annotations

import json
import urllib.request

import numpy as np

from harness.serve.bench import serve_process
from tests.harness.policies.llm_support import IMPRINT_OPTIONS, free_port
from tests.harness.policies.vllm_support import TOLERANCE, VLLM_MARKS, make_vllm_model
from tests.harness.serve.test_serve_e2e import _run, _trajectories

pytestmark = VLLM_MARKS


def _post(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.loads(response.read())


def test_a_run_against_the_vllm_server_equals_an_hf_run(tmp_path):
    from harness.policies.hf import LocalModel

    model = make_vllm_model(tmp_path / "tiny")
    port, db = free_port(), tmp_path / "runs.db"
    common = ["--suite", "frozenlake@1", "--tasks", "4", "--max-steps", "4", "--db", str(db)]
    served = (f"openai:tiny@http://127.0.0.1:{port}/v1?max_tokens=16&temperature=0&"
              f"{IMPRINT_OPTIONS}")
    local = f"hf:{model}?max_tokens=16&temperature=0&threads=1&{IMPRINT_OPTIONS}"
    hf = LocalModel(model, threads=1)
    prompt = hf.encode("Action: Left\nAction:")
    with serve_process(["--engine", "vllm", "--model", str(model), "--name", "tiny"], port,
                       ready_s=600.0):
        _run("--policy", served, *common)
        scored = _post(f"http://127.0.0.1:{port}/v1/completions", {
            "model": "tiny", "prompt": prompt, "max_tokens": 0, "echo": True, "logprobs": 0})
    _run("--policy", local, *common)
    via_server, in_process = _trajectories(db, served), _trajectories(db, local)
    assert set(via_server) == set(in_process) and len(via_server) == 4
    for key, (episode, steps) in via_server.items():
        assert episode["status"] == "ok"
        assert [s.raw_output for s in steps] == [s.raw_output for s in in_process[key][1]]
    assert any(s.raw_output.startswith("Action: ") for _, steps in via_server.values()
               for s in steps)
    served_logprobs = scored["choices"][0]["logprobs"]["token_logprobs"]
    assert served_logprobs[0] is None and len(served_logprobs) == len(prompt)
    expected = hf.score([(prompt[:1], prompt[1:])])[0]
    assert np.max(np.abs(np.asarray(served_logprobs[1:]) - expected)) < TOLERANCE
