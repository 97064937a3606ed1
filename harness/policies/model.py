"""Model-backed policies: one `ModelPolicy` over any `ChatBackend` (openai, hf, vllm).

The policy renders the episode context into chat messages with its `Scaffold`, asks the
backend for one completion, parses the action and returns a `Decision` carrying the raw
output, token counts, log-probabilities (when asked for and offered), latency (wall time of
the call, retries included), the retries the call needed and the messages it sent (which the
runner stores as the episode's turns).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from harness.core import ConfigError, HarnessError
from harness.policies.base import Decision, EpisodeContext
from harness.policies.courage import with_courage
from harness.policies.scaffold import Messages, Scaffold, make_scaffold
from harness.policies.specs import ModelOptions, parse_model_spec
from tasks.base import suite_capability

__all__ = ["Sampling", "Completion", "ChatResult", "ChatBackend", "ModelPolicy",
           "apply_suite_scaffolds"]

SEED_RANGE = 2**31 - 1


@dataclass(frozen=True)
class Sampling:
    """Decoding parameters of one request."""

    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 256
    stop: tuple[str, ...] = ()
    seed: int | None = None
    n: int = 1
    logprobs: bool = False
    top_logprobs: int = 0

    @classmethod
    def from_options(cls, options: ModelOptions, **overrides: Any) -> Sampling:
        values = {name: getattr(options, name) for name in (
            "temperature", "top_p", "max_tokens", "stop", "seed", "logprobs", "top_logprobs")}
        return cls(**{**values, **overrides})


@dataclass(frozen=True)
class Completion:
    """One generated continuation. `token_ids` are the generated ids (an end-of-sequence
    token included when one was generated; local backends only); `logprobs` has shape
    ``(completion tokens,)``; `top_logprobs` holds, per token, the most likely
    ``(token text, logprob)`` pairs, best first, and `top_ids` their ids (local backends)."""

    text: str
    finish_reason: str = "stop"
    token_ids: tuple[int, ...] | None = None
    logprobs: tuple[float, ...] | None = None
    top_logprobs: tuple[tuple[tuple[str, float], ...], ...] | None = None
    top_ids: tuple[tuple[int, ...], ...] | None = None


@dataclass(frozen=True)
class ChatResult:
    """The `n` completions of one request, with usage and the retries it needed."""

    choices: tuple[Completion, ...]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0


class ChatBackend(Protocol):
    """What a `ModelPolicy` needs from a backend."""

    context_tokens: int | None
    """The model's context length, when known."""

    async def chat(self, messages: Messages, sampling: Sampling) -> ChatResult: ...

    def count_tokens(self, messages: Messages) -> int | None:
        """Prompt tokens of `messages`; None when the backend cannot count them."""
        ...

    def describe(self) -> dict[str, Any]:
        """Provenance of the model (path, served model id, config, ...)."""
        ...


