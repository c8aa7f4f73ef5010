"""What the commands share: exit codes, the selection and discovery options, and
turning them into `Settings`."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from accel_lint.baseline import Baseline, BaselineError
from accel_lint.config import (
    ConfigError,
    Selection,
    Settings,
    config_in,
    load_settings,
    parse_codes,
)
from accel_lint.diagnostic import PARSE_ERROR, Diagnostic

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def read_stdin() -> bytes:
    """Standard input's bytes; closed or unreadable is a usage error."""
    stream = sys.stdin
    if stream is None:
        fail("standard input is closed (`-` reads the file from it)")
    try:
        return stream.buffer.read()
    except (OSError, ValueError) as exc:
        fail(f"cannot read standard input: {exc}")


def fail(message: str) -> NoReturn:
    click.echo(f"accel-lint: error: {message}", err=True)
    sys.exit(EXIT_ERROR)


R = TypeVar("R")


@dataclass
class Common:
    settings: Settings
    paths: list[str]
    stdin: bool
    stdin_filename: str | None
    # the settings of what lies in a directory, from the closest configuration at or
    # above it (hierarchical, as ruff); None under --config, --isolated and standard
    # input, where `settings` serve every file
    settings_in: Callable[[str], Settings] | None = None

    def resolve(self, path: str) -> Settings:
        """One file's settings: those of the closest configuration above it."""
        if self.settings_in is None:
            return self.settings
        return self.settings_in(os.path.dirname(os.path.abspath(path)))

    def groups(self, files: Sequence[str]) -> list[tuple[Settings, list[int]]]:
        """The files (by index) that share one configuration, with its settings."""
        if self.settings_in is None:
            return [(self.settings, list(range(len(files))))]
        out: dict[Path | None, tuple[Settings, list[int]]] = {}
        for i, path in enumerate(files):
            settings = self.resolve(path)
            out.setdefault(settings.config_file, (settings, []))[1].append(i)
        return list(out.values()) or [(self.settings, [])]

    def each(
        self, files: Sequence[str], run: Callable[[list[str], Settings], Sequence[R]]
    ) -> list[R]:
        """`run` over each group of files with its own settings; results in input order."""
        groups = self.groups(files)
        if len(groups) == 1:
            return list(run(list(files), groups[0][0]))
        results: list[tuple[int, R]] = []
        for settings, indices in groups:
            got = run([files[i] for i in indices], settings)
            results.extend(zip(indices, got))
        return [r for _, r in sorted(results, key=lambda pair: pair[0])]


def _resolver(
    base: Settings, load: Callable[[Path | None, Path], Settings]
) -> Callable[[str], Settings]:
    """Settings per directory (for the files and directories in it): those of the
    closest configuration file at or above it, each configuration read once (one
    `Settings` object each), each directory looked up once. A directory with no
    configuration above it (a linked folder that leads out of the project) gets the
    defaults, rooted at it."""
    by_config: dict[Path | None, Settings] = {base.config_file: base}
    by_directory: dict[str, Settings] = {}
    closest: dict[Path, Path | None] = {}  # by real directory: each one's files read once
    base_real = base.config_file.resolve() if base.config_file is not None else None

    def find(real: Path) -> Path | None:
        if real in closest:
            return closest[real]
        found = config_in(real)
        if found is None and real.parent != real:
            found = find(real.parent)
        closest[real] = found
        return found

    def of(found: Path | None, real: Path) -> Settings:
        if found in by_config:
            return by_config[found]
        if found is None:
            return load(None, real)
        if base_real is not None and found.resolve() == base_real:
            by_config[found] = base  # the same file by another path
        else:
            by_config[found] = load(found, found.parent)
        return by_config[found]

    def settings_in(directory: str) -> Settings:
        directory = os.path.abspath(directory)
        known = by_directory.get(directory)
        if known is not None:
            return known
        parent = os.path.dirname(directory)
        above = by_directory.get(parent) if parent != directory else None
        try:
            if above is not None and not os.path.islink(directory):
                # a folder (not a link) in a folder already looked up, as a walk asks:
                # its own configuration, else its parent's, without resolving the path
                here = config_in(Path(directory))
                known = above if here is None else of(here, Path(directory))
            else:
                real = Path(directory).resolve()
                known = of(find(real), real)
        except ConfigError as exc:
            fail(str(exc))
        by_directory[directory] = known
        return known

    return settings_in


