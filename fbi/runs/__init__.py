"""The run harness every model-calling stage goes through (evaluate, explain-check,
perturb, robustness).

* `fbi.runs._folder` — where a run folder is validated: the typed spec, the
  same-run guard, the one-writer lock;
* `fbi.runs._execute` — where a model reply becomes a record ([`record_of`][fbi.runs.record_of]),
  and how calls run: concurrency, budget, dry run, progress, interruption;
* `fbi.runs._read` — reading a judge run folder back for analysis;
* `fbi.runs._batch` — the same calls through a provider's batch API;
* `fbi.runs._stage` — the stage protocol ([`Stage`][fbi.runs.Stage], its
  [`Phase`][fbi.runs.Phase] logs) and what every stage does around its calls
  ([`run_stage`][fbi.runs.run_stage], [`price_stage`][fbi.runs.price_stage]);
  the one registry of stages by kind ([`stage_kinds`][fbi.runs.stage_kinds]), which
  every list of run kinds reads.

Logs are written and read with the core's one JSONL policy, `fbi.logs`.
"""

from fbi.runs._batch import (
    BatchOptions,
    BatchRecord,
    BatchRunner,
    batches_path,
    read_batches,
)
from fbi.runs._execute import (
    Call,
    DryRun,
    Parsed,
    Progress,
    RunTotals,
    dry_run,
    estimate_from_sample,
    execute,
    finished_ids,
    perform,
    record_of,
    sampled_dry_run,
)
from fbi.runs._folder import (
    RunBusy,
    RunFolder,
    now,
    read_spec,
)
from fbi.runs._labels import label_runs
from fbi.runs._read import Run, load_run
from fbi.runs._stage import (
    Phase,
    Stage,
    StageFolder,
    check_folder,
    price_stage,
    run_stage,
    stage_kind,
    stage_kinds,
    stopped,
)

