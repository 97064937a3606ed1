"""Core values shared by every layer: errors, seeds, name lookup and text hygiene.

Everything else in the project may import this module; it imports nothing from the project.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "HarnessError",
    "UnknownNameError",
    "ConfigError",
    "MissingDependencyError",
    "require",
    "read_toml",
    "escape_controls",
    "stable_hash",
    "derive_seed",
    "make_rng",
]


class HarnessError(Exception):
    """Root of every user-facing error; the CLI prints its message on one line and exits 2."""


class UnknownNameError(HarnessError, KeyError):
    """A name (suite, policy, config key, task id, ...) that is not registered."""

    def __init__(self, kind: str, name: str, choices: Iterable[str]):
        self.kind, self.name = kind, name
        self.choices = sorted(set(choices))
        by_folded = {choice.casefold(): choice for choice in self.choices}
        close = [by_folded[c] for c in difflib.get_close_matches(
            name.casefold(), list(by_folded), n=3, cutoff=0.5)]
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        shown = ", ".join(self.choices[:20]) + (", ..." if len(self.choices) > 20 else "")
        super().__init__(f"unknown {kind} {name!r}{hint} (known: {shown})")

    def __str__(self) -> str:  # KeyError would add quotes around the message
        return self.args[0]


class ConfigError(HarnessError, ValueError):
    """A configuration value that is malformed or conflicts with another."""


class MissingDependencyError(HarnessError, ImportError):
    """An optional dependency is not installed; the message carries the install command."""

    def __init__(self, package: str, extra: str, purpose: str = ""):
        what = f" for {purpose}" if purpose else ""
        super().__init__(
            f"{package} is required{what}; install it with: pip install 'agent-rl-harness[{extra}]'"
        )


def require(package: str, extra: str, purpose: str = "") -> Any:
    """Import the optional dependency `package`, or raise `MissingDependencyError` whose
    message names the extra that installs it (``pip install 'agent-rl-harness[EXTRA]'``)."""
    import importlib

    try:
        return importlib.import_module(package)
    except ImportError:
        raise MissingDependencyError(package, extra, purpose) from None


def read_toml(path: "str | os.PathLike[str]") -> dict:
    """The parsed TOML file at `path`; a missing or malformed file is a `ConfigError`."""
    path = Path(path)
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except IsADirectoryError:
        raise ConfigError(f"config file {path} is a directory") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {path} is not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"malformed TOML in {path}: {exc}") from None


def last_line(text: str | None) -> str:
    """The last non-empty line of `text`, stripped of surrounding blank lines ("" for none):
    the line of a traceback or a process's output that says what happened."""
    lines = (text or "").strip().splitlines()
    return lines[-1] if lines else ""


_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def escape_controls(text: str) -> str:
    """`text` with every control character except newline and tab (C0, DEL and C1: Unicode
    category Cc) written as a visible ``\\xNN`` escape: two lower-case hex digits of its code
    point, one form for all (``"a\\0b\\033[31m"`` becomes ``a\\x00b\\x1b[31m``, a carriage
    return ``\\x0d``, the C1 NEL ``\\x85``). Backslashes already in `text` are kept, so the
    form reads back exactly wherever the source had no ``\\x`` of its own. Sandboxed families
    apply it to command output before it becomes an observation (the model's input and the
    store's observation column); the raw text stays in the sandbox's `CommandResult`."""
    return _CONTROL.sub(lambda match: f"\\x{ord(match.group()):02x}", text)


def stable_hash(text: str) -> int:
    """A 64-bit hash of `text` that is the same in every process (unlike `hash`)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


def _entropy(parts: tuple[int | str, ...]) -> list[int]:
    return [p if isinstance(p, int) and p >= 0 else stable_hash(str(p)) for p in parts]


def derive_seed(*parts: int | str) -> int:
    """A 32-bit seed derived from `parts` (ints and strings) via `numpy.random.SeedSequence`.

    Example: ``derive_seed("frozenlake@1", task_id, eval_seed, sample)``.
    """
    return int(np.random.SeedSequence(_entropy(parts)).generate_state(1)[0])


def make_rng(*parts: int | str) -> np.random.Generator:
    """A fresh `numpy.random.Generator` derived from `parts`; never touches global state."""
    return np.random.default_rng(np.random.SeedSequence(_entropy(parts)))
