"""The QA robustness stage: QA items, question variants, answering them through the
run harness, and scoring the answers with fbi.metrics.
"""

from fbi.robustness._embeddings import load_embedder
from fbi.robustness._items import (
    Judge,
    Kind,
    QAItem,
    load_qa_items,
    parse_letter,
    parse_reply,
    token_f1,
)
from fbi.robustness._scoring import (
    SUITES,
    QAAnswer,
    answers_frame,
    score_answer,
    score_answers,
    summarise,
    summarise_frame,
)
from fbi.robustness._suites import (
    AnswerJob,
    RewriteCall,
    RobustnessConfig,
    RobustnessRun,
    planned_suites,
)
from fbi.robustness._variants import (
    NOISE_KINDS,
    Variant,
    add_noise,
    noise_variants,
    original,
    rephrase_variants,
    shuffle_variants,
)

