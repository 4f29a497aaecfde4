"""The `fbi` command: thin click commands over the library, one module per group.

Errors the library raises on purpose become one message and an exit code (2 for input
and configuration errors); nothing prints a traceback to a user.
"""

from __future__ import annotations

import os
import signal
import sys
import warnings

import click
from rich.markup import escape

from fbi import __version__
from fbi.cli._console import err_console
from fbi.errors import ConfigError, FbiError, FbiWarning, InputError, Terminated


class FbiGroup(click.Group):
    """A click group that turns fbi's errors into a message and an exit code."""

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
    raises :class:`Terminated`; inside one, the runner's own handler stops it gracefully."""
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


def _register() -> None:
    from fbi.cli import (
        annotate,
        batch,
        cache,
        catalog,
        datasets,
        evaluate,
        perturb,
        publish,
        report,
        robustness,
        show,
    )

    for command in (datasets.datasets, evaluate.evaluate, catalog.strategies,
                    catalog.categories, report.report, report.explain_check, perturb.perturb,
                    annotate.annotate, publish.publish, robustness.robustness, cache.cache,
                    batch.batch, show.show):  # the order of `fbi --help`
        main.add_command(command)

_register()
