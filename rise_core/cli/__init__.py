"""The `rise` command line: one module per group of commands, each registering itself; shared options in `options`."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from ..errors import RiseError

# modules exposing `register(subparsers)`; each adds its own subcommands
COMMAND_MODULES = [
    "rise_core.cli.index",
    "rise_core.cli.evaluate",
    "rise_core.cli.diagnose",
    "rise_core.cli.bench",
    "rise_core.cli.ann",
    "rise_core.cli.finetune",
    "rise_core.cli.counterfactual",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rise", description="RISE: forward-only training-data attribution for causal language models.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point: returns 0 on success, 1 on a user error (message on stderr), 2 on bad usage."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s")
    try:
        return int(args.func(args) or 0)
    except RiseError as exc:
        print(f"rise {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"rise {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into e.g. `head`, which closed early
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
