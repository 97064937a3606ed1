"""A policy with harness layers: ``SPEC?layers=NAME,...`` for any policy spec.

The harness options (`LayerOptions`: ``layers``, ``stream`` and the layers' own) follow the
spec's ``?`` like a model's options and may mix with them
(``hf:models/tiny?temperature=0&layers=repair,contract``); scripted policies take them too
(``oracle?layers=repair``). `make_policy` builds the policy of the spec without them and wraps
it in a `LayeredPolicy` whose id is the whole spec (`layered_spec` writes the canonical one:
layers in running order). The wrapper keeps the wrapped policy's sampling stream (its RNG
identity) whatever its layers, unless ``stream`` names another, and stores its layers'
specs and options in the policy's provenance, so every run records them.

Every turn the wrapper lets the compaction layer shape the context (a summary in place of
the earlier steps once it passes a token budget), asks each guide layer for guidance, shows
the policy its context with that guidance added (instructions, notes), lets the review
layers check the decision, and returns it with the per-layer log (`Decision.layers`):
``fired``, ``tokens`` (the prompt tokens the guidance added, counted by the model's
tokenizer when its backend counts tokens, else estimated at `CHARS_PER_TOKEN` characters per
token; for a review, the extra turns' prompt and completion tokens) and, when it fired,
``detail``.
"""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any
from urllib.parse import quote, unquote_plus

from harness.core import ConfigError, UnknownNameError
from harness.policies.base import Decision, EpisodeContext, Policy
from harness.policies.layers import (CHARS_PER_TOKEN, Layer, LayerOptions, check_layer_names,
                                     make_layer)

__all__ = ["CHARS_PER_TOKEN", "HARNESS_OPTIONS", "LayeredPolicy", "LayeredSpec",
           "split_layered_spec", "layered_spec"]

MAX_COUNTED_TEXTS = 4096
"""Distinct layer texts whose token counts a policy remembers."""
HARNESS_OPTIONS = tuple(f.name for f in fields(LayerOptions))
_HINTS = typing.get_type_hints(LayerOptions)


@dataclass(frozen=True)
class LayeredSpec:
    """A spec split into the wrapped policy's spec and the harness options it carried."""

    spec: str
    inner: str
    options: LayerOptions
    given: frozenset[str]


def _convert(name: str, value: str) -> Any:
    hint = _HINTS[name]
    if name == "layers":
        return check_layer_names([v for v in value.replace(",", " ").split() if v])
    kinds = [a for a in typing.get_args(hint) if a is not type(None)] \
        if isinstance(hint, types.UnionType) else [hint]
    if type(None) in typing.get_args(hint) and value.lower() in ("", "none"):
        return None
    try:
        return kinds[0](value)
    except ValueError:
        raise ConfigError(f"option {name}={value!r} is not a valid "
                          f"{kinds[0].__name__}") from None


def split_layered_spec(spec: str, backend_options: Mapping[str, Sequence[str]]
                       ) -> LayeredSpec | None:
    """Split the harness options off `spec`; None when it has none. `backend_options`: the
    options each model backend takes (a scripted policy takes none). A key that neither the
    harness nor the backend takes is an `UnknownNameError` with "did you mean"."""
    if "?" not in spec:
        return None
    head, _, query = spec.rpartition("?")
    kept, values = [], {}
    for piece in query.split("&") if query else []:
        key, _, value = piece.partition("=")
        key = unquote_plus(key)
        if key in HARNESS_OPTIONS:
            if key in values:
                raise ConfigError(f"option {key} given twice in policy spec {spec!r}")
            values[key] = _convert(key, unquote_plus(value))
        else:
            kept.append((key, piece))
    backend = head.partition(":")[0]
    allowed = tuple(backend_options.get(backend, ()))
    if not values and allowed:
        return None  # a model spec without harness options: its backend reads it
    for key, _ in kept:
        if key not in allowed:
            what = f"option of the {backend} backend" if allowed else f"option of {backend}"
            raise UnknownNameError(what, key, allowed + HARNESS_OPTIONS)
    if not values:
        return None
    options = LayerOptions(**values)
    options.check()
    inner = head + ("?" + "&".join(piece for _, piece in kept) if kept else "")
    return LayeredSpec(spec, inner, options, frozenset(values))


