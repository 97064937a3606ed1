"""`harness serve`'s app: the OpenAI-compatible endpoints, validation, logprobs, faults."""

import numpy as np
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from harness.serve.app import ServeSettings, create_app
from harness.serve.engines import EchoEngine, LocalEngine, build_engine
from tests.harness.policies.llm_support import direct_logprobs

CHAT = "/v1/chat/completions"
USER = [{"role": "user", "content": "hello <action>Left</action> world"}]


@pytest.fixture(scope="module")
def echo():
    with TestClient(create_app(EchoEngine(), ServeSettings(max_request_bytes=4096))) as client:
        yield client


@pytest.fixture(scope="module")
def local(tiny_model):
    engine = LocalEngine(tiny_model, name="tiny", aliases=("hf:tiny",))
    with TestClient(create_app(engine)) as client:
        yield client


def _error(response, status):
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["message"]
    return error


def test_models(echo):
    data = echo.get("/v1/models").json()
    assert data["object"] == "list" and [m["id"] for m in data["data"]] == ["echo"]


def test_echo_chat_n_and_stop(echo):
    reply = echo.post(CHAT, json={"model": "echo", "messages": USER, "n": 3,
                                  "max_tokens": 100, "stop": ["<action>"]}).json()
    assert [c["message"]["content"] for c in reply["choices"]] == ["hello "] * 3
    assert reply["choices"][0]["finish_reason"] == "stop"
    assert reply["usage"]["prompt_tokens"] == len(USER[0]["content"])
    short = echo.post(CHAT, json={"model": "echo", "messages": USER, "max_tokens": 5}).json()
    assert short["choices"][0]["message"]["content"] == "hello"
    assert short["choices"][0]["finish_reason"] == "length"


@pytest.mark.parametrize("body, status, param", [
    ({"model": "nope", "messages": USER}, 404, "model"),
    ({"model": "echo"}, 400, "messages"),
    ({"model": "echo", "messages": []}, 400, "messages"),
    ({"model": "echo", "messages": [{"role": "wizard", "content": "x"}]}, 400,
     "messages.0.role"),
    ({"model": "echo", "messages": USER, "n": 17}, 400, "n"),
    ({"model": "echo", "messages": USER, "n": 0}, 400, "n"),
    ({"model": "echo", "messages": USER, "temperature": 3}, 400, "temperature"),
    ({"model": "echo", "messages": USER, "max_tokens": 10**6}, 400, "max_tokens"),
    ({"model": "echo", "messages": USER, "top_logprobs": 21}, 400, "top_logprobs"),
    ({"model": "echo", "messages": USER, "stop": ["a", "b", "c", "d", "e"]}, 400, "stop"),
    ({"model": "echo", "messages": USER, "stream": True}, 400, "stream"),
    ([1, 2, 3], 400, None),
])
def test_invalid_requests_get_4xx_bodies(echo, body, status, param):
    error = _error(echo.post(CHAT, json=body), status)
    assert error["param"] == param
    if status == 404:
        assert error["code"] == "model_not_found"


def test_malformed_and_oversized_bodies(echo):
    assert "malformed JSON" in _error(echo.post(CHAT, content=b"{bad json"), 400)["message"]
    big = orjson.dumps({"model": "echo", "messages": [{"role": "user", "content": "x" * 5000}]})
    assert _error(echo.post(CHAT, content=big), 413)["code"] == "request_too_large"

    def chunks():  # no Content-Length: the limit is enforced while reading
        yield big[:3000]
        yield big[3000:]

    assert _error(echo.post(CHAT, content=chunks()), 413)["code"] == "request_too_large"


def test_unknown_routes_and_methods_are_json(echo):
    assert _error(echo.get("/v2/nothing"), 404)["type"] == "invalid_request_error"
    _error(echo.get(CHAT), 405)


JSON = st.recursive(st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats()
                    | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)
FIELDS = st.fixed_dictionaries({}, optional={
    "model": st.sampled_from(["echo", "other", ""]) | JSON,
    "messages": st.lists(st.fixed_dictionaries({"role": st.sampled_from(["user", "system",
                                                                          "bot"]),
                                                 "content": st.text(max_size=30) | JSON}),
                         max_size=3) | JSON,
    "prompt": st.text(max_size=30) | st.lists(st.integers(-5, 300), max_size=5) | JSON,
    "n": JSON, "max_tokens": JSON, "temperature": JSON, "stop": JSON, "seed": JSON,
    "logprobs": JSON, "top_logprobs": JSON, "echo": JSON, "stream": JSON})


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(body=FIELDS | JSON, path=st.sampled_from([CHAT, "/v1/completions"]))
def test_arbitrary_bodies_never_crash_the_server(echo, body, path):
    response = echo.post(path, content=orjson.dumps(body, option=orjson.OPT_NON_STR_KEYS))
    assert response.status_code in (200, 400, 404, 413), response.text
    if response.status_code != 200:
        _error(response, response.status_code)


