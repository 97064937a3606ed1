"""The leaderboard page in a real browser: Debian's chromium driven by Playwright (no
browser download: the system binary, headless, no sandbox, background networking off)."""

from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from harness.report.build import ReportOptions, build_report

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run",
        "--disable-dev-shm-usage"]


@pytest.fixture
def page_file(small_db, tmp_path):
    summary = build_report(small_db, tmp_path / "report", command="harness report",
                           options=ReportOptions(figures=False))
    return summary.page


def _column(page, index):
    return page.eval_on_selector_all(
        "#leaderboard tbody tr:not([hidden])",
        f"rows => rows.map(r => r.cells[{index}].getAttribute('data-sort'))")


def test_page_in_chromium(page_file, tmp_path):
    assert Path(CHROMIUM).exists(), "install Debian's chromium: apt-get install -y chromium"
    html = page_file.read_text()
    assert "http://" not in html and "https://" not in html  # nothing to fetch
    requests = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("request", lambda request: requests.append(request.url))
            errors = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.goto(page_file.as_uri())
            rows = page.locator("#leaderboard tbody tr")
            # 9 test rows (alpha: 5 policies, beta: 4) + 2 train rows (beta: strong, weak)
            assert rows.count() == 11
            assert page.locator("#row-count").inner_text() == "11 rows"

            page.select_option("#split-filter", "train")
            assert page.locator("#row-count").inner_text() == "2 rows"
            page.select_option("#split-filter", "*")
            page.select_option("#suite-filter", "alpha@1")
            assert page.locator("#row-count").inner_text() == "5 rows"
            assert set(_column(page, 1)) == {"alpha@1"}

            success = page.locator("#leaderboard thead th", has_text="Success")
            success.click()  # numbers sort high to low first
            values = [float(v) for v in _column(page, 3)]
            assert values == sorted(values, reverse=True) and values[0] == 1.0
            assert success.get_attribute("aria-sort") == "descending"
            success.click()
            values = [float(v) for v in _column(page, 3)]
            assert values == sorted(values) and values[0] == 0.0
            page.locator("#leaderboard thead th", has_text="Policy").click()
            assert _column(page, 0) == sorted(_column(page, 0))

            page.locator("#leaderboard tbody tr:not([hidden]) a", has_text="close").first.click()
            assert page.locator("#policy-close").is_visible()
            link = page.locator("#policy-close ul.trajectories a").first
            link.click()
            opened = page.locator("details.trajectory[open]")
            assert opened.count() == 1
            assert "<b>" in opened.locator("pre").first.inner_text()  # escaped, shown as text
            assert page.locator("#audits").inner_text().startswith("Audit summary")

            shot = tmp_path / "page.png"
            page.locator("#leaderboard thead th", has_text="Success").click()
            page.goto(page_file.as_uri())
            page.screenshot(path=str(shot), full_page=True)
            assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
            assert not errors, errors
        finally:
            browser.close()
    assert requests and all(url.startswith("file://") for url in requests), requests
