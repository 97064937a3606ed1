"""Loading the MedAgentBench files: v1/v2 task files, the tool list and the patients.

The directory is, in order: the `data_dir` argument, the ``MEDAGENTBENCH_DATA`` environment
variable, ``../shared/data/medagentbench`` beside the repository, the cache that
``harness data pull medagentbench`` fills (`sources.DATASET`, `tasks.datasets`). The project
never ships copies of these files.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

from harness.core import HarnessError

ENV_VAR = "MEDAGENTBENCH_DATA"
DEFAULT_DIR = Path(__file__).resolve().parents[3] / "shared" / "data" / "medagentbench"
TASK_FILES = {1: "test_data_v1.json", 2: "test_data_v2.json"}


class MedAgentBenchDataError(HarnessError):
    """The MedAgentBench data directory or one of its files is missing or malformed."""


def data_dir(path: str | os.PathLike | None = None) -> Path:
    """The data directory to use (see the module docstring); checked to exist."""
    from tasks.medagentbench.sources import DATASET

    chosen = Path(path) if path else DATASET.locate()
    if not (chosen / "patients.json").is_file():
        raise MedAgentBenchDataError(
            f"no MedAgentBench data in {chosen} (patients.json missing); pass data_dir or set "
            f"{ENV_VAR} to the folder holding test_data_v1.json, funcs_v1.json, patients.json")
    return chosen.resolve()


@functools.lru_cache(maxsize=16)
def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise MedAgentBenchDataError(f"missing MedAgentBench file {path}") from None
    except json.JSONDecodeError as exc:
        raise MedAgentBenchDataError(f"malformed JSON in {path}: {exc}") from None


def load_official_tasks(version: int, path: str | os.PathLike | None = None
                        ) -> list[dict[str, Any]]:
    """The task records of ``test_data_v{version}.json`` (copies; safe to mutate)."""
    if version not in TASK_FILES:
        raise MedAgentBenchDataError(f"there is no official task file for version {version}")
    records = _read_json(data_dir(path) / TASK_FILES[version])
    return [dict(record) for record in records]


def load_functions(path: str | os.PathLike | None = None) -> list[dict[str, Any]]:
    """The tool list of ``funcs_v1.json``."""
    return list(_read_json(data_dir(path) / "funcs_v1.json"))


def load_patients(path: str | os.PathLike | None = None) -> list[dict[str, Any]]:
    """The 500 FHIR ``Patient`` resources of ``patients.json``, in file order."""
    patients = _read_json(data_dir(path) / "patients.json")
    if not isinstance(patients, list) or not all(
            isinstance(p, dict) and p.get("resourceType") == "Patient" for p in patients):
        raise MedAgentBenchDataError("patients.json must be a list of Patient resources")
    return list(patients)


def patient_name(patient: dict[str, Any]) -> tuple[str, str]:
    """(given, family) of a Patient's first name entry."""
    name = (patient.get("name") or [{}])[0]
    return " ".join(name.get("given") or []), name.get("family", "")
