"""The leaderboard page in a real browser: Debian's chromium driven by Playwright (no
browser download: the system binary, headless, no sandbox, background networking off)."""

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect, sync_playwright

from harness.report.build import ReportOptions, build_report

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run",
        "--disable-dev-shm-usage"]
WAIT_MS = 30_000
"""How long a state may take to appear on a busy machine (a bound, not a pause)."""


@pytest.fixture
def page_file(small_db, tmp_path):
    summary = build_report(small_db, tmp_path / "report", command="harness report",
                           options=ReportOptions(figures=False))
    return summary.page


def _column(page, index):
    return page.eval_on_selector_all(
        "#leaderboard tbody tr:not([hidden])",
        f"rows => rows.map(r => r.cells[{index}].getAttribute('data-sort'))")


def _sorted_by(page, header, index, *, reverse):
    """Click `header` and wait until column `index` of the shown rows is sorted that way."""
    page.locator("#leaderboard thead th", has_text=header).click()
    expect(page.locator("#leaderboard thead th", has_text=header)).to_have_attribute(
        "aria-sort", "descending" if reverse else "ascending", timeout=WAIT_MS)
    values = [float(v) for v in _column(page, index)]
    assert values == sorted(values, reverse=reverse)
    return values


def test_page_in_chromium(page_file, tmp_path):
    """Every check waits for the state it asserts (Playwright's `expect`), never for time: a
    busy machine answers a click late, not wrongly."""
    assert Path(CHROMIUM).exists(), "install Debian's chromium: apt-get install -y chromium"
    html = page_file.read_text()
    assert "http://" not in html and "https://" not in html  # nothing to fetch
    requests = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(WAIT_MS)
            page.on("request", lambda request: requests.append(request.url))
            errors = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.goto(page_file.as_uri())
            shown = page.locator("#leaderboard tbody tr:not([hidden])")
            count = page.locator("#row-count")
            # 9 test rows (alpha: 5 policies, beta: 4) + 2 train rows (beta: strong, weak)
            expect(page.locator("#leaderboard tbody tr")).to_have_count(11, timeout=WAIT_MS)
            expect(count).to_have_text("11 rows", timeout=WAIT_MS)

            page.select_option("#split-filter", "train")
            expect(count).to_have_text("2 rows", timeout=WAIT_MS)
            expect(shown).to_have_count(2, timeout=WAIT_MS)
            page.select_option("#split-filter", "*")
            page.select_option("#suite-filter", "alpha@1")
            expect(count).to_have_text("5 rows", timeout=WAIT_MS)
            expect(shown).to_have_count(5, timeout=WAIT_MS)
            assert set(_column(page, 1)) == {"alpha@1"}

            # numbers sort high to low first, then low to high
            assert _sorted_by(page, "Success", 3, reverse=True)[0] == 1.0
            assert _sorted_by(page, "Success", 3, reverse=False)[0] == 0.0
            policy = page.locator("#leaderboard thead th", has_text="Policy")
            policy.click()
            expect(policy).to_have_attribute("aria-sort", "ascending", timeout=WAIT_MS)
            assert _column(page, 0) == sorted(_column(page, 0))

            shown.locator("a", has_text="close").first.click()
            expect(page.locator("#policy-close")).to_be_visible(timeout=WAIT_MS)
            page.locator("#policy-close ul.trajectories a").first.click()
            opened = page.locator("details.trajectory[open]")
            expect(opened).to_have_count(1, timeout=WAIT_MS)
            expect(opened.locator("pre").first).to_contain_text("<b>", timeout=WAIT_MS)
            expect(page.locator("#audits")).to_have_text(re.compile(r"^\s*Audit summary"),
                                                         timeout=WAIT_MS)

            shot = tmp_path / "page.png"
            page.goto(page_file.as_uri())
            expect(count).to_have_text("11 rows", timeout=WAIT_MS)
            page.screenshot(path=str(shot), full_page=True)
            assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
            assert not errors, errors
        finally:
            browser.close()
    assert requests and all(url.startswith("file://") for url in requests), requests
