"""``harness tasks ...``: task-data utilities (``harness tasks generate alfworld``).

Each family's generator lives with the family under `tasks/` and is registered with
`tasks.plugins.register_generator` (a module holding ``DESCRIPTION``,
``add_generate_arguments(parser)`` and ``generate(args) -> lines``); heavy imports happen
inside the handlers.
"""

from __future__ import annotations

import argparse
import importlib

__all__ = ["add_commands", "cmd_generate"]


def add_commands(subparsers) -> None:
    """Add ``tasks generate FAMILY`` to the ``harness`` subcommands."""
    from tasks.plugins import generators

    parser = subparsers.add_parser("tasks", help="task data utilities (generate game sets)")
    sub = parser.add_subparsers(dest="tasks_command", required=True)
    generate = sub.add_parser("generate",
                              help="write generated games in a benchmark's official layout")
    families = generate.add_subparsers(dest="family", required=True, metavar="FAMILY")
    for family, module_name in generators().items():
        module = importlib.import_module(module_name)
        tool = families.add_parser(family, help=f"{family} games",
                                   description=module.DESCRIPTION)
        tool.add_argument("--out", required=True, help="output folder (created if missing)")
        module.add_generate_arguments(tool)
        tool.set_defaults(func=cmd_generate, generator=module_name)


def cmd_generate(args: argparse.Namespace) -> int:
    for line in importlib.import_module(args.generator).generate(args):
        print(line)
    return 0