def selection_options(func: Any) -> Any:
    for option in reversed(
        [
            click.option(
                "--select",
                metavar="CODES",
                help="Rule codes or prefixes to enable (comma-separated), or ALL.",
            ),
            click.option("--ignore", metavar="CODES", help="Rule codes or prefixes to disable."),
            click.option(
                "--extend-select",
                metavar="CODES",
                help="Codes or prefixes to enable on top of the selection.",
            ),
            click.option(
                "--config",
                "config_file",
                type=click.Path(dir_okay=False, path_type=Path),
                help="Use this configuration file instead of discovering one.",
            ),
            click.option("--isolated", is_flag=True, help="Ignore all configuration files."),
            click.option(
                "--unsafe-fixes/--no-unsafe-fixes",
                default=None,
                help="Include fixes that may change behaviour.",
            ),
            click.option(
                "--stdin-filename",
                metavar="NAME",
                help="The name of the file read from standard input (`-`).",
            ),
            click.option(
                "--force-exclude",
                is_flag=True,
                help="Apply `exclude` to files named on the command line too (pre-commit).",
            ),
            click.option(
                "--extend-exclude",
                metavar="PATTERNS",
                help="Patterns to exclude on top of the configured `exclude` (comma-separated).",
            ),
            click.option(
                "--respect-gitignore/--no-respect-gitignore",
                default=None,
                help="Skip the files .gitignore ignores (default: on, `respect-gitignore`).",
            ),
            click.option("--no-cache", is_flag=True, help="Do not read or write the result cache."),
            click.option("--quiet", "-q", is_flag=True, help="Print findings only, no summary."),
        ]
    ):
        func = option(func)
    return func


jobs_option = click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes for linting (default: one per available CPU).",
)


def common(
    paths: Sequence[str],
    select: str | None,
    ignore: str | None,
    extend_select: str | None,
    config_file: Path | None,
    isolated: bool,
    unsafe_fixes: bool | None,
    stdin_filename: str | None,
    extend_exclude: str | None = None,
    respect_gitignore: bool | None = None,
) -> Common:
    paths = list(paths) or ["."]
    stdin = paths == ["-"]
    if "-" in paths and not stdin:
        fail("`-` (standard input) cannot be combined with other paths")
    try:
        cli = Selection(
            select=parse_codes(select, "--select"),
            extend_select=parse_codes(extend_select, "--extend-select") or (),
            ignore=parse_codes(ignore, "--ignore") or (),
        )
    except ConfigError as exc:
        fail(str(exc))
    if PARSE_ERROR in cli.ignore:
        click.echo(
            f"accel-lint: warning: {PARSE_ERROR} (parse-error) cannot be turned off: a file "
            "that cannot be read or parsed is always reported",
            err=True,
        )
    if stdin:
        anchor = Path(stdin_filename).resolve().parent if stdin_filename else Path.cwd()
    else:
        anchor = Path(os.path.commonpath([os.path.abspath(p) for p in paths]))
    excluded = [p.strip() for p in (extend_exclude or "").split(",") if p.strip()]

    def load(config_path: Path | None, search_from: Path) -> Settings:
        settings = load_settings(
            config_path=config_path,
            search_from=search_from,
            cli=cli,
            unsafe_fixes=unsafe_fixes,
            isolated=isolated,
            extend_exclude=excluded,
        )
        if respect_gitignore is not None:
            settings = replace(settings, respect_gitignore=respect_gitignore)
        return settings

    try:
        settings = load(config_file, anchor)
    except ConfigError as exc:
        fail(str(exc))
    settings_in = None
    if config_file is None and not isolated and not stdin:
        settings_in = _resolver(settings, load)
    return Common(settings, paths, stdin, stdin_filename, settings_in)


