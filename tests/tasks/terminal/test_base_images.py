"""Base-image emulation: known images give their Debian release, workdir and commands, unknown
ones refuse; a python image built for real has its version's Python laid out as upstream's."""

from __future__ import annotations

import pytest

from tasks.terminal.base_images import base_image
from tasks.terminal.taskdir import BuildStep, Unsupported, translate_dockerfile


@pytest.mark.parametrize("name, suite, workdir, python", [
    ("ghcr.io/laude-institute/t-bench/python-3-13:20250620", "trixie", "/app", True),
    ("ghcr.io/laude-institute/t-bench/ubuntu-24-04:latest", "trixie", "/app", False),
    ("python:3.9-slim-bookworm", "bullseye", "", True),
    ("python:3.11", "bookworm", "", True),
    ("python:3.13-slim-bookworm", "trixie", "", True),
    ("debian:bullseye-slim", "bullseye", "", False),
    ("debian:12", "bookworm", "", False),
    ("debian", "trixie", "", False),
    ("ubuntu:22.04", "bookworm", "", False),
    ("ubuntu:latest", "trixie", "", False),
])
def test_known_images_have_their_release_workdir_and_python(name, suite, workdir, python):
    image = base_image(name)
    assert image is not None and image.workdir == workdir and image.suite == suite
    assert ("/usr/local/bin/python" in image.setup) is python


@pytest.mark.parametrize("name", ["localstack/localstack:4.3", "alpine:3.19",
                                  "ghcr.io/laude-institute/t-bench/python-3-13-evil"])
def test_unknown_images_are_none(name):
    assert base_image(name) is None


def test_a_t_bench_image_starts_in_app_before_the_task_steps(tmp_path):
    _, steps, workdir, notes = translate_dockerfile(
        "FROM --platform=linux/amd64 ghcr.io/laude-institute/t-bench/python-3-13:latest\n"
        "RUN touch here\n", tmp_path)
    assert steps[0] == BuildStep("from", ("t-bench/python-3-13", "trixie"))
    assert steps[1] == BuildStep("workdir", ("/app",)) and workdir == "/app"
    assert steps[2] == BuildStep("run", ("touch here",))
    assert "uv==0.8.15" in base_image("ghcr.io/laude-institute/t-bench/python-3-13").setup
    assert any("python-3-13 emulated" in note for note in notes)


def test_an_unknown_image_is_unsupported_with_its_name(tmp_path):
    with pytest.raises(Unsupported, match=r"base image localstack/localstack:4.3 is not"):
        translate_dockerfile("FROM localstack/localstack:4.3\n", tmp_path)
