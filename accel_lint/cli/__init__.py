"""The command line: check, fix, verify, rule, rules, server.

Exit codes: 0 nothing to report, 1 findings remain (or, for `fix` without
`--apply`, fixes are pending), 2 usage or configuration error or a bug.

Each command's module is imported only when that command runs, so `check` on one
file (what pre-commit runs on every commit) never loads the verifier or rich.
"""

from __future__ import annotations

import importlib
import io
import sys
import traceback
from typing import Any

import click

from accel_lint import __version__

_COMMANDS = {
    "check": "accel_lint.cli.check:check",
    "fix": "accel_lint.cli.fix:fix",
    "verify": "accel_lint.cli.verify:verify",
    "rule": "accel_lint.cli.catalogue:rule_cmd",
    "rules": "accel_lint.cli.catalogue:rules_cmd",
    "server": "accel_lint.cli.server:server_cmd",
    "clean": "accel_lint.cli.clean:clean",
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = _COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, _, attr = target.partition(":")
        command: click.Command = getattr(importlib.import_module(module), attr)
        return command

    def invoke(self, ctx: click.Context) -> Any:
        """Every command's run: output that cannot be encoded is escaped, never a
        crash; Ctrl-C exits 130 (128 + SIGINT, what a shell reports); anything we did
        not foresee is an error of accel-lint, exit 2 with its traceback, never the
        exit 1 that means "findings"."""
        _lenient_output()
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo("accel-lint: interrupted", err=True)
            raise click.exceptions.Exit(EXIT_INTERRUPTED) from None
        except (click.exceptions.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception:
            click.echo(
                "accel-lint: error: internal error; this is a bug in accel-lint, please report "
                f"it with the command line.\n{traceback.format_exc()}",
                err=True,
            )
            raise click.exceptions.Exit(2) from None


EXIT_INTERRUPTED = 130


def _lenient_output() -> None:
    """A file name that is not valid UTF-8 (kept by Python as surrogates) is written
    as its own bytes on a UTF-8 stream; on any other encoding (PYTHONIOENCODING=ascii)
    what cannot be encoded is written as a backslash escape."""
    for stream in (sys.stdout, sys.stderr):
        if not isinstance(stream, io.TextIOWrapper):
            continue
        utf8 = (stream.encoding or "").lower().replace("-", "").replace("_", "") == "utf8"
        try:
            stream.reconfigure(errors="surrogateescape" if utf8 else "backslashreplace")
        except (ValueError, OSError):  # closed, or already written to in a way that forbids it
            continue


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="accel-lint")
def main() -> None:
    """accel-lint: find, fix and verify PyTorch training performance anti-patterns."""
