"""`accel-lint server`: the language server for editors (stdio)."""

from __future__ import annotations

import click


@click.command("server")
def server_cmd() -> None:
    """Run the language server on standard input and output (for editors)."""
    try:
        from accel_lint.server import serve
    except ImportError as exc:  # pygls is the `server` extra
        raise click.ClickException(
            f"the language server needs pygls: pip install 'accel-lint[server]' ({exc})"
        ) from None
    serve()
