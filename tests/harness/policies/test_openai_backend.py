"""The openai backend through the real `openai` client against `harness serve`'s app,
served by uvicorn in a thread: retries, backoff, Retry-After, timeouts, n, seeds, logprobs."""

import asyncio
import email.utils
import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.core import make_rng
from harness.policies import openai_backend
from harness.policies.model import Sampling
from harness.policies.openai_backend import (ModelRequestError, backoff_delay,
                                             retry_after_seconds)
from harness.policies.backends import make_model_policy
from harness.serve.app import ServeSettings, create_app
from harness.serve.engines import EchoEngine, LocalEngine
from tests.harness.policies.llm_support import (direct_logprobs, free_port, get_json,
                                                thread_server)

MESSAGES = [{"role": "system", "content": "rules"}, {"role": "user", "content": "obs here"}]
FAST = "backoff=0.001&backoff_max=0.01"


def _backend(port, model="echo", options=FAST):
    return make_model_policy(f"openai:{model}@http://127.0.0.1:{port}/v1?{options}").backend


def _stats(port):
    return get_json(f"http://127.0.0.1:{port}/harness/stats")


@pytest.mark.parametrize("headers, seconds", [
    ({}, None), (None, None), ({"retry-after": "3"}, 3.0), ({"retry-after": "0.5"}, 0.5),
    ({"retry-after-ms": "250"}, 0.25), ({"retry-after": "-4"}, 0.0),
    ({"retry-after": "99999"}, openai_backend.MAX_RETRY_AFTER_S),
    ({"retry-after": "soon"}, None),
])
def test_retry_after_parsing(headers, seconds):
    assert retry_after_seconds(headers) == seconds


def test_retry_after_http_date():
    date = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < retry_after_seconds({"retry-after": date}) <= 30


@given(st.integers(0, 40), st.floats(0, 5), st.floats(0, 60), st.none() | st.floats(0, 100))
def test_backoff_is_full_jitter_and_honours_retry_after(attempt, base, extra, retry_after):
    cap = base + extra
    delay = backoff_delay(attempt, base, cap, make_rng("test", attempt), retry_after)
    assert (retry_after or 0) <= delay <= max(cap, retry_after or 0)


def test_backoff_grows_with_the_attempt():
    rng = make_rng("growth")
    means = [np.mean([backoff_delay(a, 0.1, 100, rng) for _ in range(400)]) for a in (0, 3)]
    assert means[1] > 4 * means[0]  # expected 0.05 and 0.4


CLIENTS = ["client=openai&http=aiohttp", "client=openai&http=httpx", "client=direct"]


@pytest.mark.parametrize("client", CLIENTS)
def test_faulty_server_every_request_succeeds_and_retries_are_counted(client):
    port = free_port()
    settings = ServeSettings(fail_rate=0.4, latency_ms=1, latency_jitter_ms=10, fault_seed=3)
    with thread_server(create_app(EchoEngine(), settings), port):
        backend = _backend(port, options=f"{FAST}&max_retries=30&{client}&concurrency=8")

        async def calls():
            return await asyncio.gather(*(backend.chat(MESSAGES, Sampling(max_tokens=4))
                                          for _ in range(30)))

        results = asyncio.run(calls())
        stats = _stats(port)
    assert all(r.choices[0].text == "obs " for r in results)
    retries = sum(r.retries for r in results)
    assert retries == stats["injected_429"] + stats["injected_500"] > 0
    assert stats["injected_429"] > 0 and stats["injected_500"] > 0
    assert stats["completed"] == 30 and stats["max_in_flight"] <= 8


