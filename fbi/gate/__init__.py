"""`fbi gate`: a regression gate for CI — judge a fixed suite again and fail when the
judge got significantly worse than a baseline run (paired exact tests per category and
overall, Holm). Above the stages: it drives the judge stage through its face."""

from fbi.faces import verb_package
from fbi.gate._compare import (
    EvidenceRow,
    GateResult,
    GateRow,
    compare_outcomes,
    compare_runs,
    evidence_rows,
)
from fbi.gate._gate import (
    GateOutcome,
    GateSettings,
    baseline_run,
    gate,
    gate_evaluation,
    suite_of,
    verified_run,
    write_gate,
)

verb_package(__name__)  # fbi.gate(...) is fbi.gate.gate(...)