def layered_spec(inner: str, layers: Sequence[str], **options: Any) -> str:
    """The canonical spec of policy `inner` with `layers` (running order) and the harness
    `options` given (values as they would be written; None leaves one out)."""
    pairs = [("layers", ",".join(check_layer_names(layers)))] if layers else []
    pairs += [(k, v) for k, v in options.items() if v is not None]
    if not pairs:
        return inner
    query = "&".join(f"{k}={quote(str(v), safe=',/:@')}" for k, v in pairs)
    return f"{inner}{'&' if '?' in inner else '?'}{query}"


class LayeredPolicy:
    """A policy and its harness layers (module docstring)."""

    def __init__(self, spec: str, inner: Policy, options: LayerOptions):
        self.id = spec
        self.inner = inner
        self.options = options
        self.layers: tuple[Layer, ...] = tuple(make_layer(name, options, inner)
                                               for name in options.layers)
        base_key = getattr(inner, "rng_key", None) or inner.id
        self.rng_key = f"{base_key}#stream{options.stream}" if options.stream else base_key
        """The episode RNG's identity: the wrapped policy's, whatever the layers."""
        self._counted: dict[str, int] = {}

    @property
    def train_seed(self) -> int | None:
        return self.inner.train_seed

    @property
    def provenance(self) -> Mapping[str, Any]:
        return {**self.inner.provenance, "spec": self.id,
                "layers": [layer.spec.to_dict() for layer in self.layers],
                "stream": self.options.stream}

    @property
    def scaffold(self) -> Any:
        """The wrapped policy's scaffold (None for a scripted policy)."""
        return getattr(self.inner, "scaffold", None)

    def count_tokens(self, text: str) -> int:
        """Prompt tokens `text` adds: the model's count when its backend counts tokens
        (remembered per text: a layer's text repeats from turn to turn)."""
        known = self._counted.get(text)
        if known is not None:
            return known
        counted = math.ceil(len(text) / CHARS_PER_TOKEN)
        counter = getattr(getattr(self.inner, "backend", None), "count_tokens", None)
        if counter is not None and text:
            with_text = counter([{"role": "user", "content": text}])
            without = counter([{"role": "user", "content": ""}])
            if with_text is not None and without is not None:
                counted = max(0, with_text - without)
        if len(self._counted) < MAX_COUNTED_TEXTS:
            self._counted[text] = counted
        return counted

    def _guided(self, context: EpisodeContext) -> tuple[EpisodeContext, dict[str, dict]]:
        """The context the policy sees this turn (with the guide layers' text) and the log."""
        log: dict[str, dict] = {}
        added: list[str] = []
        instructions, notes = [context.instructions] if context.instructions else [], []
        for layer in self.layers:
            guidance = layer.guide(context)
            entry: dict[str, Any] = {"fired": guidance.fired, "tokens": 0}
            if guidance.fired:
                if guidance.instructions:
                    instructions.append(guidance.instructions)
                if guidance.note:
                    notes.append(guidance.note)
                added.append(layer.spec.name)
                entry["tokens"] = self.count_tokens(
                    "\n\n".join(t for t in (guidance.instructions, guidance.note) if t))
                if guidance.detail:
                    entry["detail"] = guidance.detail
            log[layer.spec.name] = entry
        if not added:
            return context, log
        return replace(context, instructions="\n\n".join(instructions),
                       notes=context.notes + tuple(notes)), log

    async def _compacted(self, context: EpisodeContext
                         ) -> tuple[EpisodeContext, dict[str, dict]]:
        """The context after the layers that compact it (``compaction``), and their log."""
        log: dict[str, dict] = {}
        for layer in self.layers:
            context, entry = await layer.compact(context, self.inner.act)
            if entry is not None:
                log[layer.spec.name] = entry
        return context, log

    async def act(self, context: EpisodeContext) -> Decision:
        view, compacted = await self._compacted(context)
        view, log = self._guided(view)
        log.update(compacted)
        decision = await self.inner.act(view)

        async def ask(note: str) -> Decision:
            return await self.inner.act(replace(view, notes=view.notes + (note,)))

        for layer in self.layers:
            review = await layer.review(view, decision, ask)
            decision = review.decision
            if review.fired:
                entry = log[layer.spec.name]
                entry["fired"] = True
                entry["tokens"] += review.tokens
                entry["detail"] = "; ".join(d for d in (entry.get("detail"), review.detail)
                                            if d)
        return replace(decision, layers=log)

    async def aclose(self) -> None:
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()
