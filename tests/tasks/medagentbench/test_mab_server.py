"""The FHIR server over real HTTP: search parameters and prefixes, Bundle paging, reads,
POST validation, bad requests (always 4xx with an OperationOutcome), episode isolation."""

import json
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone

import pytest

from tasks.medagentbench.fhirstore import ResourceStore
from tasks.medagentbench.orders import vitals_observation
from tasks.medagentbench.records import RecordBuilder
from tasks.medagentbench.server import MAX_BODY_BYTES


def at(text):
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


def search(client, episode_id, query):
    response = client.get(query, headers={"X-Episode-Id": episode_id})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["resourceType"] == "Bundle" and body["type"] == "searchset"
    return body


def ids(bundle):
    return [e["resource"]["id"] for e in bundle.get("entry", [])]


def values(bundle):
    return [e["resource"]["valueQuantity"]["value"] for e in bundle.get("entry", [])]


def outcome(response, status):
    assert response.status_code == status, response.text
    body = response.json()
    assert body["resourceType"] == "OperationOutcome" and body["issue"], body
    return body["issue"]


@pytest.mark.parametrize("query,expected", [
    ("Observation?patient=P1&code=MG", {2.1, 1.6, 1.8}),
    ("Observation?patient=Patient/P1&code=MG", {2.1, 1.6, 1.8}),
    ("Observation?subject=P1&code=http://loinc.org|19123-9", {2.1, 1.6, 1.8}),
    ("Observation?code=MG", {2.1, 1.6, 1.8, 2.4}),
    ("Observation?patient=P1&code=MG&date=ge2023-11-12T10:15:00%2B00:00", {2.1, 1.6}),
    ("Observation?patient=P1&code=MG&date=ge2023-11-12T10:15:00+00:00", {2.1, 1.6}),
    ("Observation?patient=P1&code=MG&date=ge2023-11-12T10:15:00Z", {2.1, 1.6}),
    ("Observation?patient=P1&code=MG&date=gt2023-11-12", {2.1}),
    ("Observation?patient=P1&code=MG&date=sa2023-11-12", {2.1}),
    ("Observation?patient=P1&code=MG&date=2023-11-12", {1.6, 1.8}),
    ("Observation?patient=P1&code=MG&date=eq2023-11", {2.1, 1.6, 1.8}),
    ("Observation?patient=P1&code=MG&date=ne2023-11-12", {2.1}),
    ("Observation?patient=P1&code=MG&date=le2023-11-12", {1.6, 1.8}),
    ("Observation?patient=P1&code=MG&date=lt2023-11-12T11:00:00Z", {1.8}),
    ("Observation?patient=P1&code=MG&date=eb2023-11-13", {1.6, 1.8}),
    ("Observation?patient=P1&code=MG&date=ge2023-11-12T10:00:00Z&date=le2023-11-13T07:59:00Z",
     {1.6}),
    ("Observation?patient=P1&code=MG,GLU&date=ge2023-11-13", {2.1, 140}),
    ("Observation?patient=P1&category=laboratory&code=GLU", {140}),
    ("Observation?patient=P2&code=mg", {2.4}),
    ("Observation?patient=P3&code=MG", set()),
])
def test_observation_search_parameters_and_date_prefixes(client, episode, query, expected):
    assert set(values(search(client, episode[0], query))) == expected


@pytest.mark.parametrize("query,expected", [
    ("Patient?name=peter", {"P1", "P3"}),
    ("Patient?name=PETER&family=park", {"P3"}),
    ("Patient?given=Pet", {"P1", "P3"}),
    ("Patient?name:exact=Peter", {"P1", "P3"}),
    ("Patient?name:exact=peter", set()),
    ("Patient?name:contains=lvar", {"P2"}),
    ("Patient?family=Stafford&given=Peter", {"P1"}),
    ("Patient?birthdate=1932-12-29", {"P1"}),
    ("Patient?birthdate=ge2000", {"P3"}),
    ("Patient?birthdate=lt1940-03-05", {"P1"}),
    ("Patient?birthdate=le1940-03-05", {"P1", "P2"}),
    ("Patient?identifier=P2", {"P2"}),
    ("Patient?identifier=urn:mrn|P2", {"P2"}),
    ("Patient?_id=P1,P3", {"P1", "P3"}),
    ("Patient?name=Debra&birthdate=1932-12-29", set()),
    ("Condition?patient=P1&category=problem-list-item", {"5"}),
    ("Condition?patient=P2", set()),
    ("MedicationRequest?patient=P1&status=active", {"6"}),
    ("MedicationRequest?patient=P1&code:text=lisino", {"7"}),
    ("Procedure?patient=P1&code=45378&date=ge2013-11-13", {"8"}),
    ("Procedure?patient=P1&date=ge2019", set()),
])
def test_search_parameters_of_other_types(client, episode, query, expected):
    """Ids of the hand-built base: P1's problem is 5, its orders 6 (active) and 7, its
    colonoscopy 8."""
    assert set(ids(search(client, episode[0], query))) == expected


