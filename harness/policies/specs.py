"""Model policy specs: ``BACKEND:TARGET[?OPTIONS]``.

========================================  ==================================================
``openai:MODEL@URL``                      any OpenAI-compatible server, e.g.
                                          ``openai:tiny@http://127.0.0.1:8000/v1``; without
                                          ``@URL``: ``$OPENAI_BASE_URL`` or api.openai.com
``hf:PATH``                               a local transformers model directory
``vllm:PATH``                             vLLM's offline engine (a GPU, or vLLM's CPU build)
``checkpoint:PATH``                       a checkpoint the bundled trainer wrote (HF layout
                                          plus ``checkpoint.json``)
========================================  ==================================================

OPTIONS follow the last ``?`` as ``key=value`` pairs joined by ``&`` (values may be
percent-encoded; ``stop`` may repeat), e.g. ``hf:models/tiny?temperature=0&max_tokens=64``.
The whole spec string is the policy id, so different options are different policies.
Every key, its type and default is a field of `ModelOptions`; a key a backend does not take
is an error with a "did you mean".
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass, field, fields, replace
from typing import Any
from urllib.parse import parse_qsl

from harness.core import ConfigError, UnknownNameError

__all__ = ["ModelOptions", "ModelSpec", "parse_model_spec", "BACKEND_OPTIONS"]

DEFAULT_OPENAI_URL = "https://api.openai.com/v1"


@dataclass(frozen=True)
class ModelOptions:
    """Options of a model policy (the ``?key=value`` part of its spec)."""

    # sampling (every backend)
    temperature: float = 0.0
    """0 is greedy decoding."""
    top_p: float = 1.0
    max_tokens: int = 256
    """Completion tokens per turn."""
    stop: tuple[str, ...] = ()
    """Stop strings (repeat the key for several)."""
    seed: int | None = None
    """A fixed sampling seed for every request; unset: drawn from the episode's policy RNG,
    so samples differ across episodes and reruns repeat them."""
    logprobs: bool = False
    """Ask for per-token log-probabilities of the completion."""
    top_logprobs: int = 0
    courage: float | None = None
    """How readily the agent answers rather than abstains, in [0, 1]: the prompt asks it to
    act only when at least ``1 - courage`` sure and otherwise to play the task's declared
    abstain action (`harness.policies.courage`; tasks that declare no answerability get no
    such line). Unset: no line. Policies that differ only in courage are one refusal
    family: `harness report` draws their coverage-precision curve."""
    # scaffold (every backend)
    scaffold: str | None = None
    """The scaffold, ``NAME@VERSION`` (``think@1``, ``react@1``, ``bare@1``; see
    `harness.policies.scaffold`); unset: ``FORMAT@1``, or for a checkpoint the scaffold it
    was trained with."""
    format: str = "think"
    """Output format: ``think`` (<think>/<action> tags) or ``react`` (Thought:/Action:);
    shorthand for ``scaffold=think@1`` / ``react@1``."""
    history: int = 4
    """Earlier steps shown in the prompt (K)."""
    max_action_chars: int = 200
    context: int | None = None
    """The model's context length in tokens; the prompt is trimmed to context - max_tokens.
    Local backends read it from the model when unset."""
    # openai client
    concurrency: int = 64
    """Requests in flight at once (also the connection pool size)."""
    timeout: float = 60.0
    """Seconds per request attempt."""
    max_retries: int = 8
    """Retries of a request on 429, 5xx, timeouts and dropped connections."""
    backoff: float = 0.25
    """First retry delay in seconds; doubles each retry (full jitter), honours Retry-After."""
    backoff_max: float = 20.0
    api_key_env: str = "OPENAI_API_KEY"
    """Environment variable holding the API key (local servers need none)."""
    client: str = "openai"
    """``openai``: the official async client; ``direct``: aiohttp straight to the endpoint
    (same protocol, retries and errors; about a quarter of the CPU per request)."""
    http: str = "auto"
    """The official client's HTTP transport: ``aiohttp`` (cheaper; needs aiohttp),
    ``httpx``, or ``auto`` (aiohttp when installed)."""
    tokenizer: str | None = None
    """Local tokenizer path for exact prompt token counts against `context`."""
    chars_per_token: float = 3.0
    """Estimate of characters per token when `context` is set and no tokenizer is given."""
    # local engines
    max_batch: int = 16
    """Requests decoded together (hf, vllm)."""
    batch_wait_ms: float = 2.0
    """How long a batch waits for more requests before decoding (hf)."""
    threads: int | None = None
    """torch CPU threads (hf); unset leaves torch's default."""
    device: str = "cpu"
    dtype: str = "float32"
    gpu_memory_utilization: float = 0.85
    """vLLM's share of GPU memory (on vLLM's CPU build: of host memory, for the KV cache;
    0.1 when not given)."""
    tensor_parallel: int = 1
    # checkpoint
    train_seed: int | None = None
    """The training seed stored with the episodes (checkpoint only; unset: the checkpoint's
    own; ``none``: no training seed, e.g. for a shared starting checkpoint that `harness
    compare` pairs with every training seed of the policies trained from it)."""


_SAMPLING = ("temperature", "top_p", "max_tokens", "stop", "seed", "logprobs", "top_logprobs",
             "scaffold", "format", "history", "max_action_chars", "context", "courage")
_LOCAL = ("max_batch", "batch_wait_ms", "threads", "device", "dtype")
BACKEND_OPTIONS: dict[str, tuple[str, ...]] = {
    "openai": _SAMPLING + ("concurrency", "timeout", "max_retries", "backoff", "backoff_max",
                           "api_key_env", "client", "http", "tokenizer", "chars_per_token"),
    "hf": _SAMPLING + _LOCAL,
    "checkpoint": _SAMPLING + _LOCAL + ("train_seed",),
    "vllm": _SAMPLING + ("max_batch", "batch_wait_ms", "device", "dtype",
                         "gpu_memory_utilization", "tensor_parallel"),
}
_FIELDS = {f.name: f for f in fields(ModelOptions)}
_HINTS = typing.get_type_hints(ModelOptions)


