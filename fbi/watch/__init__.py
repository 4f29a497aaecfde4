"""Watching a deployed judge (`fbi watch`): a canary set asked step after step, and an
alarm, with anytime-valid control of false alarms, when the judge's behaviour changed."""

from fbi.faces import verb_package
from fbi.watch._evidence import (
    ChangeEvidence,
    change_evidence,
    combined_log_e,
    log_start_weight,
)
from fbi.watch._history import WATCH_FILE, StreamStep, WatchStep, read_history
from fbi.watch._watch import Watch, WatchConfig, WatchOutcome, watch

verb_package(__name__)  # fbi.watch(...) is fbi.watch.watch(...)
