"""`fbi view`: the runs in a local web app (fbi.view)."""

from __future__ import annotations

from pathlib import Path

import click
from rich.markup import escape

from fbi.cli._console import console, err_console


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Where to listen. Anything but loopback lets other machines read every "
                   "run served.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535),
              help="The port; 0 takes a free one.")
@click.option("--human", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="Human labels (as `fbi report --human`) to show beside the replies.")
def view(paths, host, port, human) -> None:
    """Browse run folders in a local web app: every run under PATHS (default fbi-runs),
    each judge's category × strategy grid, the instances behind every figure with
    filters, and one instance's answers (word diff) and every judge's replies.
    Read-only: nothing in a run folder is written. Ctrl-C stops it."""
    from fbi.errors import InputError
    from fbi.view import Viewer, ViewServer

    if not paths:
        if not Path("fbi-runs").is_dir():
            raise InputError("no run folder given and no fbi-runs/ here. Fix: `fbi view "
                             "FOLDER` (a run folder, or a folder holding runs)")
        paths = (Path("fbi-runs"),)
    viewer = Viewer(paths, human=human)
    if human is not None:  # a bad label file: said now, not on the first page
        viewer.check_human()
    server = ViewServer(viewer, host, port)
    if host.strip("[]") not in ("127.0.0.1", "localhost", "::1"):
        err_console.print(f"[yellow]warning:[/] listening on {escape(host)}: anyone who "
                          "reaches this machine can read every run served (replies, "
                          "datasets, costs). Nothing asks for a password.", soft_wrap=True)
    # the intervals' library (a second to import), loaded before the URL is shown so
    # that the first grid opened does not wait for it
    import scipy.stats  # noqa: F401

    judge_runs = sum(e.judgeable for e in viewer.entries.values())
    runs = len(viewer.entries)
    console.print(f"fbi view: {runs} run{'s' * (runs != 1)} ({judge_runs} judge "
                  f"run{'s' * (judge_runs != 1)}) at "
                  f"[bold]{server.url}[/] — Ctrl-C stops it", soft_wrap=True, highlight=False)
    viewer.warm()
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        console.print("fbi view: stopped")
    finally:
        server.server_close()
