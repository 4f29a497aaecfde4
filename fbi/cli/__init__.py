"""The `fbi` command: thin click commands over the library, one module per group.

Errors the library raises on purpose become one message and an exit code (2 for input
and configuration errors); nothing prints a traceback to a user.
"""

from __future__ import annotations

import signal
import sys

import click
from rich.console import Console
from rich.markup import escape

from fbi import __version__
from fbi.errors import ConfigError, FbiError, InputError

err_console = Console(stderr=True, highlight=False)


class FbiGroup(click.Group):
    """A click group that turns fbi's errors into a message and an exit code."""

    def invoke(self, ctx: click.Context):
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
        except KeyboardInterrupt:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C changes nothing
            err_console.print("interrupted; finished work is saved, run the same command to "
                              "resume")
            sys.exit(130)


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

    main.add_command(datasets.datasets)
    main.add_command(evaluate.evaluate)
    main.add_command(catalog.strategies)
    main.add_command(catalog.categories)
    main.add_command(report.report)
    main.add_command(report.explain_check)
    main.add_command(perturb.perturb)
    main.add_command(annotate.annotate)
    main.add_command(publish.publish)
    main.add_command(robustness.robustness)
    main.add_command(cache.cache)
    main.add_command(batch.batch)
    main.add_command(show.show)


_register()
