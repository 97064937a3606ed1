"""Regenerate docs/view-episode.png, the README's screenshot of `harness view`: a small demo
store (the oracle and the random policy on frozenlake@1, played by the real runner), the
viewer served on a free 127.0.0.1 port, one episode page shot in Debian's chromium.

    python docs/view_screenshot.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from urllib.parse import urlencode

from playwright.sync_api import expect, sync_playwright

from harness.config import RunConfig
from harness.policies import make_policy
from harness.runner import run
from harness.view.app import start_in_thread

OUT = Path(__file__).resolve().parent / "view-episode.png"
CHROMIUM = "/usr/bin/chromium"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "demo.db"
        config = RunConfig(policies=("oracle", "random"), suites=("frozenlake@1",), n_tasks=4,
                           eval_seeds=(0,), db=str(db))
        summary = run(config, policies=[make_policy("oracle"), make_policy("random")])
        episode = dict(run=summary.run_id, policy="random", suite="frozenlake@1",
                       task="4x4-0250", seed=0, sample=0)
        with start_in_thread(db) as base, sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                                 args=["--no-sandbox", "--disable-gpu"])
            try:
                page = browser.new_page(viewport={"width": 1100, "height": 820})
                page.goto(f"{base}episode?{urlencode(episode)}")
                expect(page.locator("#step-0")).to_be_visible()
                page.screenshot(path=str(OUT), full_page=True)
            finally:
                browser.close()
    print(f"wrote {OUT} ({OUT.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
