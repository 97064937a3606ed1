"""Base images a Terminal-Bench Dockerfile may start ``FROM``, emulated on Debian roots.

A known image names the Debian release whose userland and Python stand in for it (`suite`),
the Debian packages and the root commands that add what the image gives a task before its own
steps (built once per image into a shared layer), and its working directory. Python images
get the Python of their version where a Debian release carries it (3.9 bullseye, 3.11
bookworm, 3.13 trixie), laid out as the official image lays it out: ``python``/``python3``/
``pip`` in ``/usr/local/bin`` and pip, setuptools and wheel in
``/usr/local/lib/python3.X/site-packages`` (a virtual environment at ``/usr/local`` over
Debian's interpreter, `_PYTHON_IMAGE`), where no Debian Python library is seen (Debian's pip
and pytest purged: a task that breaks the image's pip breaks it here too); pytest is installed
from PyPI (not in the official image: offline verifiers need it, and tasks that install their
own pin replace it). An image that is not in `BASE_IMAGES` (e.g.
``localstack/localstack``, whose image *is* the environment) makes the task unsupported with
its name: it is never silently replaced.

| image | emulation |
|---|---|
| ``ghcr.io/laude-institute/t-bench/python-3-13`` | Debian 13 (trixie) with its Python 3.13 and its headers, as the python image lays it out; ``WORKDIR /app``; uv 0.8.15 (PyPI), tmux, asciinema, procps (as `python-3-13:20250620` lists them) |
| ``ghcr.io/laude-institute/t-bench/ubuntu-24-04`` | Debian 13 (trixie) userland for Ubuntu 24.04; ``WORKDIR /app``; uv 0.8.15 (PyPI), tmux, asciinema, procps |
| ``python:3.13*``, ``python:3.12*`` | trixie's Python 3.13 (3.12: 3.13, noted) and headers, as the python image lays it out |
| ``python:3.11*``, ``python:3.10*`` | bookworm's Python 3.11 (3.10: 3.11, noted) |
| ``python:3.9*``, ``python:3.8*`` | bullseye's Python 3.9 (3.8: 3.9, noted) |
| ``debian:bullseye``/``bookworm``/``trixie`` (or 11/12/13) | that release; other tags: trixie |
| ``ubuntu:22.04`` (jammy) | bookworm userland; ``ubuntu:24.04``/``latest``/other tags: trixie |
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["BASE_IMAGES", "BaseImage", "base_image"]

_PYTHON_IMAGE = (
    "apt-get purge -y -q python3-pytest python3-pip python3-setuptools python3-wheel"
    " && apt-get autoremove -y -q --purge"
    " && python3 -m venv /usr/local"
    " && /usr/local/bin/python3 -m pip install -q --upgrade pip setuptools wheel"
    " && /usr/local/bin/python3 -m pip install -q pytest")
"""The official python image's interpreter on Debian's Python: a virtual environment at
``/usr/local`` (``/usr/local/bin/python``, ``python3``, ``python3.X``, ``pip`` first on PATH,
packages in ``/usr/local/lib/python3.X/site-packages``) with pip, setuptools and wheel from
PyPI, which sees no Debian Python library. In the official image Debian's Python, when a task
installs it (``apt-get install python3-pip``), is a second interpreter at ``/usr/bin/python3``
whose libraries the image's pip never meets; so it is here, and a Debian library that has no
RECORD never stops pip from upgrading a package."""
_UV = "python3 -m pip install -q uv==0.8.15"
"""uv as the t-bench images carry it (from PyPI, at build time through the registries egress):
solutions that fetch uv's installer from astral.sh, outside the registries, find it on PATH."""
_T_BENCH_PACKAGES = ("asciinema", "procps", "tmux")
_T_BENCH_PYTHON_PACKAGES = ("procps", "tmux")
_T_BENCH_PYTHON_TOOLS = "/usr/local/bin/python3 -m pip install -q asciinema==2.4.0 uv==0.8.15"
"""asciinema (Debian 13's version) and uv into the python image's interpreter (from PyPI):
Debian's asciinema would pull Debian's Python libraries."""
_PYTHON_PACKAGES = ("python3-dev",)
"""The python image's headers (``Python.h``): its tasks build C extensions against them."""


