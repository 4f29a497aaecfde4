"""The peak resident memory of this process, as every benchmark here reports it.

Not ``resource.getrusage(RUSAGE_SELF).ru_maxrss``: Linux carries the peak of the
process that spawned a child over into the child across ``exec`` (it is kept per
process group of threads, not per address space), so a child started by a benchmark
that had just written a 3 GB dataset reported 3 GB however little it used itself. The
kernel's ``VmHWM`` belongs to the address space, which ``exec`` replaces.
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