@pytest.mark.parametrize("client", CLIENTS)
def test_retry_after_is_honoured_and_retries_are_bounded(monkeypatch, client):
    delays = []

    async def no_sleep(seconds):
        delays.append(seconds)

    monkeypatch.setattr(openai_backend, "_sleep", no_sleep)
    port = free_port()
    settings = ServeSettings(fail_rate=1.0, retry_after_s=7, fault_seed=0)
    with thread_server(create_app(EchoEngine(), settings), port):
        backend = _backend(port, options=f"max_retries=6&backoff=0.01&backoff_max=0.02&{client}")
        with pytest.raises(ModelRequestError, match="gave up after 6 retries"):
            asyncio.run(backend.chat(MESSAGES, Sampling()))
        stats = _stats(port)
    assert stats["requests"] == 7 and len(delays) == 6
    assert stats["injected_429"] > 0 and stats["injected_500"] > 0
    assert sum(d >= 7 for d in delays) >= stats["injected_429"] - 1  # the last is not retried
    assert all(d == 7 or d <= 0.02 for d in delays)


@pytest.mark.parametrize("client", CLIENTS)
def test_client_errors_are_not_retried(client):
    port = free_port()
    with thread_server(create_app(EchoEngine()), port):
        backend = _backend(port, model="no-such-model", options=client)
        with pytest.raises(ModelRequestError, match="HTTP 404: the model 'no-such-model'"):
            asyncio.run(backend.chat(MESSAGES, Sampling()))
        assert _stats(port)["requests"] == 1


@pytest.mark.parametrize("client", CLIENTS)
def test_dropped_connections_and_timeouts_are_retried(client):
    dead = _backend(free_port(), options=f"max_retries=2&backoff=0.001&backoff_max=0.002&"
                                         f"{client}")
    with pytest.raises(ModelRequestError, match="gave up after 2 retries"):
        asyncio.run(dead.chat(MESSAGES, Sampling()))
    port = free_port()
    with thread_server(create_app(EchoEngine(), ServeSettings(latency_ms=400)), port):
        slow = _backend(port, options="max_retries=1&timeout=0.05&backoff=0.001"
                                      f"&backoff_max=0.002&{client}")
        with pytest.raises(ModelRequestError, match="gave up after 1 retries"):
            asyncio.run(slow.chat(MESSAGES, Sampling()))
        time.sleep(0.5)
        assert _stats(port)["requests"] == 2


@pytest.mark.parametrize("client", ["client=openai", "client=direct"])
def test_n_seed_and_logprobs_through_the_client(tiny_model, client):
    port = free_port()
    engine = LocalEngine(tiny_model, name="tiny")
    with thread_server(create_app(engine), port):
        backend = _backend(port, model="tiny", options=client)
        sampled = Sampling(temperature=1.0, seed=3, n=3, max_tokens=10)
        first, again = (asyncio.run(backend.chat(MESSAGES, sampled)) for _ in range(2))
        greedy = asyncio.run(backend.chat(MESSAGES, Sampling(max_tokens=12, logprobs=True,
                                                             top_logprobs=2)))
    assert len(first.choices) == 3 and len({c.text for c in first.choices}) > 1
    assert [c.text for c in first.choices] == [c.text for c in again.choices]
    (local,), = tiny_model.generate([(tiny_model.encode_chat(MESSAGES),
                                      Sampling(max_tokens=12, logprobs=True))])
    choice = greedy.choices[0]
    assert choice.text == local.text and greedy.prompt_tokens == len(
        tiny_model.encode_chat(MESSAGES))
    np.testing.assert_allclose(choice.logprobs, local.logprobs, atol=1e-5)
    np.testing.assert_allclose(choice.logprobs, direct_logprobs(
        tiny_model, tiny_model.encode_chat(MESSAGES), local.token_ids), atol=1e-5)
    assert all(len(top) == 2 for top in choice.top_logprobs)


@pytest.mark.parametrize("client", ["client=openai", "client=direct"])
def test_clients_close_with_their_event_loop(client):
    port = free_port()
    with thread_server(create_app(EchoEngine()), port):
        backend = _backend(port, options=client)
        closers = []
        for _ in range(2):  # a second event loop gets fresh clients
            assert asyncio.run(backend.chat(MESSAGES, Sampling(max_tokens=3))).choices
            closers.append(backend.transport.closed_at_loop_end)
    assert closers[0] is not closers[1] and all(c.done() for c in closers)
