"""The command line: check, fix, verify, rule, rules, server.

Exit codes: 0 nothing to report, 1 findings remain (or, for `fix` without
`--apply`, fixes are pending), 2 usage or configuration error or a bug.

Each command's module is imported only when that command runs, so `check` on one
file (what pre-commit runs on every commit) never loads the verifier or rich.
"""

from __future__ import annotations

import importlib

import click

from accel_lint import __version__

_COMMANDS = {
    "check": "accel_lint.cli.check:check",
    "fix": "accel_lint.cli.fix:fix",
    "verify": "accel_lint.cli.verify:verify",
    "rule": "accel_lint.cli.catalogue:rule_cmd",
    "rules": "accel_lint.cli.catalogue:rules_cmd",
    "server": "accel_lint.cli.server:server_cmd",
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


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="accel-lint")
def main() -> None:
    """accel-lint: find, fix and verify PyTorch training performance anti-patterns."""
