"""`fbi hunt`: an adaptive search for the edits a judge misses (issue 40).

A search built on two stages: it edits gold answers with the perturb stage's rules and
manipulations (`fbi.hunt._edits`) and judges the edits with the judge stage's protocol
(`fbi.hunt._hunt`); which edits to try next is the search's (`fbi.hunt._search`), and
what it may claim is the held-out confirmation's (`fbi.hunt._confirm`). No stage imports
it; the CLI and a Python caller run it like any stage.
"""

from fbi.hunt._confirm import holm
from fbi.hunt._edits import AXES, Edit, EditSpace, Operator, describe, error_rules, matches
from fbi.hunt._hunt import Hunt, HuntConfig, HuntStatus
from fbi.hunt._search import Observation, Search, candidates

__all__ = ["AXES", "Edit", "EditSpace", "Hunt", "HuntConfig", "HuntStatus",
           "Observation", "Operator", "Search", "candidates", "describe", "error_rules",
           "holm", "matches"]
