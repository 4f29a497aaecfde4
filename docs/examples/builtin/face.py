"""`fbi gold-audit`: whether each gold answer of a dataset is correct (a stage of its
own; docs/contributing.md's built-in example). A package's face: the names it imports
from its own modules are its public names."""

from fbi.audit._stage import GoldAudit, GoldAuditStage  # noqa: F401  (the face)
