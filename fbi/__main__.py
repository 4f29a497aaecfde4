"""`python -m fbi` runs the command line."""

from fbi.cli import run

run()
