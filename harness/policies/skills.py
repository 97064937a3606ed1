"""The skills store of the ``skills`` harness layer: short procedures, retrieved per task.

A store is a TOML file of ``[[skills]]`` tables (a trusted local file, like a run config)::

    [[skills]]
    name = "frozenlake-route"
    suites = ["frozenlake"]       # suite families or ids; empty or absent: any suite
    task_types = []               # empty or absent: any task type
    keywords = ["hole"]           # words of the first observation that make it relevant
    text = "Plan the whole route before moving; never step onto a hole."

Retrieval (`SkillStore.retrieve`) is deterministic: a skill is a candidate when its suites
and task types (where listed) match the episode; a candidate with keywords needs at least
one of them in the query text (whole words, case-insensitive); candidates rank by keyword
hits, then by their order in the file, and the first `k` are injected. Without a path the
bundled store (`BUNDLED_STORE`, a few procedures for the built-in games) is used. A store's
path and the SHA-256 of its bytes go into the policy's provenance, so a run says which
procedures it had.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from harness.core import ConfigError

__all__ = ["BUNDLED_STORE", "Skill", "SkillStore", "load_skill_store"]

BUNDLED_STORE = Path(__file__).with_name("skills.toml")
"""The store used when a policy spec names none (``skills_store=``)."""


@dataclass(frozen=True)
class Skill:
    """One procedure: `text` is what the layer injects (keep it to a few sentences)."""

    name: str
    text: str
    suites: tuple[str, ...] = ()
    task_types: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()

    def applies_to(self, suite_id: str, task_type: str) -> bool:
        family = suite_id.partition("@")[0]
        suite_ok = not self.suites or suite_id in self.suites or family in self.suites
        return suite_ok and (not self.task_types or task_type in self.task_types)


@dataclass(frozen=True)
class SkillStore:
    """The procedures of one store file; `digest` is the SHA-256 of the file's bytes."""

    path: str
    digest: str
    skills: tuple[Skill, ...]

    def retrieve(self, suite_id: str, task_type: str, text: str, k: int = 1
                 ) -> tuple[Skill, ...]:
        """The (at most) `k` most relevant skills for a task of `suite_id` and `task_type`
        whose first observation is `text` (rules in the module docstring)."""
        folded = text.casefold()
        ranked = []
        for order, skill in enumerate(self.skills):
            if not skill.applies_to(suite_id, task_type):
                continue
            hits = sum(_mentions(folded, word) for word in skill.keywords)
            if skill.keywords and not hits:
                continue
            ranked.append((-hits, order, skill))
        return tuple(skill for _, _, skill in sorted(ranked, key=lambda r: r[:2])[:k])

    def describe(self) -> dict[str, object]:
        return {"store": self.path, "sha256": self.digest, "skills": len(self.skills)}


def _mentions(folded: str, keyword: str) -> bool:
    """Whether `keyword` occurs in `folded` (case-folded text) as whole words."""
    word = re.escape(" ".join(keyword.casefold().split()))
    return re.search(rf"(?<!\w){word}(?!\w)", folded) is not None


def _strings(entry: dict, key: str, where: str) -> tuple[str, ...]:
    value = entry.get(key, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: {key} must be a list of strings")
    return tuple(value)


def _skill(entry: object, where: str) -> Skill:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: each [[skills]] entry must be a table")
    unknown = set(entry) - {"name", "text", "suites", "task_types", "keywords"}
    if unknown:
        raise ConfigError(f"{where}: unknown keys {sorted(unknown)} (a skill has name, text, "
                          "suites, task_types, keywords)")
    name, text = entry.get("name"), entry.get("text")
    if not isinstance(name, str) or not name or not isinstance(text, str) or not text.strip():
        raise ConfigError(f"{where}: every skill needs a name and a non-empty text")
    return Skill(name, " ".join(text.split()), _strings(entry, "suites", where),
                 _strings(entry, "task_types", where), _strings(entry, "keywords", where))


@functools.lru_cache(maxsize=16)
def _load(path: str, mtime_ns: int, size: int) -> SkillStore:
    data = Path(path).read_bytes()
    try:
        parsed = tomllib.loads(data.decode())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"skills store {path}: {error}") from None
    entries = parsed.get("skills", [])
    if not isinstance(entries, list):
        raise ConfigError(f"skills store {path}: 'skills' must be an array of tables "
                          "([[skills]])")
    skills = tuple(_skill(entry, f"skills store {path}, skill {i + 1}")
                   for i, entry in enumerate(entries))
    names = [skill.name for skill in skills]
    if len(set(names)) != len(names):
        raise ConfigError(f"skills store {path}: skill names repeat")
    return SkillStore(path, hashlib.sha256(data).hexdigest(), skills)


def load_skill_store(path: str | os.PathLike[str] | None = None) -> SkillStore:
    """The store at `path` (the bundled one when None), read once per file version."""
    resolved = Path(path) if path is not None else BUNDLED_STORE
    try:
        stat = resolved.stat()
    except OSError:
        raise ConfigError(f"skills store {resolved} does not exist (skills_store= names a "
                          "TOML file of [[skills]] tables)") from None
    return _load(str(resolved), stat.st_mtime_ns, stat.st_size)
