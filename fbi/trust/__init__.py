"""Trusting a judge: from judge runs and human labels to a decision (`fbi trust`, and the
certificate of `fbi report --human`). When may a judge's verdict be taken without a person
(fixed-sequence testing, "Trust or Escalate", Jung et al. 2025), what is a metric computed
with the judge worth (PPI++, Angelopoulos et al. 2023; the plug-in correction), how many
labels would settle it, and which blind spots a certificate names. The human labels are
read here too. The terminal and file renderings of these results are the report's.
"""

from fbi.faces import verb_package
from fbi.trust._calibration import (
    Calibration,
    CascadeStage,
    SequenceStep,
    TrustItem,
    assign,
    binomial_upper,
    calibrate,
    cascade,
    human_majority,
    majority,
    verdict_probabilities,
)
from fbi.trust._certificate import certificates
from fbi.trust._evaluate import check_judges, trust, trust_runs
from fbi.trust._items import one_sided_labels
from fbi.trust._label_file import LabelFile, LabelRow
from fbi.trust._label_studio import (
    LABEL_CONFIG,
    MAPPING_FILE,
    label_studio_tasks,
    task_mapping,
)
from fbi.trust._labels import HumanSource, read_human_labels
from fbi.trust._models import (
    BlindSpot,
    CascadeJudge,
    Certificate,
    CorrectedEstimate,
    PlanRow,
    TrustReport,
    TrustResult,
)
from fbi.trust._ppi import (
    Estimate,
    classical_mean,
    effective_labels,
    plug_in_correction,
    ppi_mean,
)
from fbi.trust._sampling import PLAN_RULES, LabelPlan, label_plan, systematic_order
from fbi.trust._settings import TrustSettings

verb_package(__name__)  # fbi.trust(...) is fbi.trust.trust(...)
