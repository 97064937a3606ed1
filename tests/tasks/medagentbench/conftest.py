"""Fixtures of the MedAgentBench tests: the shared data, a hand-built base record, and a
real FHIR server on a free 127.0.0.1 port."""

from datetime import datetime, timezone

import httpx
import pytest

from tasks.medagentbench.fhirstore import ResourceStore, build_database
from tasks.medagentbench.records import RecordBuilder
from tasks.medagentbench.server import FhirServer


def at(text):
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


def patient(mrn, given, family, birth):
    return {"resourceType": "Patient", "id": mrn,
            "identifier": [{"system": "urn:mrn", "value": mrn}],
            "name": [{"use": "official", "family": family, "given": [given]}],
            "gender": "female", "birthDate": birth}


def hand_built_base():
    """Three patients; P1 has MG at 11-13 08:00, 11-12 11:00 and 11-12 09:00 (outside the
    24 h window that starts 11-12 10:15), one GLU, a problem, two orders, a procedure."""
    resources = [patient("P1", "Peter", "Stafford", "1932-12-29"),
                 patient("P2", "Maria", "Alvarez", "1940-03-05"),
                 patient("P3", "Peter", "Parker", "2001-08-10")]
    b = RecordBuilder("P1", start=1)
    b.lab("MG", 2.1, at("2023-11-13T08:00:00"))
    b.lab("MG", 1.6, at("2023-11-12T11:00:00"))
    b.lab("MG", 1.8, at("2023-11-12T09:00:00"))
    b.lab("GLU", 140, at("2023-11-13T07:00:00"))
    b.condition("44054006", "Type 2 diabetes mellitus", at("2015-01-01T00:00:00"))
    b.medication("metformin", "metformin 500 mg oral tablet", at("2022-01-01T00:00:00"))
    b.medication("lisinopril", "lisinopril 10 mg oral tablet", at("2021-01-01T00:00:00"),
                 status="stopped")
    b.procedure("45378", "Colonoscopy, diagnostic", at("2018-06-01T09:00:00"))
    other = RecordBuilder("P2", start=b.next_id)
    other.lab("MG", 2.4, at("2023-11-13T09:00:00"))
    return resources + b.resources + other.resources


@pytest.fixture(scope="session")
def base_path(tmp_path_factory):
    return build_database(tmp_path_factory.mktemp("fhir") / "base.sqlite", hand_built_base())


@pytest.fixture(scope="session")
def server():
    with FhirServer() as running:
        yield running


@pytest.fixture(scope="session")
def client(server):
    with httpx.Client(base_url=f"{server.url}/fhir/", timeout=30,
                      limits=httpx.Limits(max_connections=200)) as http:
        yield http


@pytest.fixture
def episode(server, base_path):
    """A fresh isolated record over the hand-built base: (episode id, store)."""
    store = ResourceStore(base_path)
    episode_id = server.registry.add(store)
    yield episode_id, store
    server.registry.drop(episode_id)
