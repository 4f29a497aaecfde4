"""`fbi hunt`: an adaptive search for the edits a judge misses (issues 40 and 49).

A search built on two stages: it edits gold answers with the perturb stage's rules, the
hunt's own operators and the manipulations, placed where a description says
(`fbi.hunt._operators`), and judges the edits with the judge stage's protocol
(`fbi.hunt._hunt`). Every probe is described by predicates (`fbi.hunt._predicates`,
`fbi.hunt._structure`: where the change lies, what it touches, the answer, how it was
judged); the search finds the descriptions the judge misses by subgroup discovery with
explaining away (`fbi.hunt._discovery`, `fbi.hunt._search`) and confirms them on held-out
items (`fbi.hunt._confirm`, `fbi.hunt._findings`). Over agents' trajectories, the
trajectory rules are the operators and the predicates say which step an edit changed
(`fbi.hunt._trajectory_edits`). No stage imports it; the CLI and a Python caller run it
like any stage.
"""

from fbi.faces import verb_package
from fbi.hunt._config import DEFAULT_BUDGET, HuntConfig
from fbi.hunt._confirm import margin_test
from fbi.hunt._discovery import cover, score_all
from fbi.hunt._hunt import Hunt, HuntStatus
from fbi.hunt._operators import Edit, Operator, error_operators, hunt_rule
from fbi.hunt._predicates import PREDICATES, EditView, Predicate, describe, predicate
from fbi.hunt._structure import PLACES, Place, place
from fbi.hunt._verb import HuntOutcome, hunt, plan_hunt

verb_package(__name__)  # fbi.hunt(...) is fbi.hunt.hunt(...)
