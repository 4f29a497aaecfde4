"""The vetting stage: annotators' event logs and their folded state, adjudication,
the vetted set, and publishing it to the Hugging Face Hub.
"""

from fbi.vet._events import (
    LABEL_KEYS,
    LABELS,
    Action,
    Adjudication,
    AnnotationEvent,
    AnnotatorLog,
    ExportTally,
    ItemState,
    Resolution,
    adjudications_path,
    all_annotator_logs,
    check_annotator,
    fold,
    labels_table,
    load_queue,
    log_path,
    read_events,
    resolve,
    vetted_instances,
)
from fbi.vet._hub import (
    COLUMN_DOCS,
    check_license,
    check_repo_id,
    config_of,
    dataset_card,
    split_name,
    upload,
    write_hub_folder,
)

