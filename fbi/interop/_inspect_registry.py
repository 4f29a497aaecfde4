"""What Inspect imports through fbi's ``inspect_ai`` entry point: fbi's tasks, so that
``inspect eval fbi/fbi_judge`` finds them once fbi is installed."""

from fbi.interop._inspect_task import fbi_judge

__all__ = ["fbi_judge"]
