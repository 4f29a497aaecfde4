"""`python -m fbi` runs the command line."""

from fbi.cli import main

main(prog_name="fbi")
