"""The `fbi` command: thin click commands over the library, one module per group.

Errors the library raises on purpose become one message and an exit code (2 for input
and configuration errors); nothing prints a traceback to a user.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import warnings

import click
from rich.markup import escape

from fbi import __version__
from fbi.cli._console import err_console
from fbi.errors import ConfigError, FbiError, FbiWarning, InputError, Terminated
from fbi.registry import Registry


class FbiGroup(click.Group):
    """A click group that turns fbi's errors into a message and an exit code, and loads
    each command from `COMMANDS` when it is first asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS.names(), *self.commands})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.commands and name in COMMANDS:
            self.add_command(COMMANDS[name], name)
        return super().get_command(ctx, name)

    def resolve_command(self, ctx: click.Context, args: list[str]):
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            from fbi.taxonomy import did_you_mean

            ctx.fail(f"No such command {name!r}.{did_you_mean(name, self.list_commands(ctx))}")
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: click.Context):
        _handle_sigterm()
        _handle_second_ctrl_c()
        _show_warnings()
        try:
            return super().invoke(ctx)
        except (InputError, ConfigError) as error:
            err_console.print(f"[bold red]error:[/] {escape(str(error))}", soft_wrap=True)
            sys.exit(2)
        except FbiError as error:
            err_console.print(f"[bold red]error:[/] {escape(str(error))}", soft_wrap=True)
            sys.exit(1)
        except OSError as error:  # the environment: a full disk, a read-only folder, ...
            where = f"{error.filename}: " if error.filename else ""
            reason = escape(where + (error.strerror or str(error)))
            err_console.print(f"[bold red]error:[/] {reason}. Fix: check the disk space and "
                              "the permissions of that path; finished work is saved",
                              soft_wrap=True)
            sys.exit(2)
        except KeyboardInterrupt as interruption:
            terminated = isinstance(interruption, Terminated)
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C changes nothing
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            err_console.print(f"{'terminated (SIGTERM)' if terminated else 'interrupted'}; "
                              "finished work is saved, run the same command to resume")
            # Everything finished is on disk (each record is flushed as it is written).
            # Leave now rather than through interpreter shutdown, which waits for every
            # thread a provider SDK left behind: an interrupted call's reply can keep it
            # past the "within seconds" a Ctrl-C promises.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(143 if terminated else 130)


def _handle_sigterm() -> None:
    """SIGTERM (a scheduler, ``timeout``, ``kill``) as the first Ctrl-C: outside a run it
    raises `Terminated`; inside one, the runner's own handler stops it gracefully."""
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        def terminate(signum, frame):
            raise Terminated()

        signal.signal(signal.SIGTERM, terminate)


def _handle_second_ctrl_c() -> None:
    """Outside a run (start-up, the probe call), Ctrl-C raises KeyboardInterrupt as
    always, and a second one ends the process at once with 130, even when code between
    the two (a provider SDK importing or retrying) swallowed the first. Inside a run the
    runner's own handler takes over and restores this one after."""
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return
    pressed: list[bool] = []

    def interrupt(signum, frame):
        if pressed:
            sys.stderr.flush()
            os._exit(130)
        pressed.append(True)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, interrupt)


def _show_warnings() -> None:
    """fbi's own warnings as one ``warning:`` line each (Python's format names a source
    line a user has no use for); other libraries' as Python prints them."""
    default = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, FbiWarning):
            err_console.print(f"[yellow]warning:[/] {escape(str(message))}", soft_wrap=True)
        else:
            default(message, category, filename, lineno, file, line)

    if getattr(warnings.showwarning, "__name__", "") != "show":
        warnings.showwarning = show


@click.group(cls=FbiGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="fbi")
def main() -> None:
    """Find the blind spots of LLM judges (the FBI method and beyond)."""


def run() -> None:
    """The ``fbi`` program: `main`, then the process ends as Python would end it — its
    threads joined, its exit handlers run, its output flushed — but without tearing the
    interpreter down object by object. Everything fbi writes is written and closed when
    a command returns; the teardown of a large run's heap (litellm's modules, the
    dataset) took 0.7 s of a 14 s run at concurrency 256 (issue 39,
    ``benchmarks/transport_throughput.py``). A traceback (a bug) ends the usual way."""
    import atexit
    import threading

    try:
        main(prog_name="fbi")
        code = 0
    except SystemExit as exit_:
        code = exit_.code
    if code is None:
        code = 0
    elif not isinstance(code, int):  # what Python does with a message
        print(code, file=sys.stderr)
        code = 1
    shutdown = getattr(threading, "_shutdown", None)  # (CPython's own end: joins threads)
    if shutdown is not None:
        shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


#: Every command: a [`Registry`][fbi.registry.Registry] whose ``fbi.commands`` entry points
#: (``NAME = "module:attribute"``; fbi's own in its pyproject.toml, a plug-in package's
#: the same) are loaded when that command runs (or ``fbi --help`` lists them all), so
#: starting one does not pay for every other's imports: ``fbi evaluate`` never loads the
#: report's HTML and statistics.
COMMANDS: Registry[click.Command] = Registry("command", "fbi.commands")
