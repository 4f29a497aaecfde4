"""`fbi stand-in`: the stand-in judge's server (fbi.standin)."""

from __future__ import annotations

import contextlib
import os
import sys

import click

from fbi.cli._console import console
from fbi.errors import ConfigError


@click.command("stand-in")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True,
              help="The port to serve on (0: any free one).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="The address to serve on (this machine only, by default).")
@click.option("--detach", is_flag=True,
              help="Return once the server listens, and keep it serving in the "
                   "background (stop it with the kill command it prints).")
def stand_in(port: int, host: str, detach: bool) -> None:
    """Serve a stand-in judge: an OpenAI-protocol server that answers every prompt fbi
    sends (a judge's, a perturber's, a QA model's) in the shape it asks for,
    deterministically and with no model behind it — for trying fbi, its guides and a
    pipeline's plumbing offline. Point a command at it with --api-base URL and any
    OPENAI_API_KEY. Its verdicts mean nothing."""
    from fbi.standin import StandIn

    try:
        server = StandIn(port, host)
    except OSError as error:
        raise ConfigError(f"cannot serve on {host}:{port} ({error.strerror}). Fix: give "
                          "another --port (0: any free one), or stop what serves there") \
            from None
    if detach:
        if not hasattr(os, "fork"):
            raise ConfigError("--detach needs a system with fork. Fix: run fbi stand-in "
                              "in a terminal of its own")
        child = os.fork()
        if child:
            console.print(f"stand-in judge at {server.url} (pid {child}; stop it with: "
                          f"kill {child})", highlight=False, soft_wrap=True)
            sys.stdout.flush()
            os._exit(0)
        os.setsid()  # its own session: the shell that started it may end
        devnull = os.open(os.devnull, os.O_RDWR)
        for stream in (0, 1, 2):
            os.dup2(devnull, stream)
    else:
        console.print(f"stand-in judge at {server.url} — Ctrl-C stops it", highlight=False)
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C ends it: nothing to resume
        server.serve()