def test_sort_orders_results(client, episode):
    newest_first = search(client, episode[0], "Observation?patient=P1&code=MG&_sort=-date")
    assert values(newest_first) == [2.1, 1.6, 1.8]
    oldest_first = search(client, episode[0], "Observation?patient=P1&code=MG&_sort=date")
    assert values(oldest_first) == [1.8, 1.6, 2.1]


def test_bundle_paging_walks_every_match_once(client, episode):
    page = search(client, episode[0], "Observation?code=MG&_count=1&_sort=date")
    assert page["total"] == 4 and len(page["entry"]) == 1
    seen, pages = ids(page), 1
    while True:
        links = {link["relation"]: link["url"] for link in page["link"]}
        assert links["self"].startswith(str(client.base_url))
        if "next" not in links:
            break
        page = search(client, episode[0], links["next"])
        assert page["total"] == 4 and "previous" in {l["relation"] for l in page["link"]}
        seen += ids(page)
        pages += 1
    assert pages == 4 and len(seen) == len(set(seen)) == 4
    empty = search(client, episode[0], "Observation?code=MG&_count=0")
    assert empty["total"] == 4 and empty["entry"] == []


def test_links_use_the_public_base_header(client, episode):
    response = client.get("Patient?name=peter", headers={
        "X-Episode-Id": episode[0], "X-Public-Base": "http://localhost:8080/fhir/"})
    body = response.json()
    assert body["link"][0]["url"] == "http://localhost:8080/fhir/Patient?name=peter"
    assert body["entry"][0]["fullUrl"].startswith("http://localhost:8080/fhir/Patient/")


def test_read_by_id(client, episode):
    headers = {"X-Episode-Id": episode[0]}
    assert client.get("Patient/P2", headers=headers).json()["birthDate"] == "1940-03-05"
    outcome(client.get("Observation/nope", headers=headers), 404)
    assert client.get("metadata").json()["resourceType"] == "CapabilityStatement"


@pytest.mark.parametrize("query", [
    "Observation?patient=P1&colour=blue", "Observation?date=yesterday",
    "Observation?date=2023-13-01", "Observation?date=ap2023-11-12", "Observation?_sort=colour",
    "Observation?_count=-1", "Patient?name:sounds=peter", "Observation?code=",
])
def test_bad_searches_are_400_with_an_operation_outcome(client, episode, query):
    issues = outcome(client.get(query, headers={"X-Episode-Id": episode[0]}), 400)
    assert issues[0]["severity"] == "error"


def post(client, episode_id, resource_type, body, **kwargs):
    content = body if isinstance(body, (str, bytes)) else json.dumps(body)
    return client.post(resource_type, content=content, headers={
        "X-Episode-Id": episode_id, "Content-Type": "application/fhir+json"}, **kwargs)


def test_bad_requests_get_4xx_and_an_operation_outcome(client, episode):
    eid = episode[0]
    good = vitals_observation("P1", "BP", "118/77 mmHg")
    assert outcome(post(client, eid, "Observation", '{"resourceType": "Observ'), 400)[0][
        "code"] == "structure"
    outcome(post(client, eid, "Observation", ""), 400)
    outcome(post(client, eid, "Observation", "[1, 2]"), 400)
    outcome(post(client, eid, "Observation", b"\xff\xfe{}"), 400)
    outcome(client.get("Foo?x=1", headers={"X-Episode-Id": eid}), 404)
    outcome(post(client, eid, "Foo", good), 404)
    outcome(post(client, eid, "Patient", {"resourceType": "Patient"}), 405)
    outcome(client.delete("Patient/P1", headers={"X-Episode-Id": eid}), 405)
    outcome(client.get("http://127.0.0.1:%d/elsewhere" % client.base_url.port), 404)
    outcome(post(client, eid, "ServiceRequest", good), 400)
    issues = outcome(post(client, eid, "Observation", {**good, "status": None}), 400)
    assert any("status" in i["diagnostics"] for i in issues)
    issues = outcome(post(client, eid, "Observation", {**good, "effectiveDateTime": "soon"}), 400)
    assert issues[0]["expression"] == ["effectiveDateTime"]
    outcome(post(client, eid, "Observation", {**good, "colour": "blue"}), 400)
    outcome(post(client, eid, "Observation", {**good, "subject": {"reference": "Patient/Q9"}}),
            400)
    outcome(post(client, eid, "Observation", {**good, "subject": {"display": "x"}}), 400)
    outcome(client.get("Patient", headers={"X-Episode-Id": "no-such-episode"}), 404)
    assert episode[1].created() == [], "no rejected request may change the record"


