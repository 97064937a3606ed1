"""The policies an audit plays: trivial probes, the oracle and a suite's declared exploits.

Trivial probes: every trivial action the suite declares (``noop:NAME``), finishing at once
with an empty answer (``audit:empty``, the action ``""``), an output that is never an action
(``audit:invalid``) and a uniformly random admissible action (``random``). A suite may also
declare adversarial policies in an optional attribute ``exploit_policies: Mapping[str, str]``
(name -> policy spec, e.g. ``{"first-result": "scripted-buy-first"}``); suites without it
have none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.core import HarnessError
from harness.policies import Decision, EpisodeContext, Policy, make_policy
from tasks.base import INVALID_PROBE, Suite, suite_capability

__all__ = ["ConstantPolicy", "Probe", "trivial_probes", "exploit_probes", "EMPTY_ID",
           "INVALID_ID"]

EMPTY_ID = "audit:empty"
INVALID_ID = "audit:invalid"


class ConstantPolicy:
    """Sends the same action text every turn (an empty answer, or unparseable output)."""

    train_seed: int | None = None

    def __init__(self, policy_id: str, action: str):
        self.id = policy_id
        self.action = action
        self.provenance: Mapping[str, Any] = {"kind": "audit-probe", "action": action}

    async def act(self, context: EpisodeContext) -> Decision:
        return Decision(action=self.action, raw_output=self.action, parsed=False)


@dataclass(frozen=True)
class Probe:
    """One policy the audit plays: `name` as reported, `policy` as run (its `id` is stored)."""

    name: str
    kind: str  # "trivial" or "exploit"
    policy: Policy


def trivial_probes(suite: Suite) -> list[Probe]:
    """The suite's declared trivial actions as ``noop:NAME`` policies, then the built-in
    probes (empty answer, invalid output, random admissible action)."""
    probes = [Probe(f"noop:{name}", "trivial", make_policy(f"noop:{name}"))
              for name in suite.trivial_actions]
    probes += [Probe("empty answer", "trivial", ConstantPolicy(EMPTY_ID, "")),
               Probe("invalid output", "trivial", ConstantPolicy(INVALID_ID, INVALID_PROBE)),
               Probe("random", "trivial", make_policy("random"))]
    return probes


def exploit_probes(suite: Suite) -> list[Probe]:
    """The adversarial policies a suite declares in ``exploit_policies`` (none if absent)."""
    declared = suite_capability(suite, "exploit_policies") or {}
    if not isinstance(declared, Mapping):
        raise HarnessError(f"suite {suite.id}: exploit_policies must map names to policy "
                           f"specs, got {type(declared).__name__}")
    return [Probe(name, "exploit", make_policy(spec)) for name, spec in declared.items()]
