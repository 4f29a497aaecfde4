"""fbi's runs and suites in other tools. Inspect (the ``inspect`` extra):

* `export_inspect` — judge runs as Inspect eval logs (`fbi export inspect`);
* the task ``fbi/fbi_judge`` (`fbi.interop._inspect_task`, registered with Inspect by
  the package's ``inspect_ai`` entry point) — fbi's protocol run by any Inspect model.

A layer above the stages: it re-renders calls through the judge stage's face.
"""

from fbi.interop._inspect_log import export_inspect, run_as_eval_log

