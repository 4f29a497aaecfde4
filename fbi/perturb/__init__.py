"""The perturbation stage: the rule engine (rules/, one module per family), the LLM
engine (templates in perturbations/), the pre-screen, and the rules that plant errors in
agents' trajectories (issue 54).
"""

from fbi.perturb._generate import (
    RESPONSE_SCHEMA,
    CategoryTally,
    Engine,
    Job,
    PerturbationCall,
    PerturbConfig,
    Perturber,
    PerturbResult,
    parse_perturbation,
    plan_jobs,
    read_perturbation,
)
from fbi.perturb._manipulate import (
    is_manipulation,
    manipulate,
    manipulated_queue,
    manipulation_kinds,
    manipulations,
)
from fbi.perturb._prescreen import (
    CHANGE_ELSEWHERE,
    ENTITIES_CHANGED,
    EXPECTED_KIND,
    FORMATTING_LOST,
    IDENTICAL,
    LENGTH_DRIFT,
    META_TEXT,
    NUMBERS_CHANGED,
    RATIONALE_NOT_IN_ANSWER,
    change_kinds,
    prescreen,
)
from fbi.perturb._trajectories import (
    TRAJECTORY_RULES_VERSION,
    TrajectoryEdit,
    perturb_trajectory,
    prescreen_trajectory,
    trajectory_candidates,
    trajectory_categories,
    trajectory_flags,
)
from fbi.perturb._trajectory_llm import TrajectoryPerturber