@dataclass(frozen=True)
class BaseImage:
    """What a base image gives a task: the Debian release standing in for it (`suite`), the
    Debian `packages` and root `setup` commands of its shared layer, its `workdir` ("" for
    ``/``) and the `note` stored with the task."""

    label: str
    pattern: str
    suite: str
    workdir: str
    packages: tuple[str, ...]
    setup: str
    note: str


def _python(version: str, suite: str, python: str) -> BaseImage:
    same = version == python
    return BaseImage(
        f"python:{version}", rf"(docker\.io/)?(library/)?python:{re.escape(version)}"
        r"(\.\d+)?(-slim)?(-bookworm|-bullseye|-trixie)?", suite, "", _PYTHON_PACKAGES,
        _PYTHON_IMAGE,
        f"python:{version} emulated by Debian {suite}'s Python {python}"
        + ("" if same else f" (not {version})"))


BASE_IMAGES = (
    BaseImage("t-bench/python-3-13", r"ghcr\.io/laude-institute/t-bench/python-3-13(:.*)?",
              "trixie", "/app", _T_BENCH_PYTHON_PACKAGES + _PYTHON_PACKAGES,
              f"{_PYTHON_IMAGE} && {_T_BENCH_PYTHON_TOOLS}",
              "t-bench python-3-13 emulated: Debian 13's Python 3.13 laid out as the python "
              "image, WORKDIR /app, uv 0.8.15, tmux, asciinema, procps"),
    BaseImage("t-bench/ubuntu-24-04", r"ghcr\.io/laude-institute/t-bench/ubuntu-24-04(:.*)?",
              "trixie", "/app", _T_BENCH_PACKAGES, _UV,
              "t-bench ubuntu-24-04 emulated: Debian 13 userland, WORKDIR /app, uv 0.8.15, tmux, "
              "asciinema, procps"),
    _python("3.13", "trixie", "3.13"), _python("3.12", "trixie", "3.13"),
    _python("3.11", "bookworm", "3.11"), _python("3.10", "bookworm", "3.11"),
    _python("3.9", "bullseye", "3.9"), _python("3.8", "bullseye", "3.9"),
    _python("3", "trixie", "3.13"),
    BaseImage("debian:bullseye", r"(docker\.io/)?(library/)?debian:(bullseye|11)(\S*)?",
              "bullseye", "", (), "", "debian:bullseye: Debian 11"),
    BaseImage("debian:bookworm", r"(docker\.io/)?(library/)?debian:(bookworm|12)(\S*)?",
              "bookworm", "", (), "", "debian:bookworm: Debian 12"),
    BaseImage("debian:*", r"(docker\.io/)?(library/)?debian(:.*)?", "trixie", "", (), "",
              "debian image emulated by Debian 13 (trixie)"),
    BaseImage("ubuntu:22.04", r"(docker\.io/)?(library/)?ubuntu:(22\.04|jammy)(\S*)?",
              "bookworm", "", (), "", "ubuntu:22.04 emulated by Debian 12 (bookworm)"),
    BaseImage("ubuntu:*", r"(docker\.io/)?(library/)?ubuntu(:.*)?", "trixie", "", (), "",
              "ubuntu image emulated by Debian 13 (trixie)"),
)
"""Known base images, first match wins (the patterns are matched against the whole name)."""


def base_image(name: str) -> BaseImage | None:
    """The emulation of image `name` (a ``FROM`` argument), or None when it is unknown."""
    for image in BASE_IMAGES:
        if re.fullmatch(image.pattern, name):
            return image
    return None
