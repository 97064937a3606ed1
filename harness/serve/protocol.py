"""Request bodies of the OpenAI-compatible API that `harness serve` accepts (pydantic), and
the JSON error body every 4xx/5xx response carries::

    {"error": {"message": "...", "type": "invalid_request_error", "param": "n", "code": null}}
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

__all__ = ["ChatMessage", "ChatRequest", "CompletionRequest", "error_body",
           "describe_validation_error", "ValidationError"]

MAX_STOP = 4


def error_body(message: str, kind: str = "invalid_request_error", *, param: str | None = None,
               code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def describe_validation_error(exc: ValidationError) -> tuple[str, str | None]:
    """(one-line message, offending parameter) of the first validation error."""
    first = exc.errors()[0]
    param = ".".join(str(part) for part in first.get("loc", ())) or None
    return f"{param or 'body'}: {first.get('msg', 'invalid value')}", param


class _Request(BaseModel):
    model_config = ConfigDict(extra="ignore", str_max_length=4_000_000)

    model: str = Field(min_length=1)
    n: int = Field(1, ge=1)
    temperature: float = Field(1.0, ge=0.0, le=2.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    stop: str | list[str] | None = None
    seed: int | None = None
    stream: bool = False

    @field_validator("stop")
    @classmethod
    def _stop(cls, value: str | list[str] | None) -> list[str]:
        stops = [value] if isinstance(value, str) else list(value or [])
        if len(stops) > MAX_STOP:
            raise ValueError(f"at most {MAX_STOP} stop sequences")
        return [s for s in stops if s]

    @field_validator("stream")
    @classmethod
    def _stream(cls, value: bool) -> bool:
        if value:
            raise ValueError("streaming is not supported by harness serve")
        return value


class _TextPart(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: Literal["text"] = "text"
    text: str


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[_TextPart] | None = None

    def text(self) -> str:
        if isinstance(self.content, list):
            return "".join(part.text for part in self.content)
        return self.content or ""


class ChatRequest(_Request):
    messages: list[ChatMessage] = Field(min_length=1)
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    logprobs: bool = False
    top_logprobs: int | None = Field(None, ge=0, le=20)

    def completion_limit(self) -> int | None:
        return self.max_completion_tokens or self.max_tokens


class CompletionRequest(_Request):
    prompt: str | list[int] | list[str] = Field(min_length=1)
    max_tokens: int = Field(16, ge=0)
    logprobs: int | None = Field(None, ge=0, le=20)
    echo: bool = False

    @field_validator("prompt")
    @classmethod
    def _prompt(cls, value: str | list[int] | list[str]) -> str | list[int]:
        if isinstance(value, list) and value and isinstance(value[0], str):
            if len(value) != 1:
                raise ValueError("harness serve takes one prompt per request")
            return value[0]
        if isinstance(value, list) and any(token < 0 for token in value):
            raise ValueError("token ids must be >= 0")
        return value
