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
    labels_table,
    load_queue,
    log_path,
    read_events,
    resolve,
    vetted_instances,
)
from fbi.vet._hub import (
    dataset_card,
    upload,
    write_hub_folder,
)

