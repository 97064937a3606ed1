"""Base images a Terminal-Bench Dockerfile may start ``FROM``, emulated on the Debian rootfs.

Every task runs on the project's Debian bookworm rootfs (Python 3.11, pip, a C toolchain);
a known base image adds what the image gives a task before its own steps: its working
directory and the ``python``/``pip`` commands. An image that is not in `BASE_IMAGES` (e.g.
``localstack/localstack``, whose image *is* the environment) makes the task unsupported with
its name: it is never silently replaced.

| image | emulation |
|---|---|
| ``ghcr.io/laude-institute/t-bench/python-3-13`` | ``WORKDIR /app``; ``python``, ``pip`` on PATH (Python 3.11, not 3.13); uv 0.8.15 from PyPI; tmux and asciinema not installed (the harness runs one command per turn) |
| ``ghcr.io/laude-institute/t-bench/ubuntu-24-04`` | ``WORKDIR /app``; Debian bookworm userland instead of Ubuntu 24.04; uv 0.8.15 from PyPI (upstream's solutions fetch it from astral.sh) |
| ``python:3.X[-slim][-bookworm]`` | ``python``, ``pip`` on PATH (Python 3.11 whatever X) |
| ``debian:*``, ``ubuntu:*`` | Debian bookworm userland |
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["BASE_IMAGES", "BaseImage", "base_image"]

_PYTHON_COMMANDS = ("ln -sf /usr/bin/python3 /usr/local/bin/python && "
                    "ln -sf /usr/bin/pip3 /usr/local/bin/pip")
_UV = "python3 -m pip install --break-system-packages -q uv==0.8.15"
"""uv as the t-bench images carry it (from PyPI, at build time through the registries egress):
solutions that fetch uv's installer from astral.sh, outside the registries, find it on PATH."""


@dataclass(frozen=True)
class BaseImage:
    """What a base image gives a task: `workdir` ("" for ``/``), `setup` (a root shell command
    run before the task's steps, "" for none) and the `note` stored with the task."""

    label: str
    pattern: str
    workdir: str
    setup: str
    note: str


BASE_IMAGES = (
    BaseImage("t-bench/python-3-13", r"ghcr\.io/laude-institute/t-bench/python-3-13(:.*)?", "/app", f"{_PYTHON_COMMANDS} && {_UV}",
              "t-bench python-3-13 emulated: WORKDIR /app, python/pip of Debian's Python 3.11, "
              "uv 0.8.15"),
    BaseImage("t-bench/ubuntu-24-04", r"ghcr\.io/laude-institute/t-bench/ubuntu-24-04(:.*)?", "/app", _UV,
              "t-bench ubuntu-24-04 emulated: WORKDIR /app on Debian bookworm, uv 0.8.15"),
    BaseImage("python:3.*", r"(docker\.io/)?(library/)?python:3(\.\d+)?(-slim)?(-bookworm|-bullseye)?", "",
              _PYTHON_COMMANDS, "python image emulated by Debian's Python 3.11 as python/pip"),
    BaseImage("debian:*, ubuntu:*", r"(docker\.io/)?(library/)?(debian|ubuntu)(:.*)?", "", "",
              "debian/ubuntu image emulated by Debian bookworm"),
)
"""Known base images, first match wins (the patterns are matched against the whole name)."""


def base_image(name: str) -> BaseImage | None:
    """The emulation of image `name` (a ``FROM`` argument), or None when it is unknown."""
    for image in BASE_IMAGES:
        if re.fullmatch(image.pattern, name):
            return image
    return None
