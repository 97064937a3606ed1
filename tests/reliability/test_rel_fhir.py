"""The MedAgentBench FHIR server under hostile requests (issue 18, failure 3): every malformed
request gets a 4xx OperationOutcome on a connection that stays open, and the well-behaved
episodes sharing the server meet no error."""

import json
import logging
import threading
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fastapi  # noqa: E402,F401

from tasks import get_suite  # noqa: E402
from tasks.medagentbench.backend import FhirBackend  # noqa: E402
from tasks.medagentbench.search import PARAMETERS  # noqa: E402

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "medagentbench"
SUITE = "medagentbench-v2"
PROBES = ["Observation?date=9999", "Observation?_count=\u00b2", "Observation?_count=" + "9" * 5000,
          "Observation?date=2023-01-01T10:00:00%2B99:00", "Observation?date=ge2023-01-01T10:00-99:00",
          "Observation?code=" + ",".join(["a"] * 1001),
          "Observation?date=" + ",".join(["2020"] * 1001),
          "Patient?" + "&".join(["name=a"] * 1001), "Observation?_offset=" + "1" * 5000,
          "Observation?date=0000", "Observation?date=2023-02-30", "Observation?_sort=%00"]
DEEP = [b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 50_000 + b"1" + b"}" * 50_000]


@pytest.fixture(scope="module")
def backend():
    return FhirBackend.shared(DATA)


@pytest.fixture
def episode(backend):
    episode_id, _ = backend.open_episode([], None)
    yield episode_id
    backend.close_episode(episode_id)


@pytest.fixture
def one_connection(backend):
    """A client with a single keep-alive connection: a dropped connection shows."""
    with httpx.Client(base_url=f"{backend.server.url}/fhir/", timeout=30,
                      limits=httpx.Limits(max_connections=1)) as client:
        yield client


def _check_fhir(response: httpx.Response) -> dict:
    assert response.status_code < 500, (response.status_code, response.text[:300])
    body = response.json()
    assert isinstance(body, dict) and isinstance(body.get("resourceType"), str), body
    if response.status_code >= 400:
        assert body["resourceType"] == "OperationOutcome", body
        assert body["issue"] and all(i["severity"] and i["code"] for i in body["issue"])
    return body


def test_malformed_requests_are_4xx_and_the_connection_stays(one_connection, episode):
    headers = {"X-Episode-Id": episode}
    for probe in PROBES:
        body = _check_fhir(one_connection.get(probe, headers=headers))
        assert body["resourceType"] in ("OperationOutcome", "Bundle"), probe[:80]
        assert one_connection.get("Patient?_count=1", headers=headers).status_code == 200
    for body in DEEP:
        response = one_connection.post("Observation", content=body, headers={
            **headers, "Content-Type": "application/fhir+json"})
        assert _check_fhir(response)["resourceType"] == "OperationOutcome"
        assert one_connection.get("Patient?_count=1", headers=headers).status_code == 200


def test_a_tab_inside_a_url_is_an_invalid_action():
    suite = get_suite(SUITE)
    env = suite.make_env(suite.tasks("test")[0].id)
    env.reset(seed=0)
    result = env.step(f"GET {env.api_base}Patient?name=Peter\tParker")
    assert result.info["invalid"] and not result.terminated
    env.close()


def _oracle_episodes(suite, task_ids, failures, played, stop):
    while not stop.is_set():
        for task_id in task_ids:
            env = suite.make_env(task_id)
            try:
                env.reset(seed=0)
                done = False
                while not done:
                    result = env.step(env.oracle_action())
                    done = result.terminated or result.truncated
                    if result.info.get("http_status", 200) >= 500:
                        failures.append((task_id, result.observation[:200]))
            except Exception as exc:  # noqa: BLE001 - counted: must stay 0
                failures.append((task_id, repr(exc)))
            else:
                played.append(task_id)
            finally:
                env.close()


_NAMES = st.one_of(st.sampled_from(sorted({p for ps in PARAMETERS.values() for p in ps}
                                          | {"_count", "_offset", "_sort", "_format"})),
                   st.text(max_size=12))
_DATES = st.builds(lambda p, y, m, d, z: f"{p}{y}-{m}-{d}T10:00:00{z}",
                   st.sampled_from(["", "ge", "le", "ap", "xx", "sa"]),
                   st.integers(0, 99999).map(str), st.integers(0, 99).map(str),
                   st.integers(0, 99).map(str),
                   st.sampled_from(["", "Z", "+99:00", "-24:00", "+05:30", " 05:00"]))
_VALUES = st.one_of(st.text(max_size=30), _DATES, st.integers(-10**30, 10**30).map(str),
                    st.lists(st.text(max_size=4), max_size=300).map(",".join),
                    st.sampled_from(["\u00b2", "\u0663", "9" * 5000, "%", "_", "\\", "'", "\x00"]))
_JSON = st.recursive(st.one_of(st.none(), st.booleans(), st.floats(allow_nan=False),
                               st.integers(), st.text(max_size=20)),
                     lambda inner: st.one_of(st.lists(inner, max_size=4),
                                             st.dictionaries(st.text(max_size=12), inner,
                                                             max_size=4)), max_leaves=30)
_BODIES = st.one_of(
    _JSON.map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries({"resourceType": st.sampled_from(["Observation", "MedicationRequest",
                                                            "ServiceRequest", "Patient"]),
                           "status": st.sampled_from(["final", "active", "bogus", 3]),
                           "subject": st.one_of(_JSON, st.just({"reference": "Patient/S6534835"})),
                           "code": _JSON}).map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=60), st.integers(1, 3000).map(lambda n: b"[" * n + b"]" * n))
_REQUESTS = st.one_of(
    st.tuples(st.just("GET"), st.sampled_from(sorted(PARAMETERS) + ["Nope", "metadata"]),
              st.lists(st.tuples(_NAMES, _VALUES), max_size=6), st.just(b"")),
    st.tuples(st.just("POST"), st.sampled_from(sorted(PARAMETERS) + ["Nope"]), st.just([]),
              _BODIES))


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(requests=st.lists(_REQUESTS, min_size=1, max_size=3))
def test_property_no_5xx_and_well_behaved_episodes_unaffected(requests, one_connection,
                                                             episode, backend, concurrent):
    """Search parameters and bodies drawn at random: never a 5xx, always a FHIR resource or an
    OperationOutcome, and the oracle episodes played meanwhile on the same server (the
    `concurrent` fixture) meet 0 errors."""
    headers = {"X-Episode-Id": episode}
    for method, resource_type, params, body in requests:
        if method == "GET":
            response = one_connection.get(resource_type, params=params, headers=headers)
        else:
            response = one_connection.post(resource_type, content=body, headers={
                **headers, "Content-Type": "application/fhir+json"})
        _check_fhir(response)


@pytest.fixture(scope="module")
def concurrent():
    """Oracle episodes of every test task of the suite, looping in 4 threads for the whole
    module; at teardown, asserts they all finished without an error."""
    suite = get_suite(SUITE)
    task_ids = [t.id for t in suite.tasks("test")][:40]
    failures: list = []
    played: list = []
    stop = threading.Event()
    threads = [threading.Thread(target=_oracle_episodes, args=(
        suite, task_ids[i::4], failures, played, stop)) for i in range(4)]
    for thread in threads:
        thread.start()
    yield failures
    stop.set()
    for thread in threads:
        thread.join(120)
    logging.getLogger(__name__).info("oracle episodes alongside the hostile requests: %d, "
                                     "errors %d", len(played), len(failures))
    assert failures == []
    assert len(played) >= 20  # the episodes really overlapped the hostile requests
