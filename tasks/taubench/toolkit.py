"""What both τ-bench domains' tools share: registration, the safe calculator, think, transfer.

A tool is a function ``(data, **arguments) -> str`` over the episode's database (a dict of
JSON-like tables) that may change it in place. `tool` registers it under its public name
and gives it the qualified name upstream's tool class method has (``GetOrderDetails.invoke``),
so a call with wrong arguments fails with the very same ``TypeError`` text (the env prints it
as ``Error: ...``, as upstream does). `ToolSpec` is the JSON schema the agent is shown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

Tool = Callable[..., Any]

__all__ = ["Tool", "ToolSpec", "Toolbox", "calculate", "think", "transfer_to_human_agents"]


@dataclass(frozen=True)
class ToolSpec:
    """One tool as the agent sees it: name, one-line purpose and its arguments
    (``{argument: (json type, description)}``; every argument is required)."""

    name: str
    description: str
    arguments: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    writes: bool = False
    """True when the tool may change the database (the user must consent first)."""

    def schema(self) -> dict[str, Any]:
        """The OpenAI function-calling schema."""
        properties = {}
        for name, (kind, text) in self.arguments.items():
            prop: dict[str, Any] = {"type": kind, "description": text}
            if kind == "array":
                prop["items"] = {"type": "string"} if "id" in name else {"type": "object"}
            properties[name] = prop
        return {"type": "function", "function": {
            "name": self.name, "description": self.description,
            "parameters": {"type": "object", "properties": properties,
                           "required": list(self.arguments)}}}


class Toolbox:
    """The tools of one domain, by name, with their specs."""

    def __init__(self) -> None:
        self.functions: dict[str, Tool] = {}
        self.specs: dict[str, ToolSpec] = {}

    def tool(self, upstream_class: str, spec: ToolSpec) -> Callable[[Tool], Tool]:
        """Register the decorated function as `spec.name`; see the module docstring."""
        def register(function: Tool) -> Tool:
            function.__qualname__ = f"{upstream_class}.invoke"
            self.functions[spec.name] = function
            self.specs[spec.name] = spec
            return function
        return register

    def add(self, upstream_class: str, spec: ToolSpec, function: Tool) -> None:
        """Register a shared tool (calculate, think, ...) under this domain."""
        self.functions[spec.name] = _renamed(function, upstream_class)
        self.specs[spec.name] = spec

    @property
    def write_tools(self) -> frozenset[str]:
        return frozenset(name for name, spec in self.specs.items() if spec.writes)


def _renamed(function: Tool, upstream_class: str) -> Tool:
    code = function.__code__
    clone = type(function)(code, function.__globals__, function.__name__,
                           function.__defaults__, function.__closure__)
    clone.__qualname__ = f"{upstream_class}.invoke"
    return clone


_CALCULATOR_CHARACTERS = frozenset("0123456789+-*/(). ")


def calculate(data: dict[str, Any], expression: str) -> str:
    """Arithmetic over digits, ``+-*/``, parentheses, dots and spaces; rounded to 2 places."""
    if not all(character in _CALCULATOR_CHARACTERS for character in expression):
        return "Error: invalid characters in expression"
    try:
        value = eval(expression, {"__builtins__": None}, {})  # noqa: S307 - characters checked
        return str(round(float(value), 2))
    except Exception as exc:  # noqa: BLE001 - the message is the tool's output
        return f"Error: {exc}"


def think(data: dict[str, Any], thought: str) -> str:
    """A scratch note; changes nothing and answers nothing."""
    return ""


def transfer_to_human_agents(data: dict[str, Any], summary: str) -> str:
    """Hand the conversation to a human (ends the episode)."""
    return "Transfer successful"


CALCULATE = ToolSpec("calculate", "Evaluate an arithmetic expression (numbers, + - * /, "
                     "parentheses); the result is rounded to 2 decimal places.",
                     {"expression": ("string", "the expression, e.g. '2 * (3.5 + 1)'")})
THINK = ToolSpec("think", "Write down a thought to reason step by step; it changes nothing.",
                 {"thought": ("string", "the thought")})
TRANSFER = ToolSpec("transfer_to_human_agents", "Transfer the user to a human agent with a "
                    "summary of the issue; only when the request cannot be handled by the "
                    "tools and the policy allows it. Ends the conversation.",
                    {"summary": ("string", "a summary of the user's issue")})
