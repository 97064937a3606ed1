"""The viewer in a real browser: Debian's chromium driven by Playwright, the server on a free
127.0.0.1 port in a thread. Every check waits for the state it asserts (Playwright's
`expect`), never for time. Screenshots are test artifacts: saved in the folder
``HARNESS_TEST_ARTIFACTS`` names (a CI job uploads it), else in the test's temporary folder."""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from urllib.parse import urlencode

import pytest
from playwright.sync_api import expect, sync_playwright

from harness.store import load_episodes
from harness.view.app import start_in_thread
from tests.harness.view.conftest import HOSTILE, HOSTILE_RUN

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run",
        "--disable-dev-shm-usage"]
WAIT_MS = 30_000
"""How long a state may take to appear on a busy machine (a bound, not a pause)."""
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def artifacts(tmp_path) -> Path:
    """The folder screenshots go to: ``$HARNESS_TEST_ARTIFACTS`` (created), else `tmp_path`."""
    folder = Path(os.environ.get("HARNESS_TEST_ARTIFACTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _fresh(folder: Path, *names: str) -> None:
    """Remove an earlier run's screenshots `names`, so the check after the test sees this
    run's."""
    for name in names:
        (folder / name).unlink(missing_ok=True)


def _assert_screenshots(folder: Path, *names: str) -> None:
    for name in names:
        shot = folder / name
        assert shot.is_file(), f"no screenshot {shot}"
        data = shot.read_bytes()
        assert data[:8] == PNG and len(data) > 10_000, (shot, len(data))


@pytest.mark.slow
def test_click_through_runs_episode_compare_in_chromium(view_db, artifacts):
    assert Path(CHROMIUM).exists(), "install Debian's chromium: apt-get install -y chromium"
    frame = load_episodes(view_db.path, run_id=view_db.run_id)
    failures = frame[~frame.success].sort_values(["policy", "suite", "task_id", "eval_seed"])
    dialogs, errors, requests = [], [], []
    _fresh(artifacts, "view-compare.png", "view-hostile.png", "view-drill-down.png")
    with start_in_thread(view_db.path) as base, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(WAIT_MS)
            page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.on("request", lambda request: requests.append(request.url))

            page.goto(base)  # runs
            run_row = page.locator("#runs tbody tr", has_text=view_db.run_id)
            expect(run_row).to_contain_text("ValueError: 4", timeout=WAIT_MS)
            run_row.locator("a.run-link").click()  # -> its episodes
            expect(page).to_have_url(re.compile(rf"/episodes\?run={view_db.run_id}$"),
                                     timeout=WAIT_MS)
            expect(page.locator("#count")).to_contain_text(f"{len(frame)} episodes",
                                                           timeout=WAIT_MS)

            page.select_option("#f-success", "0")  # filter to failures (submits itself)
            expect(page).to_have_url(re.compile(r"success=0"), timeout=WAIT_MS)
            expect(page.locator("#count")).to_contain_text(f"{len(failures)} episodes",
                                                           timeout=WAIT_MS)
            expect(page.locator("#f-success")).to_have_value("0", timeout=WAIT_MS)
            first = failures.iloc[0]
            page.locator("#episodes a.episode-link").first.click()  # -> one episode
            expect(page.locator("h1")).to_have_text(f"Episode {first.task_id}",
                                                    timeout=WAIT_MS)
            expect(page.locator("#facts")).to_contain_text(first.policy, timeout=WAIT_MS)
            if first.status == "error":
                expect(page.locator("#error")).to_contain_text("ValueError", timeout=WAIT_MS)
            expect(page.locator("#no-turns")).to_have_text("No model turns stored.",
                                                           timeout=WAIT_MS)  # scripted

            page.locator("a.compare-link", has_text="oracle").click()  # -> compare
            expect(page.locator("#side-by-side thead")).to_contain_text("oracle",
                                                                        timeout=WAIT_MS)
            expect(page.locator("#paired")).to_be_visible(timeout=WAIT_MS)
            expect(page.locator("#divergence")).to_contain_text("first divergence at step",
                                                                timeout=WAIT_MS)
            expect(page.locator("#side-by-side tr.diverge")).to_have_count(1, timeout=WAIT_MS)
            page.screenshot(path=str(artifacts / "view-compare.png"), full_page=True)

            page.goto(f"{base}episodes")  # search text
            page.fill("#f-q", "Available actions")
            page.press("#f-q", "Enter")
            expect(page).to_have_url(re.compile(r"q=Available\+actions"), timeout=WAIT_MS)
            sokoban = load_episodes(view_db.path, suite="sokoban@1")
            expect(page.locator("#count")).to_contain_text(f"{len(sokoban)} episodes",
                                                           timeout=WAIT_MS)

            page.get_by_role("link", name="Leaderboard").click()
            expect(page.locator("#leaderboard tbody tr")).not_to_have_count(0, timeout=WAIT_MS)
            # drill down: suite -> task type -> task -> its episodes
            page.locator("#leaderboard a.suite-link", has_text="frozenlake@1").first.click()
            expect(page.locator("#crumbs")).to_contain_text("frozenlake@1", timeout=WAIT_MS)
            page.locator("#by-task-type a.task-type-link", has_text="4x4").first.click()
            expect(page.locator("#crumbs")).to_contain_text("4x4", timeout=WAIT_MS)
            tasks = load_episodes(view_db.path, suite="frozenlake@1")
            tasks = tasks[tasks.task_type == "4x4"]
            expect(page.locator("#by-task tbody tr")).to_have_count(tasks.task_id.nunique(),
                                                                    timeout=WAIT_MS)
            task = sorted(tasks.task_id.unique())[0]
            page.locator("#by-task a.task-link", has_text=task).click()
            expect(page).to_have_url(re.compile(rf"task={task}"), timeout=WAIT_MS)
            expect(page.locator("#count")).to_contain_text(
                f"{int((tasks.task_id == task).sum())} episodes", timeout=WAIT_MS)
            page.screenshot(path=str(artifacts / "view-drill-down.png"), full_page=True)

            page.goto(f"{base}episode?" + urlencode(dict(
                run=HOSTILE_RUN, policy="<svg onload=alert(3)>", suite="frozenlake@1",
                task="4x4-0250", seed=0, sample=0)))
            shown = page.locator("#step-0 pre.text").first
            expect(shown).to_contain_text("<script>alert(1)</script>", timeout=WAIT_MS)
            expect(shown).to_contain_text("\\x1b[31mred", timeout=WAIT_MS)
            expect(shown.locator("span.ctl")).to_have_count(HOSTILE.count("\x1b"),
                                                            timeout=WAIT_MS)
            fold = page.locator("#step-1 details.fold").first
            fold.locator("summary").click()
            expect(fold).to_have_attribute("open", "", timeout=WAIT_MS)
            page.screenshot(path=str(artifacts / "view-hostile.png"), full_page=True)
        finally:
            browser.close()
    assert dialogs == [] and errors == [], (dialogs, errors)
    assert requests and all(url.startswith(base) for url in requests), requests
    _assert_screenshots(artifacts, "view-compare.png", "view-hostile.png",
                        "view-drill-down.png")


@pytest.mark.slow
def test_audits_page_links_to_the_episodes_behind_a_rate_in_chromium(audit_db, artifacts):
    """The navigation opens the audits page; it shows the CLI's summary and the ceiling, and
    a probe's episode count opens the list of exactly those episodes."""
    result = audit_db.result
    rate = result.rates.iloc[0]
    errors = []
    _fresh(artifacts, "view-audits.png")
    with start_in_thread(audit_db.path) as base, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(WAIT_MS)
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.goto(base)
            page.get_by_role("link", name="Audits").click()
            expect(page.locator("h1")).to_have_text("Audits", timeout=WAIT_MS)
            audit = page.locator(f'section.audit[id="{result.audit_id}"]')
            expect(audit.locator("h2")).to_have_text(f"{result.suite} ({result.split} split)",
                                                     timeout=WAIT_MS)
            expect(audit.locator("pre.summary")).to_contain_text(result.suite, timeout=WAIT_MS)
            expect(audit.locator("table.ceiling tbody tr")).to_have_count(
                len(result.ceiling), timeout=WAIT_MS)
            expect(audit.locator("table.rates tbody tr")).to_have_count(len(result.rates),
                                                                        timeout=WAIT_MS)
            page.screenshot(path=str(artifacts / "view-audits.png"), full_page=True)
            audit.locator("table.rates tbody tr").first.locator("a.audit-link").first.click()
            expect(page).to_have_url(re.compile(r"/episodes\?"), timeout=WAIT_MS)
            expect(page.locator("#count")).to_contain_text(f"{int(rate.n)} episodes",
                                                           timeout=WAIT_MS)
            expect(page.locator("#f-policy")).to_have_value(rate.policy, timeout=WAIT_MS)
        finally:
            browser.close()
    assert errors == [], errors
    _assert_screenshots(artifacts, "view-audits.png")


@pytest.mark.slow
def test_leaderboard_placeholder_polls_until_the_numbers_are_ready(view_db):
    """The page answers before its leaderboard is computed; its script polls the status and
    reloads once the numbers exist (the computation is held back until the placeholder is on
    screen, so both states are seen whatever the machine's speed)."""
    from harness.view.boards import compute_board

    release = threading.Event()

    def held(db, run, suite):
        assert release.wait(WAIT_MS / 1000), "the test never released the computation"
        return compute_board(db, run, suite)

    errors = []
    with start_in_thread(view_db.path, compute=held, leaderboard_wait_s=0) as base, \
            sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            page = browser.new_page()
            page.set_default_timeout(WAIT_MS)
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.goto(f"{base}leaderboard?run={view_db.run_id}")
            expect(page.locator("#computing")).to_be_visible(timeout=WAIT_MS)
            release.set()
            expect(page.locator("#leaderboard tbody tr")).not_to_have_count(0, timeout=WAIT_MS)
            expect(page.locator("#computing")).to_have_count(0, timeout=WAIT_MS)
        finally:
            release.set()
            browser.close()
    assert errors == []