def warn_if_empty(files: Sequence[str], paths: Sequence[str]) -> None:
    if not files:
        click.echo(f"accel-lint: warning: No Python files found under {', '.join(paths)}", err=True)


def stdin_excluded(shared: Common, force_exclude: bool) -> bool:
    """`--force-exclude` applies to standard input too, by its `--stdin-filename`
    (what editors and pre-commit pass): an excluded name is neither linted nor fixed."""
    return (
        shared.stdin
        and force_exclude
        and shared.stdin_filename is not None
        and shared.settings.is_excluded(shared.stdin_filename)
    )


def internal_error(path: str, trace: str) -> None:
    click.echo(
        f"accel-lint: error: internal error while linting {path}; this is a bug in accel-lint, "
        f"please report it with the file.\n{trace}",
        err=True,
    )


def describe_settings(settings: Settings, files: Sequence[str]) -> str:
    """`--show-settings`: where the settings come from, what they resolve to, and the
    rules each file is checked with (after per-file-ignores)."""
    lines = [
        f"Configuration file: {settings.config_file or '(none: defaults)'}",
        *(f"Extends: {p}" for p in settings.extended),
        f"Project root: {settings.root}",
        f"Enabled rules: {', '.join(sorted(settings.enabled)) or '(none)'}",
        f"Unsafe fixes: {str(settings.unsafe_fixes).lower()}",
        "Target torch: "
        + (".".join(map(str, settings.target_torch)) if settings.target_torch else "latest")
        + f" (from {settings.target_torch_from})",
        f"Respect .gitignore: {str(settings.respect_gitignore).lower()}",
        f"Exclude: {', '.join(settings.exclude)}",
    ]
    for pattern, codes in settings.per_file_ignores:
        lines.append(f"Per-file ignores: {pattern} = {', '.join(sorted(codes))}")
    for code, options in sorted(settings.rule_options.items()):
        for key, value in sorted(options.items()):
            lines.append(f"Rule option: {code}.{key} = {value!r}")
    for path in files:
        codes = settings.codes_for(path)
        if codes != settings.enabled:
            lines.append(f"{path}: {', '.join(sorted(codes)) or '(no rules)'}")
        else:
            lines.append(f"{path}: every enabled rule")
    return "\n".join(lines) + "\n"


def warn(path: str, note: str) -> None:
    click.echo(f"accel-lint: warning: {path}: {note}", err=True)


def settings_of(shared: Common, path: str) -> Settings:
    return shared.resolve(path)


def apply_baseline(
    shared: Common,
    found: list[Diagnostic],
    given: Path | None,
    line_of: Callable[[Diagnostic], str],
    quiet: bool,
) -> list[Diagnostic]:
    """`found` less what the baseline records (`--baseline FILE`, else each file's
    configured `baseline`); says on standard error how many were hidden."""
    by_file: dict[Path | None, list[int]] = {}
    for i, d in enumerate(found):
        chosen = given if given is not None else settings_of(shared, d.filename).baseline
        by_file.setdefault(chosen, []).append(i)
    if set(by_file) <= {None}:
        return found
    keep = [True] * len(found)
    for path, indices in by_file.items():
        if path is None:
            continue
        try:
            baseline = Baseline.load(path)
        except BaselineError as exc:
            fail(str(exc))
        kept, hidden = baseline.split([found[i] for i in indices], line_of)
        kept_ids = {id(d) for d in kept}
        for i in indices:
            keep[i] = id(found[i]) in kept_ids
        if not quiet:
            click.echo(
                f"accel-lint: {hidden} finding{'s' if hidden != 1 else ''} hidden by the "
                f"baseline {path}",
                err=True,
            )
    return [d for d, k in zip(found, keep) if k]
