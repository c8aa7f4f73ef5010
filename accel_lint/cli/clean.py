"""`accel-lint clean`: remove the result cache."""

from __future__ import annotations

import shutil
from pathlib import Path

import click

from accel_lint.cache import cache_dir
from accel_lint.cli.common import common


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@click.option("--config", "config_file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--isolated", is_flag=True, help="Ignore all configuration files.")
def clean(paths: tuple[str, ...], config_file: Path | None, isolated: bool) -> None:
    """Remove the cache `check` keeps (beside the configuration, or ACCEL_LINT_CACHE_DIR)."""
    settings = common(paths, None, None, None, config_file, isolated, None, None).settings
    directory = cache_dir(settings)
    if not directory.is_dir():
        click.echo(f"No cache at {directory}.", err=True)
        return
    if not (directory / "CACHEDIR.TAG").is_file():
        # not a directory accel-lint made: never remove what is not ours
        click.echo(f"accel-lint: error: {directory} has no CACHEDIR.TAG; not removed", err=True)
        raise SystemExit(2)
    shutil.rmtree(directory)
    click.echo(f"Removed {directory}.", err=True)
