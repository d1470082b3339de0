"""`python -m sim`: the command line whose JSON output other checks rely on (ARCHITECTURE.md).

Each sub-command lives in a small `sim/cli_*.py` module with `register(subparsers)`; this file
only dispatches and turns bad input into one line on stderr with exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys

from sim import cli_cost, cli_sched, flags
from sim.errors import SimInputError


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit code 2; a sub-command marked
    `refuses_vllm_flags` refuses a vLLM flag it does not read by name (sim/flags.py), before
    anything else is checked, rather than as one of argparse's unrecognized arguments."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(2)

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        if getattr(self, "refuses_vllm_flags", False) and args is not None:
            name = flags.unmodelled(args, self._option_string_actions)
            if name is not None:
                sys.stderr.write(f"vLLM flag {name} is not modelled by this simulator\n")
                raise SystemExit(2)
        return super().parse_known_args(args, namespace)


def build_parser() -> argparse.ArgumentParser:
    """The full parser, with every sub-command registered."""
    parser = _Parser(prog="python -m sim", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for module in (cli_cost, cli_sched):
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one sub-command; returns the process exit code."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except SimInputError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2


def run_cli() -> int:
    """`main()` as a process: a reader that went away (`... | head`) ends it quietly, exit 1."""
    try:
        try:
            code = main()
        except SystemExit as exc:  # argparse after --help or a usage error
            code = exc.code if isinstance(exc.code, int) else 1
        sys.stdout.flush()  # a small output still sits in the buffer: fail here, not at exit
        return code
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the flush at exit cannot fail again
        return 1


if __name__ == "__main__":
    raise SystemExit(run_cli())
