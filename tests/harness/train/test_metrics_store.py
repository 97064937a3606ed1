"""The store's training-metrics table: one row per (run, seed, update)."""

from __future__ import annotations

import math

from harness.store import Store
from harness.train.metrics_table import load_train_metrics, write_train_metrics


def test_write_and_load_train_metrics(tmp_path):
    with Store(tmp_path / "h.db") as store:
        assert load_train_metrics(store).empty
        write_train_metrics(store, "r", 0, 0, {"loss": 1.0, "success": 0.25})
        write_train_metrics(store, "r", 0, 1, {"loss": 0.5, "success": 0.5, "kl": 0.01})
        write_train_metrics(store, "r", 1, 0, {"loss": 2.0})
        write_train_metrics(store, "other", 0, 0, {"loss": 9.0})
        write_train_metrics(store, "r", 0, 1, {"loss": 0.4, "success": 0.5, "kl": 0.02})
        frame = load_train_metrics(store, run_id="r")
        assert list(zip(frame["train_seed"], frame["step"])) == [(0, 0), (0, 1), (1, 0)]
        assert frame["loss"].tolist() == [1.0, 0.4, 2.0]  # a repeated step replaces its row
        assert math.isnan(frame["kl"].iloc[0]) and frame["kl"].iloc[1] == 0.02
        assert len(load_train_metrics(store, run_id=["r", "other"])) == 4
        assert load_train_metrics(store, run_id="r", train_seed=1)["loss"].tolist() == [2.0]
