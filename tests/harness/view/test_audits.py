"""The audits page over a store holding a real `harness audit` of frozenlake@1: the CLI's
summary lines, the ceiling, every probe's rate and the learnability rows, each number linked
to the episodes behind it (followed here, and counted)."""

from __future__ import annotations

import html
import re

import pytest
from starlette.testclient import TestClient

from harness.audit.ceilings import ALL
from harness.audit.text import summary_lines
from harness.view.app import create_app

from tests.harness.view.conftest import table_cells


@pytest.fixture(scope="module")
def client(audit_db):
    with TestClient(create_app(audit_db.path)) as test_client:
        yield test_client


def _count(page: str) -> int:
    return int(re.search(r'id="count">(\d+) episodes', page).group(1))


def _links(page: str, table_id: str) -> list[list[tuple[str, str]]]:
    """(href, label) of every link of each body row of the table `table_id`."""
    body = re.search(rf'<table id="{re.escape(table_id)}"[^>]*>(.*?)</table>', page, re.S)
    rows = re.findall(r"<tr>(.*?)</tr>", body.group(1), re.S)[1:]
    return [[(html.unescape(h), html.unescape(t)) for h, t in
             re.findall(r'<a href="([^"]+)"[^>]*>([^<]*)</a>', row)] for row in rows]


def test_the_page_shows_what_the_cli_printed(client, audit_db):
    page = client.get("/audits").text
    result = audit_db.result
    summary = re.search(r'<pre class="text summary">(.*?)</pre>', page, re.S).group(1)
    assert html.unescape(summary) == "\n".join(summary_lines(result))
    ceiling = table_cells(page, f"ceiling-{result.audit_id}")[1:]
    assert [row[0] for row in ceiling] == list(result.ceiling["task_type"])
    assert [row[1] for row in ceiling] == list(result.ceiling["probe"])


def test_every_rate_links_to_the_episodes_behind_it(client, audit_db):
    result = audit_db.result
    page = client.get("/audits").text
    rows = _links(page, f"rates-{result.audit_id}")
    assert len(rows) == len(result.rates)
    for links, rate in zip(rows, result.rates.itertuples()):
        (episodes_href, n), (successes_href, wins) = links
        assert (int(n), int(wins)) == (rate.n, rate.successes)
        listed = client.get(episodes_href).text
        assert _count(listed) == rate.n
        assert _count(client.get(successes_href).text) == rate.successes
        shown = {row[2] for row in table_cells(listed, "episodes")[1:]}
        assert shown == {rate.policy}
        if rate.task_type != ALL:
            assert {row[4] for row in table_cells(listed, "episodes")[1:]} == {rate.task_type}


def test_learnability_links_to_the_base_policy_episodes(client, audit_db):
    result = audit_db.result
    page = client.get("/audits").text
    rows = _links(page, f"learnability-{result.audit_id}")
    k = result.config["k"]
    for links, learn in zip(rows, result.learnability.itertuples()):
        listed = client.get(links[0][0]).text
        assert _count(listed) == learn.n_groups * k  # k samples per (task, eval seed) group
    cells = table_cells(page, f"learnability-{result.audit_id}")[1:]
    assert [row[2] for row in cells] == [f"{100 * z:.1f}" for z in
                                         result.learnability["zero_gradient"]]


def test_a_store_without_audits_says_how_to_make_one(view_db):
    with TestClient(create_app(view_db.path)) as client:
        page = client.get("/audits")
    assert page.status_code == 200 and "No audit stored" in page.text