def test_huge_bodies_are_413_even_without_a_content_length(client, episode):
    huge = json.dumps({**vitals_observation("P1", "BP", "1/1 mmHg"),
                       "valueString": "x" * (MAX_BODY_BYTES + 10)})
    assert outcome(post(client, episode[0], "Observation", huge), 413)[0]["code"] == "too-costly"

    def chunks():
        for start in range(0, len(huge), 65536):
            yield huge[start:start + 65536].encode()

    streamed = client.post("Observation", content=chunks(), headers={"X-Episode-Id": episode[0]})
    outcome(streamed, 413)
    assert episode[1].created() == []


def test_a_valid_post_is_created_and_searchable(client, episode):
    resource = vitals_observation("P1", "BP", "118/77 mmHg")
    resource["note"] = {"text": "single note objects are R4 lists"}  # not on Observation
    outcome(post(client, episode[0], "Observation", resource), 400)
    response = post(client, episode[0], "Observation", vitals_observation("P1", "BP", "118/77 mmHg"))
    assert response.status_code == 201
    created = response.json()
    assert response.headers["Location"].endswith(f"Observation/{created['id']}/_history/1")
    found = search(client, episode[0], "Observation?patient=P1&code=BP&category=vital-signs")
    assert [e["resource"]["valueString"] for e in found["entry"]] == ["118/77 mmHg"]
    referral = {"resourceType": "ServiceRequest", "status": "active", "intent": "order",
                "subject": {"reference": "Patient/P2"}, "note": {"text": "as funcs_v1 shows"},
                "code": {"coding": [{"system": "http://snomed.info/sct", "code": "1"}]}}
    assert post(client, episode[0], "ServiceRequest", referral).status_code == 201
    assert [r["resourceType"] for r in episode[1].created()] == ["Observation", "ServiceRequest"]


def test_an_episode_record_replaces_its_patients_chart(client, server, base_path):
    chart = RecordBuilder("P1", start=800001)
    chart.lab("MG", 0.9, at("2023-11-13T09:30:00"))
    store = ResourceStore(base_path, chart.resources, hidden_patient="P1")
    episode_id = server.registry.add(store)
    try:
        assert values(search(client, episode_id, "Observation?patient=P1&code=MG")) == [0.9]
        assert values(search(client, episode_id, "Observation?code=MG")) == [2.4, 0.9]
        assert ids(search(client, episode_id, "Patient?identifier=P1")) == ["P1"]
    finally:
        server.registry.drop(episode_id)


def test_one_hundred_concurrent_episodes_posting_stay_isolated(client, server, base_path):
    stores = [ResourceStore(base_path) for _ in range(100)]
    episode_ids = [server.registry.add(store) for store in stores]

    def work(k):
        eid = episode_ids[k]
        for n in range(3):
            body = vitals_observation("P1", "BP", f"{100 + k}/{60 + n} mmHg")
            assert post(client, eid, "Observation", body).status_code == 201
        found = search(client, eid, "Observation?patient=P1&code=BP&_count=100")
        return sorted(e["resource"]["valueString"] for e in found["entry"])

    try:
        with ThreadPoolExecutor(100) as pool:
            seen = list(pool.map(work, range(100)))
        for k, strings in enumerate(seen):
            assert strings == [f"{100 + k}/{60 + n} mmHg" for n in range(3)]
            assert len(stores[k].created()) == 3
        fresh = ResourceStore(base_path)
        assert fresh.search("Observation", [("code", "BP")]).total == 0
        fresh.close()
    finally:
        for eid in episode_ids:
            server.registry.drop(eid)
