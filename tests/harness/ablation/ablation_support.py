"""A scripted policy whose harness layers have known effects, for the ablation tests.

`ProcedureFollower` plays frozenlake's oracle with two kinds of slips drawn from the
episode's policy RNG (one draw per call): with probability `FORMAT_SLIP` it writes the move
with a full stop (``"Left."``: the env rejects it, the ``repair`` layer normalises it) and with
`GARBAGE_SLIP` it writes ``"Jump"`` (nothing repairs it; ``repair`` asks again, and the new
draw usually gives a valid move). It follows the first ``Procedure: A, B`` line of its
instructions (what the ``skills`` layer injects from `HARMFUL_SKILL`) for its first steps:
a wrong procedure, ``Down`` from the start, which walks into the hole below the start on some
maps and off the shortest path on others. It ignores everything else the layers say, so
``contract`` changes nothing. On 4x4 maps (shortest path 6) with a 7-step limit every
wasted step fails the episode, so:

- repair helps (slips no longer waste steps),
- skills hurts (the procedure drops the player into holes and detours),
- contract does nothing (identical episodes: layers keep the sampling stream).
"""

from __future__ import annotations

import re
from pathlib import Path

from harness.policies import register_policy
from harness.policies.base import Decision, EpisodeContext

NAME = "procedure-follower"
FORMAT_SLIP = 0.15
GARBAGE_SLIP = 0.05
HARMFUL_SKILL = """
[[skills]]
name = "frozenlake-start-down"
suites = ["frozenlake"]
text = "Procedure: Down"
"""
_PROCEDURE = re.compile(r"Procedure:\s*(.+)")


class ProcedureFollower:
    """The scripted policy of the module docstring."""

    train_seed = None

    def __init__(self, spec: str):
        self.id = spec
        self.provenance = {"kind": "scripted", "spec": spec}

    async def act(self, context: EpisodeContext) -> Decision:
        draw = float(context.rng.random())
        found = _PROCEDURE.search(context.instructions)
        procedure = [a.strip() for a in found.group(1).split(",")] if found else []
        action = procedure[context.step] if context.step < len(procedure) \
            else context.env.oracle_action()
        if draw < FORMAT_SLIP:
            action += "."
        elif draw < FORMAT_SLIP + GARBAGE_SLIP:
            action = "Jump"
        return Decision(action, action)


def register_follower() -> None:
    """Make ``procedure-follower`` a policy spec (idempotent)."""
    register_policy(NAME, lambda spec, argument: ProcedureFollower(spec),
                    "test policy: frozenlake oracle with slips that follows procedures")


def write_skill_store(folder: Path) -> Path:
    path = folder / "skills.toml"
    path.write_text(HARMFUL_SKILL)
    return path