class ModelPolicy:
    """A policy that asks a language model for each action."""

    def __init__(self, spec: str, backend: ChatBackend, options: ModelOptions, *,
                 train_seed: int | None = None, provenance: Mapping[str, Any] | None = None,
                 scaffold: Scaffold | None = None, policy_id: str | None = None,
                 scaffold_pinned: bool | None = None, rng_key: str | None = None):
        self.id = policy_id or spec
        self.rng_key = policy_id or rng_key or self.id
        """What the episode's policy RNG (the sampling seeds) derives from: the id, or for
        a model read from a directory, the id with its path replaced by the weights' digest
        (`harness.policies.hf.location_free_key`), so moving a checkpoint keeps its samples."""
        self.backend = backend
        self.options = options
        self.train_seed = train_seed
        self.scaffold: Scaffold = scaffold if scaffold is not None else make_scaffold(
            options.scaffold or f"{options.format}@1", history=options.history,
            max_action_chars=options.max_action_chars)
        self.sampling = Sampling.from_options(options)
        self.provenance: Mapping[str, Any] = {
            "kind": spec.partition(":")[0], "spec": spec, **backend.describe(),
            "scaffold": self.scaffold.spec.to_dict(), **(provenance or {})}
        self.calls = self.retries = self.unparsed = 0
        self.own_scaffold = self.scaffold
        self.scaffold_pinned = _names_scaffold(spec, self.provenance) \
            if scaffold_pinned is None else scaffold_pinned
        """False when neither the spec nor a checkpoint names the scaffold: a suite's
        ``default_scaffold`` then applies (`apply_suite_scaffolds`)."""

    def use_scaffold(self, spec: str) -> None:
        """Switch to scaffold `spec` (``NAME@VERSION``; "" = the one the policy was built
        with) with this policy's history window and action length options; the provenance
        records it."""
        self.scaffold = make_scaffold(spec, history=self.options.history,
                                      max_action_chars=self.options.max_action_chars) \
            if spec else self.own_scaffold
        self.provenance = {**self.provenance, "scaffold": self.scaffold.spec.to_dict()}

    def budget(self) -> int | None:
        context = self.options.context or self.backend.context_tokens
        return None if context is None else context - self.options.max_tokens

    def prompt(self, context: EpisodeContext) -> Messages:
        """The chat messages for the current turn, trimmed to the token budget (with the
        ``courage=`` line in the instructions when the option is set,
        `harness.policies.courage`)."""
        context = with_courage(context, self.options.courage)
        budget = self.budget()
        counter = self.backend.count_tokens if budget is not None else None
        return self.scaffold.messages(context, budget=budget, count_tokens=counter)

    async def act(self, context: EpisodeContext) -> Decision:
        return await self.reply(context)

    async def reply(self, context: EpisodeContext, *, max_tokens: int | None = None
                    ) -> Decision:
        """`act` with another completion budget (`max_tokens`; None: the policy's own), e.g.
        for the compaction layer's summary turn."""
        messages = self.prompt(context)
        sampling = self.sampling
        if max_tokens is not None:
            sampling = replace(sampling, max_tokens=max_tokens)
        if sampling.seed is None:
            sampling = replace(sampling, seed=int(context.rng.integers(SEED_RANGE)))
        started = time.perf_counter()
        result = await self.backend.chat(messages, sampling)
        latency = time.perf_counter() - started
        choice = result.choices[0]
        parsed = self.scaffold.parse(choice.text, multiline=context.multiline_actions)
        self.calls += 1
        self.retries += result.retries
        self.unparsed += not parsed.ok
        return Decision(action=parsed.env_action, raw_output=choice.text,
                        prompt_tokens=result.prompt_tokens,
                        completion_tokens=result.completion_tokens,
                        logprobs=choice.logprobs, latency_s=latency, parsed=parsed.ok,
                        retries=result.retries, messages=messages)

    async def aclose(self) -> None:
        """Release the backend's connections (they are also released when the event loop
        that used them ends)."""
        close = getattr(self.backend, "aclose", None)
        if close is not None:
            await close()

    def stats(self) -> dict[str, int]:
        """Calls, retries and unparsed outputs since the policy was built."""
        return {"calls": self.calls, "retries": self.retries, "unparsed": self.unparsed}


def _names_scaffold(spec: str, provenance: Mapping[str, Any]) -> bool:
    """Whether the policy spec sets ``scaffold=``/``format=`` or the checkpoint it loads
    stores a scaffold."""
    if "scaffold" in (provenance.get("checkpoint_meta") or {}):
        return True
    try:
        return bool({"scaffold", "format"} & parse_model_spec(spec).given)
    except HarnessError:
        return True


def apply_suite_scaffolds(policies: Sequence[Any], suites: Sequence[Any]) -> None:
    """Give every model policy whose scaffold is not pinned the scaffold its suites name
    (their ``default_scaffold``, e.g. ``terminal@1`` for terminal suites). Suites that name
    different ones cannot share such a policy in one run (ConfigError: name it in the spec)."""
    defaults = {suite_capability(suite, "default_scaffold") for suite in suites}
    for policy in policies:
        policy = getattr(policy, "inner", policy)  # a LayeredPolicy's model policy
        if not isinstance(policy, ModelPolicy) or policy.scaffold_pinned:
            continue
        if len(defaults) > 1:
            names = ", ".join(f"{s.id}: {suite_capability(s, 'default_scaffold') or 'think@1'}"
                              for s in suites)
            raise ConfigError(f"the suites of this run default to different scaffolds "
                              f"({names}); set scaffold=NAME@VERSION in the options of "
                              f"policy {policy.id}")
        policy.use_scaffold(next(iter(defaults), ""))