@dataclass(frozen=True)
class ModelSpec:
    """A parsed spec: `target` is the model name (openai) or path (others)."""

    spec: str
    backend: str
    target: str
    url: str | None = None
    options: ModelOptions = field(default_factory=ModelOptions)
    given: frozenset[str] = frozenset()
    """The option keys the spec string sets (the others are defaults)."""

    def scaffold_spec(self, default: Any = None) -> Any:
        """The `ScaffoldSpec` these options ask for. `default` (a stored spec, e.g. the one a
        checkpoint was trained with) fills whatever the spec string does not set."""
        from harness.policies.scaffold import ScaffoldSpec

        o, given = self.options, self.given
        stored = None if default is None else ScaffoldSpec.from_value(default)
        if "scaffold" in given:
            base = ScaffoldSpec.from_value(o.scaffold)
        elif "format" in given or stored is None:
            base = ScaffoldSpec.from_value(f"{o.format}@1")
        else:
            base = stored
        if stored is not None:
            base = replace(base, chat_template=stored.chat_template)
            if base.name == stored.name:
                base = replace(base, history=stored.history,
                               max_action_chars=stored.max_action_chars)
        keys = ("history", "max_action_chars")
        return replace(base, **{k: getattr(o, k) for k in keys
                                if k in given or stored is None})


def _convert(name: str, values: list[str]) -> Any:
    hint = _HINTS[name]
    if name == "stop":
        return tuple(values)
    if len(values) > 1:
        raise ConfigError(f"option {name} given {len(values)} times")
    value = values[0]
    kinds = [a for a in typing.get_args(hint) if a is not type(None)] \
        if isinstance(hint, types.UnionType) else [hint]
    if type(None) in typing.get_args(hint) and value.lower() in ("", "none"):
        return None
    kind = kinds[0]
    try:
        if kind is bool:
            if value.lower() not in ("1", "0", "true", "false", "yes", "no"):
                raise ValueError(value)
            return value.lower() in ("1", "true", "yes")
        return kind(value)
    except ValueError:
        raise ConfigError(f"option {name}={value!r} is not a valid {kind.__name__}") from None


def _check(options: ModelOptions) -> None:
    low = {"max_tokens": 1, "history": 0, "max_action_chars": 1, "concurrency": 1,
           "max_retries": 0, "max_batch": 1, "top_logprobs": 0, "tensor_parallel": 1}
    for name, minimum in low.items():
        if getattr(options, name) < minimum:
            raise ConfigError(f"option {name} must be >= {minimum}, got {getattr(options, name)}")
    if not 0 <= options.temperature <= 10 or not 0 < options.top_p <= 1:
        raise ConfigError("temperature must lie in [0, 10] and top_p in (0, 1]")
    if options.timeout <= 0 or options.backoff < 0 or options.backoff_max < options.backoff:
        raise ConfigError("timeout must be > 0 and 0 <= backoff <= backoff_max")
    if options.client not in ("openai", "direct"):
        raise ConfigError(f"option client must be openai or direct, got {options.client!r}")
    if options.http not in ("auto", "aiohttp", "httpx"):
        raise ConfigError(f"option http must be auto, aiohttp or httpx, got {options.http!r}")
    if options.courage is not None and not 0 <= options.courage <= 1:
        raise ConfigError(f"option courage must lie in [0, 1], got {options.courage}")
    if options.format not in ("think", "react"):
        raise ConfigError(f"option format must be think or react, got {options.format!r}")
    if options.scaffold is not None:
        from harness.policies.scaffold import ScaffoldSpec

        ScaffoldSpec.from_value(options.scaffold)  # unknown names: did you mean
    if options.context is not None and options.context <= options.max_tokens:
        raise ConfigError(f"context ({options.context}) must exceed max_tokens "
                          f"({options.max_tokens})")


def _options(backend: str, query: str) -> tuple[ModelOptions, frozenset[str]]:
    raw: dict[str, list[str]] = {}
    for key, value in parse_qsl(query, keep_blank_values=True, strict_parsing=False):
        raw.setdefault(key, []).append(value)
    allowed = BACKEND_OPTIONS[backend]
    for key in raw:
        if key not in allowed:
            raise UnknownNameError(f"option of the {backend} backend", key, allowed)
    options = ModelOptions(**{key: _convert(key, values) for key, values in raw.items()})
    _check(options)
    if "scaffold" in raw and "format" in raw:
        raise ConfigError("give either scaffold= or format=, not both (format=react is "
                          "scaffold=react@1)")
    return options, frozenset(raw)


def parse_model_spec(spec: str) -> ModelSpec:
    """Parse ``BACKEND:TARGET[?OPTIONS]`` (see the module docstring)."""
    backend, colon, rest = spec.partition(":")
    if not colon or backend not in BACKEND_OPTIONS:
        raise UnknownNameError("model backend", backend, BACKEND_OPTIONS)
    target, _, query = rest.rpartition("?") if "?" in rest else (rest, "", "")
    url = None
    if backend == "openai":
        at = max(target.find("@http://"), target.find("@https://"))
        if at != -1:
            target, url = target[:at], target[at + 1:].rstrip("/")
    if not target:
        what = "a model name" if backend == "openai" else "a path"
        raise ConfigError(f"policy spec {spec!r} needs {what} after '{backend}:'")
    options, given = _options(backend, query)
    return ModelSpec(spec, backend, target, url, options, given)
