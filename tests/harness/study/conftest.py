"""Study fixtures over `tests.harness.study.support`."""

from __future__ import annotations

import pytest

from harness.study.config import StudyConfig, load_study_config
from tests.harness.study.support import write_study


@pytest.fixture
def study_file(tmp_path):
    return write_study(tmp_path)


@pytest.fixture
def study(study_file) -> StudyConfig:
    return load_study_config(study_file)
