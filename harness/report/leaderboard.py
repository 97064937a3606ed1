"""The leaderboard: success rate with a 95% interval per policy x suite."""

from __future__ import annotations

import pandas as pd

from harness.core import HarnessError
from harness.stats.estimators import proportion_interval

LEADERBOARD_COLUMNS = ["suite", "policy", "n", "errors", "success", "low", "high", "mean_score"]


def leaderboard_table(episodes: pd.DataFrame, *, confidence: float = 0.95) -> pd.DataFrame:
    """One row per (suite, policy): episodes, errors, success rate with its Wilson interval,
    and the mean native score. Errored episodes count as failures (and are counted apart).

    `episodes` is the frame of `harness.store.load_episodes`.
    """
    if episodes.empty:
        raise HarnessError("no episodes to rank; run `harness run` first or check the filters")
    rows = []
    for (suite, policy), group in episodes.groupby(["suite", "policy"], sort=True):
        n, wins = len(group), int(group["success"].sum())
        interval = proportion_interval(wins, n, method="wilson", confidence=confidence)
        rows.append({"suite": suite, "policy": policy, "n": n,
                     "errors": int((group["status"] != "ok").sum()),
                     "success": interval.estimate, "low": interval.low, "high": interval.high,
                     "mean_score": float(group["score"].mean())})
    table = pd.DataFrame(rows, columns=LEADERBOARD_COLUMNS)
    return table.sort_values(["suite", "success", "policy"], ascending=[True, False, True],
                             ignore_index=True)


def _percent(value: float) -> str:
    return f"{100 * value:.1f}"


def format_row(row: pd.Series) -> list[str]:
    """Cells of one leaderboard row as strings: suite, policy, success [low, high], ..."""
    return [row["suite"], row["policy"],
            f"{_percent(row['success'])} [{_percent(row['low'])}, {_percent(row['high'])}]",
            str(row["n"]), str(row["errors"]), f"{row['mean_score']:.3f}"]


HEADER = ["suite", "policy", "success % [95% CI]", "n", "errors", "mean score"]


def leaderboard_markdown(table: pd.DataFrame) -> str:
    """The leaderboard as a GitHub-flavoured Markdown table (Wilson 95% intervals)."""
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(format_row(row)) + " |" for _, row in table.iterrows()]
    return "\n".join(lines)
