"""The store's training-metrics table: one row per (run, seed, update)."""

from __future__ import annotations

import math

from harness.store import Store


def test_write_and_load_train_metrics(tmp_path):
    with Store(tmp_path / "h.db") as store:
        assert store.load_train_metrics().empty
        store.write_train_metrics("r", 0, 0, {"loss": 1.0, "success": 0.25})
        store.write_train_metrics("r", 0, 1, {"loss": 0.5, "success": 0.5, "kl": 0.01})
        store.write_train_metrics("r", 1, 0, {"loss": 2.0})
        store.write_train_metrics("other", 0, 0, {"loss": 9.0})
        store.write_train_metrics("r", 0, 1, {"loss": 0.4, "success": 0.5, "kl": 0.02})
        frame = store.load_train_metrics(run_id="r")
        assert list(zip(frame["train_seed"], frame["step"])) == [(0, 0), (0, 1), (1, 0)]
        assert frame["loss"].tolist() == [1.0, 0.4, 2.0]  # a repeated step replaces its row
        assert math.isnan(frame["kl"].iloc[0]) and frame["kl"].iloc[1] == 0.02
        assert len(store.load_train_metrics(run_id=["r", "other"])) == 4
        assert store.load_train_metrics(run_id="r", train_seed=1)["loss"].tolist() == [2.0]
