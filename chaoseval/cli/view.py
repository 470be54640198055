"""``chaoseval view``: the runs, trials and clean twins under a folder, in the browser."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from chaoseval.cli._common import err, fail
from chaoseval.errors import ChaosevalError
from chaoseval.render.printable import escape


def view_cmd(
    directory: Annotated[
        Path, typer.Argument(help="the folder whose journals (*.jsonl) are shown")
    ] = Path("."),
    host: Annotated[
        str, typer.Option(help="the address to listen on (loopback unless you mean otherwise)")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="the port (0: any free one)")] = 8765,
    open_browser: Annotated[
        bool, typer.Option("--open", help="open the view in the default browser")
    ] = False,
) -> None:
    """Browse runs, trials beside their clean twins, comparisons and trends (a local web app;
    it reads the journals, never writes them, and follows a run as it is written)."""
    from chaoseval.view.serve import bind, exposure_warning, serve, url_of

    try:
        warning = exposure_warning(host)
        if warning:
            err.print(f"[yellow]warning:[/] {escape(warning)}", soft_wrap=True)
        sock = bind(host, port)
        # One line however long the folder's name: a reader (a script, a test) takes the URL
        # from it, and rich would wrap it at the terminal's width.
        where = f"chaoseval view of {escape(str(directory))} on {url_of(sock)}"
        err.print(where, highlight=False, soft_wrap=True)
        serve(directory, sock, host, open_browser=open_browser)
    except ChaosevalError as exc:
        fail(exc)


def register(app: typer.Typer) -> None:
    app.command("view")(view_cmd)
