"""The leaderboard page at a laptop's width (1366 x 768) in Debian's chromium, every
``<details>`` opened: no text runs past the right edge or makes the page scroll sideways, and
no two runs of text overlap (from the browser's own layout: the client rectangles of every
text node). Checked for the small hand-made store and for 50 long-named policies on three
long-named suites with a real audit (its tables are the widest on the page)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import sync_playwright

from harness.audit import AuditConfig, audit_suite
from harness.records import EpisodeKey, EpisodeRecord, StepRecord
from harness.report.build import ReportOptions, build_report
from harness.store import Store

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run",
        "--disable-dev-shm-usage"]
LAPTOP = {"width": 1366, "height": 768}

TEXT_RECTS = """() => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const rects = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  let node, index = 0;
  while ((node = walker.nextNode())) {
    index += 1;
    if (!node.textContent.trim()) { continue; }
    const range = document.createRange();
    range.selectNodeContents(node);
    for (const r of range.getClientRects()) {
      if (r.width > 0.5 && r.height > 0.5) {
        rects.push([index, r.left + scrollX, r.top + scrollY, r.right + scrollX,
                    r.bottom + scrollY, node.textContent.trim().slice(0, 40)]);
      }
    }
  }
  const root = document.documentElement;
  return {width: root.clientWidth, scrollWidth: root.scrollWidth, rects: rects};
}"""


def _layout_problems(page) -> list[str]:
    found = page.evaluate(TEXT_RECTS)
    width, rects = found["width"], found["rects"]
    problems = []
    if found["scrollWidth"] > width:
        problems.append(f"page scrolls sideways: {found['scrollWidth']} > {width} px")
    problems += [f"{r[5]!r} runs past the edge ({r[1]:.0f}..{r[3]:.0f} of {width})"
                 for r in rects if r[1] < -1 or r[3] > width + 1]
    boxes = np.array([r[:5] for r in rects], dtype=float)
    order = np.argsort(boxes[:, 2])
    boxes = boxes[order]
    for i in range(len(boxes)):  # sweep down the page: compare with rects starting above i's end
        j = i + 1 + np.searchsorted(boxes[i + 1:, 2], boxes[i, 4] - 1)
        near = boxes[i + 1:j]
        hit = ((near[:, 0] != boxes[i, 0])
               & (np.minimum(near[:, 3], boxes[i, 3]) - np.maximum(near[:, 1], boxes[i, 1]) > 1)
               & (np.minimum(near[:, 4], boxes[i, 4]) - np.maximum(near[:, 2], boxes[i, 2]) > 1))
        for k in np.nonzero(hit)[0]:
            problems.append(f"{rects[order[i]][5]!r} overlaps {rects[order[i + 1 + k]][5]!r}")
    return problems


def _long_store(path: Path) -> None:
    """50 checkpoints with long names on three suites with long names, 4 tasks each."""
    suites = ("frozenlake-slippery-with-a-rather-long-name@1", "alfworld-pick-and-place@1",
              "webshop-instructions-from-the-human-written-set@1")
    batch = []
    for p in range(50):
        policy = f"qwen2.5-7b-instruct-grpo-lr2e-4-minibatch-4-seed{p}-checkpoint-step-{100 * p}"
        for suite in suites:
            for t in range(4):
                won = (p + t) % 3 == 0
                key = EpisodeKey(policy, suite, f"task-with-a-long-identifier-{t}", 0, 0)
                steps = [StepRecord(0, "a long observation " * 40 + "x" * 300, "look around",
                                    "look around", float(won), True, False,
                                    {"won": won, "score": float(won), "invalid": False})]
                batch.append(("long-run", EpisodeRecord(
                    key=key, task_type=f"type-{t % 2}-with-a-long-task-type-name", split="test",
                    status="ok", success=won, score=float(won), total_reward=float(won),
                    n_steps=1, n_invalid=0, terminated=True, truncated=False), steps))
    with Store(path) as store:
        store.begin_run("long-run", {"x": "y" * 400}, {"code_version": "test", "packages": {}})
        store.write_episodes(batch)


@pytest.fixture(scope="module")
def large_page(tmp_path_factory):
    root = tmp_path_factory.mktemp("pages")
    db = root / "large.db"
    _long_store(db)
    audit_suite(AuditConfig("frozenlake@1", n_tasks=3, eval_seeds=1, k=2, regrades=1,
                            db=str(db)))
    return build_report(db, root / "large", command="harness report",
                        options=ReportOptions(figures=False)).page


def _check(page_file: Path, shot: Path) -> list[str]:
    assert Path(CHROMIUM).exists(), "install Debian's chromium: apt-get install -y chromium"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            page = browser.new_page(viewport=LAPTOP)
            page.goto(page_file.as_uri())
            problems = _layout_problems(page)
            page.screenshot(path=str(shot))
            assert shot.stat().st_size > 10_000
        finally:
            browser.close()
    return problems


def test_small_page_fits_a_laptop_screen(small_db, tmp_path):
    page = build_report(small_db, tmp_path / "small", command="harness report",
                        options=ReportOptions(figures=False)).page
    problems = _check(page, tmp_path / "small.png")
    assert problems == [], problems[:10]


def test_large_page_fits_a_laptop_screen(large_page, tmp_path):
    problems = _check(large_page, tmp_path / "large.png")
    assert problems == [], problems[:10]


def test_the_check_catches_overflow_and_overlap(tmp_path):
    """A page with a 3000 px wide unbreakable word and two absolutely placed labels on top
    of each other fails the check."""
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><html><body><p>" + "x" * 400 + "</p><div style='position:"
                   "relative'><span style='position:absolute;left:0'>first label</span><span "
                   "style='position:absolute;left:10px'>second label</span></div></body></html>")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            page = browser.new_page(viewport=LAPTOP)
            page.goto(bad.as_uri())
            problems = _layout_problems(page)
        finally:
            browser.close()
    assert any("scrolls sideways" in p for p in problems)
    assert any("runs past the edge" in p for p in problems)
    assert any("'first label' overlaps 'second label'" in p
               or "'second label' overlaps 'first label'" in p for p in problems)
