"""The planning task the oracle and the exact Q-values are computed on.

TextWorld replans with the Fast Downward library bundled in ``fast-downward-textworld``
(``replan()``: lazy best-first search ordered by path cost g, no heuristic, i.e. uniform-cost
search, from the engine's current state). On a full ALFWorld problem (50+ objects) that search
takes seconds. The replanning task here is the same problem with two changes, neither of which
changes the length of an optimal plan:

- **relevance pruning**: objects whose type the goal does not name are removed, with every fact
  that mentions them (receptacles, the agent and locations stay). In ``alfred.pddl`` an object
  interacts with another only through the agent's single hand, so deleting every action on an
  object the goal does not name from any plan leaves a valid plan at most as long; the optimal
  length is therefore unchanged. One exception: when the agent holds such an object it must be
  put down first, so the held object is kept (`relevant_problem`'s `keep`).
- **unit costs**: a ``:metric`` entry is dropped, so every action costs 1 and uniform-cost search
  returns a plan with the fewest steps (Fast Downward only honours ``minimize (total-cost)``;
  ALFWorld's generated problems carry no metric, so this matches the engine's own replanning).

`plan_length`-based Q-values (see `tasks.alfworld.env`) rest on this optimality.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["parse_pddl", "to_pddl", "goal_object_types", "object_types", "relevant_problem"]


def parse_pddl(text: str) -> list:
    """PDDL text -> nested lists of lower-cased tokens (Fast Downward's own Lisp parser)."""
    from tasks.alfworld.speedups import import_fast_downward

    import_fast_downward()
    from fast_downward.translate.pddl_parser.lisp_parser import parse_nested_list

    return parse_nested_list(text.split("\n"))


def to_pddl(tree) -> str:
    """Nested lists -> PDDL text (one top-level section per line)."""
    if not isinstance(tree, list):
        return tree
    return "(" + " ".join(to_pddl(item) for item in tree) + ")"


def _walk(tree) -> Iterable[list]:
    if isinstance(tree, list):
        yield tree
        for item in tree:
            yield from _walk(item)


def _section(tree: list, name: str) -> list:
    return next((item for item in tree[1:] if isinstance(item, list) and item[:1] == [name]), [])


def goal_object_types(problem: str | list) -> set[str]:
    """The object types (``appletype``) that the goal's ``objectType`` literals name."""
    tree = parse_pddl(problem) if isinstance(problem, str) else problem
    goal = _section(tree, ":goal")
    return {node[2] for node in _walk(goal)
            if len(node) == 3 and node[0] == "objecttype" and not node[2].startswith("?")}


def object_types(problem: str | list) -> dict[str, str]:
    """``{object name: its type}`` from the problem's ``objectType`` facts (lower case)."""
    tree = parse_pddl(problem) if isinstance(problem, str) else problem
    init = _section(tree, ":init")
    return {fact[1]: fact[2] for fact in init[1:]
            if isinstance(fact, list) and len(fact) == 3 and fact[0] == "objecttype"}


def _typed_names(declarations: list) -> list[tuple[str, str]]:
    """``[a, b, -, t, c, -, u]`` -> ``[(a, t), (b, t), (c, u)]``."""
    out, pending = [], []
    index = 0
    while index < len(declarations):
        token = declarations[index]
        if token == "-":
            out += [(name, declarations[index + 1]) for name in pending]
            pending, index = [], index + 2
            continue
        pending.append(token)
        index += 1
    return out + [(name, "object") for name in pending]


def relevant_problem(problem: str, keep: Iterable[str] = ()) -> str:
    """`problem` without the objects the goal does not name (except those in `keep`, lower-case
    PDDL names) and without a ``:metric``; see the module docstring."""
    tree = parse_pddl(problem)
    wanted = goal_object_types(tree)
    keep = {name.lower() for name in keep}
    init = _section(tree, ":init")
    object_type = object_types(tree)
    declared = _typed_names(_section(tree, ":objects")[1:])
    dropped = {name for name, kind in declared
               if kind == "object" and object_type.get(name) not in wanted and name not in keep}
    objects = [":objects"]
    for name, kind in declared:
        if name not in dropped:
            objects += [name, "-", kind]
    facts = [":init"] + [fact for fact in init[1:]
                         if not (set(_walk_tokens(fact)) & dropped)]
    sections = []
    for item in tree:
        if isinstance(item, list) and item[:1] == [":metric"]:
            continue
        if isinstance(item, list) and item[:1] == [":objects"]:
            item = objects
        elif isinstance(item, list) and item[:1] == [":init"]:
            item = facts
        sections.append(item)
    return "(" + "\n".join(to_pddl(section) for section in sections) + "\n)\n"


def _walk_tokens(tree) -> Iterable[str]:
    if isinstance(tree, list):
        for item in tree:
            yield from _walk_tokens(item)
    else:
        yield tree
