"""``python -m harness.serve ARGS`` is ``harness serve ARGS``."""

import argparse
import sys

from harness.core import HarnessError
from harness.serve import add_commands


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="harness")
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["serve", *(sys.argv[1:] if argv is None else argv)])
    try:
        return args.func(args)
    except HarnessError as exc:
        print(f"harness serve: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
