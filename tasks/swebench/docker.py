"""The Docker backend: grading through the official harness, for users with a Docker daemon.

Predictions go to ``swebench.harness.run_evaluation.main`` (the documented entry point of
``python -m swebench.harness.run_evaluation``) exactly as a user would call it, with the
official per-instance images; the verdict is read from the report it writes
(``logs/run_evaluation/<run_id>/<model>/<instance_id>/report.json``). Nothing here runs
without a daemon: `docker_available` says why, and the `DockerBackend` constructor raises.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.core import HarnessError, MissingDependencyError
from tasks.swebench.data import Instance

__all__ = ["DockerBackend", "docker_available", "MODEL_NAME"]

MODEL_NAME = "agent-rl-harness"


def docker_available() -> str | None:
    """None when the official harness can run here, else the reason (one line)."""
    try:
        import docker
        import swebench.harness.run_evaluation  # noqa: F401
    except ImportError as exc:
        return f"{exc.name} is not installed (pip install 'agent-rl-harness[swebench]')"
    try:
        docker.from_env().ping()
    except Exception as exc:  # noqa: BLE001 - any daemon error means "not here"
        return f"no Docker daemon ({type(exc).__name__})"
    return None


class DockerBackend:
    """Grades predictions with the official harness (`dataset_name`: a Hugging Face name or a
    local .json/.jsonl/.parquet file of the instances; `split` as upstream)."""

    def __init__(self, dataset_name: str, split: str = "test", *, max_workers: int = 4,
                 timeout_s: int = 1800, run_id: str = "harness", cache_level: str = "env",
                 report_dir: str | Path | None = None):
        reason = docker_available()
        if reason is not None:
            if "not installed" in reason:
                raise MissingDependencyError("swebench", "swebench", "the Docker backend")
            raise HarnessError(f"the Docker backend needs a Docker daemon: {reason}")
        self.dataset_name, self.split = dataset_name, split
        self.max_workers, self.timeout_s = max_workers, timeout_s
        self.run_id, self.cache_level = run_id, cache_level
        self.report_dir = Path(report_dir or tempfile.mkdtemp(prefix="swebench-docker-"))

    def evaluate_many(self, predictions: Sequence[tuple[Instance, str]]) -> dict[str, Any]:
        """``{instance_id: report}`` (the official per-instance report dict) for each
        ``(instance, model_patch)``."""
        from swebench.harness import run_evaluation

        path = self.report_dir / f"{self.run_id}.predictions.jsonl"
        path.write_text("".join(json.dumps({"instance_id": i.instance_id,
                                            "model_name_or_path": MODEL_NAME,
                                            "model_patch": patch}) + "\n"
                                for i, patch in predictions))
        run_evaluation.main(
            dataset_name=self.dataset_name, split=self.split,
            instance_ids=[i.instance_id for i, _ in predictions], predictions_path=str(path),
            max_workers=self.max_workers, force_rebuild=False, cache_level=self.cache_level,
            clean=False, open_file_limit=4096, run_id=self.run_id, timeout=self.timeout_s,
            namespace="swebench", rewrite_reports=False, modal=False,
            report_dir=str(self.report_dir))
        from swebench.harness.constants import LOG_REPORT, RUN_EVALUATION_LOG_DIR

        reports = {}
        for instance, _ in predictions:
            report = (RUN_EVALUATION_LOG_DIR / self.run_id / MODEL_NAME / instance.instance_id
                      / LOG_REPORT)
            reports[instance.instance_id] = (json.loads(report.read_text())[instance.instance_id]
                                             if report.exists() else {"resolved": False,
                                                                      "error": "no report"})
        return reports

    def evaluate(self, instance: Instance, patch: str | None) -> dict[str, Any]:
        """The official report of one prediction (``resolved``, ``tests_status``, ...)."""
        return self.evaluate_many([(instance, patch or "")])[instance.instance_id]