def test_served_chat_logprobs_equal_a_direct_forward_pass(local, tiny_model):
    messages = [{"role": "system", "content": "rules"}, {"role": "user", "content": "obs"}]
    reply = local.post(CHAT, json={"model": "tiny", "messages": messages, "max_tokens": 12,
                                   "temperature": 0, "logprobs": True,
                                   "top_logprobs": 2}).json()
    content = reply["choices"][0]["logprobs"]["content"]
    prompt = tiny_model.encode_chat(messages)
    token_ids = [c["bytes"][0] if len(c["bytes"]) == 1  # byte-level: id == byte value
                 else tiny_model.tokenizer.convert_tokens_to_ids(c["token"]) for c in content]
    np.testing.assert_allclose([c["logprob"] for c in content],
                               direct_logprobs(tiny_model, prompt, token_ids), atol=1e-5)
    assert all(c["top_logprobs"][0]["logprob"] >= c["top_logprobs"][1]["logprob"]
               for c in content)
    assert reply["usage"] == {"prompt_tokens": len(prompt), "completion_tokens": len(content),
                              "total_tokens": len(prompt) + len(content)}


def test_echo_completions_score_a_given_text(local, tiny_model):
    text = "<action>Left</action>"
    reply = local.post("/v1/completions", json={"model": "hf:tiny", "prompt": text,
                                                "max_tokens": 0, "echo": True,
                                                "logprobs": 1}).json()
    logprobs = reply["choices"][0]["logprobs"]
    ids = tiny_model.encode(text)
    assert logprobs["tokens"] == [tiny_model.token_text(i) for i in ids]
    assert logprobs["token_logprobs"][0] is None
    np.testing.assert_allclose(logprobs["token_logprobs"][1:],
                               direct_logprobs(tiny_model, ids[:1], ids[1:]), atol=1e-5)
    assert reply["choices"][0]["text"] == text


def test_completions_take_token_ids_and_check_them(local, tiny_model):
    reply = local.post("/v1/completions", json={"model": "tiny", "prompt": [72, 105],
                                                "max_tokens": 4, "temperature": 0}).json()
    assert reply["usage"]["prompt_tokens"] == 2 and reply["usage"]["completion_tokens"] == 4
    error = _error(local.post("/v1/completions", json={"model": "tiny", "prompt": [10**6]}),
                   400)
    assert "vocabulary" in error["message"]


def test_without_max_tokens_the_context_bounds_the_reply(local, tiny_model):
    long = [{"role": "user", "content": "x" * 4050}]  # ChatML adds 19: 27 positions left
    reply = local.post(CHAT, json={"model": "tiny", "messages": long, "temperature": 0})
    assert reply.status_code == 200, reply.text
    usage = reply.json()["usage"]
    assert usage["prompt_tokens"] == 4069
    assert usage["prompt_tokens"] + usage["completion_tokens"] <= tiny_model.context_tokens


def test_context_overflow_is_a_400(local):
    error = _error(local.post(CHAT, json={"model": "tiny", "messages": USER,
                                          "max_tokens": 4090}), 400)
    assert error["code"] == "context_length_exceeded"


def test_seeds_repeat_samples(local):
    body = {"model": "tiny", "messages": USER, "max_tokens": 10, "temperature": 1.0,
            "seed": 9, "n": 2}
    first, second = (local.post(CHAT, json=body).json() for _ in range(2))
    texts = [c["message"]["content"] for c in first["choices"]]
    assert texts == [c["message"]["content"] for c in second["choices"]]
    assert texts[0] != texts[1]


def test_fault_injection_mixes_429_and_500():
    app = create_app(EchoEngine(), ServeSettings(fail_rate=1.0, retry_after_s=2,
                                                 fault_seed=1))
    with TestClient(app) as client:
        responses = [client.post(CHAT, json={"model": "echo", "messages": USER})
                     for _ in range(40)]
        stats = client.get("/harness/stats").json()
    statuses = [r.status_code for r in responses]
    assert set(statuses) == {429, 500}
    assert all(r.headers["retry-after"] == "2" for r in responses if r.status_code == 429)
    assert stats["injected_429"] == statuses.count(429)
    assert stats["injected_500"] == statuses.count(500)
    assert stats["requests"] == 40 and stats["completed"] == 0
    _error(responses[0], statuses[0])


def test_build_engine_specs(tiny_path, tmp_path):
    assert isinstance(build_engine("echo"), EchoEngine)
    engine = build_engine(f"hf:{tiny_path}", threads=1)
    assert engine.name == tiny_path.name and f"hf:{tiny_path}" in engine.aliases
    from harness.core import ConfigError

    with pytest.raises(ConfigError, match="not a harness checkpoint"):
        build_engine(f"checkpoint:{tiny_path}")
    import shutil

    from harness.policies.checkpoint import write_checkpoint_metadata

    step = tmp_path / "trained" / "step-5"
    shutil.copytree(tiny_path, step)
    write_checkpoint_metadata(step, train_seed=2, step=5)
    served = build_engine(f"checkpoint:{tmp_path / 'trained'}", name="policy", threads=1)
    with TestClient(create_app(served)) as client:
        reply = client.post(CHAT, json={"model": "policy", "messages": USER, "max_tokens": 3})
    assert reply.status_code == 200 and reply.json()["usage"]["completion_tokens"] == 3
