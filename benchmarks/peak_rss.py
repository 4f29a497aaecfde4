"""The peak resident memory of this process, as every benchmark here reports it.

Not ``resource.getrusage(RUSAGE_SELF).ru_maxrss``: Linux keeps that figure per thread
group and folds the spawning process's peak into the child's at ``exec``, so a dry run
started by a benchmark that had just built a 963 MB dataset (3 GB resident) reported
3 GB, though it peaked at 857 MB. The kernel's ``VmHWM`` belongs to the address space,
which ``exec`` replaces.
"""

from __future__ import annotations

from pathlib import Path


def peak_rss_mb() -> float:
    """This process's own peak resident set size, in MB (``VmHWM``, Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise SystemExit("peak RSS needs Linux's /proc/self/status (VmHWM)")


#: Put first in a ``python -c`` child's code: makes :func:`peak_rss_mb` importable there.
IMPORTABLE_IN_CHILD = f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
