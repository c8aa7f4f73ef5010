"""The command line: check, fix, verify, rule, rules, server.

Exit codes: 0 nothing to report, 1 findings remain (or, for `fix` without
`--apply`, fixes are pending), 2 usage or configuration error or a bug.

Each command's module is imported only when that command runs, so `check` on one
file (what pre-commit runs on every commit) never loads the verifier or rich.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import importlib
import io
import os
import sys
from typing import Any, NoReturn

import click

from accel_lint import __version__, startup

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
        # before the command's modules (and libcst) define their dataclasses
        startup.install()
        command: click.Command = getattr(importlib.import_module(module), attr)
        # what the imports built lives until exit: the cyclic collector need not
        # visit it again at each full collection
        gc.freeze()
        global _collect_after_imports
        if _collect_after_imports:  # `run` held collections off until here
            _collect_after_imports = False
            gc.enable()
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """An unknown command is a usage error that names the closest one, as for
        options (`accel-lint chek` -> "Did you mean 'check'?")."""
        name = args[0] if args else None
        if name is not None and not name.startswith("-") and self.get_command(ctx, name) is None:
            import difflib  # only for a mistyped command

            close = difflib.get_close_matches(name, sorted(_COMMANDS), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            ctx.fail(f"No such command {name!r}.{hint}")
        return super().resolve_command(ctx, args)

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        # `-V` and `--help` print while the arguments are parsed, before `invoke`
        try:
            return super().make_context(info_name, args, parent, **extra)
        except OSError as exc:
            if exc.errno != errno.EPIPE:
                raise
            _silence_closed_pipe()
            raise click.exceptions.Exit(0) from None

    def invoke(self, ctx: click.Context) -> Any:
        """Every command's run: output that cannot be encoded is escaped, never a
        crash; Ctrl-C exits 130 (128 + SIGINT, what a shell reports); anything we did
        not foresee is an error of accel-lint, exit 2 with its traceback, never the
        exit 1 that means "findings"."""
        _lenient_output()
        try:
            try:
                return super().invoke(ctx)
            finally:
                # what is still buffered goes out here, where a closed pipe is caught,
                # not at the interpreter's exit
                _flush(sys.stdout)
        except OSError as exc:
            if exc.errno != errno.EPIPE:
                raise _internal_error() from None
            # the reader went away (`accel-lint check . | head -3`): stop writing and exit
            # quietly with 0, as ruff does; no traceback, no "internal error"
            _silence_closed_pipe()
            raise click.exceptions.Exit(0) from None
        except KeyboardInterrupt:
            click.echo("accel-lint: interrupted", err=True)
            _exit_if_pool_abandoned(EXIT_INTERRUPTED)
            raise click.exceptions.Exit(EXIT_INTERRUPTED) from None
        except SystemExit as exc:  # SIGTERM during a parallel run (`parallel.py`)
            _exit_if_pool_abandoned(exc.code if isinstance(exc.code, int) else 1)
            raise
        except (click.exceptions.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception:
            raise _internal_error() from None


def _exit_if_pool_abandoned(code: int) -> None:
    """A run whose worker pool was stopped mid-run exits at once (`parallel.py`);
    a run that never started one never imports it."""
    parallel = sys.modules.get("accel_lint.parallel")
    if parallel is not None:
        parallel.exit_if_abandoned(code)


def _internal_error() -> click.exceptions.Exit:
    import traceback  # only for a bug of ours

    click.echo(
        "accel-lint: error: internal error; this is a bug in accel-lint, please report "
        f"it with the command line.\n{traceback.format_exc()}",
        err=True,
    )
    return click.exceptions.Exit(2)


def _flush(stream: Any) -> None:
    if stream is not None and not getattr(stream, "closed", True):
        stream.flush()


def _silence_closed_pipe() -> None:
    """Point standard output and error at /dev/null, so what is still buffered for the
    closed pipe is dropped at exit instead of raising again (Python's own advice for
    SIGPIPE, docs `signal`, "Note on SIGPIPE")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):  # not a real file
            os.dup2(devnull, stream.fileno())
    os.close(devnull)


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


_collect_after_imports = False


def run() -> NoReturn:
    """The `accel-lint` program: `main`, then an exit without the interpreter's
    teardown. At exit Python frees every module and object one by one and runs full
    cyclic collections over what is left: 0.1-0.3 s after a repository's check,
    about a tenth of its CPU (docs/performance.md), for memory the OS takes back
    at once. What a normal exit would still do that matters is done first: the
    `atexit` handlers (the dataclass-method table, a worker pool's shutdown,
    temporary files), and the flush of standard output and error. A run that still
    has threads, or exits with a message, exits the normal way.

    The cyclic collector is off until the command's imports are done
    (`get_command` freezes them and turns it back on): what they build lives until
    exit, and collecting during them cost a tenth of their time."""
    global _collect_after_imports
    if gc.isenabled():
        gc.disable()
        _collect_after_imports = True
    try:
        main()
    except SystemExit as exc:
        code = exc.code
    else:  # click ends by raising SystemExit; a `main` returning is not expected
        code = 0
    if not (code is None or isinstance(code, int)) or _threads_alive():
        sys.exit(code)
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            _flush(stream)
    os._exit(code or 0)


def _threads_alive() -> bool:
    """Whether a thread other than this one still runs (Python's exit would join it)."""
    threading = sys.modules.get("threading")
    return threading is not None and threading.active_count() > 1
