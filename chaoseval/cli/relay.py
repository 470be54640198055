"""``chaoseval mcp-relay``: the stdio face of a trial's MCP tools (chaoseval.channels.mcp.relay)."""

from __future__ import annotations

from typing import Annotated

import typer


def mcp_relay(
    url: Annotated[
        str | None,
        typer.Argument(
            help="the trial's MCP URL (default: $CHAOSEVAL_MCP_URL)", show_default=False
        ),
    ] = None,
) -> None:
    """Serve a trial's MCP tools on stdin/stdout, for agents that launch MCP servers as commands."""
    from chaoseval.channels.mcp.relay import main  # the mcp SDK loads only for this command

    main(url)


def register(app: typer.Typer) -> None:
    app.command("mcp-relay")(mcp_relay)
