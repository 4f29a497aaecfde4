"""What `fbi trust` is asked: one settings object, checked when made."""

from __future__ import annotations

from dataclasses import dataclass

from fbi.errors import InputError
from fbi.trust._calibration import GRIDS, MIN_ITEMS

CONFIDENCES = ("auto", "samples", "logprob", "jury")


@dataclass(frozen=True)
class TrustSettings:
    """What `fbi trust` is asked: one settings object, checked when made."""

    target: float = 0.8
    """The human agreement to guarantee."""
    delta: float = 0.1
    """The guarantee holds with probability at least 1 − delta."""
    confidence: str = "auto"
    """``samples``, ``logprob``, ``jury`` or ``auto`` (jury for several runs, else samples
    when the run has them, else logprob)."""
    test_share: float = 0.5
    """Share of the labelled instances held out to check the threshold."""
    seed: int = 0
    """Seeds the calibration / test split."""
    min_items: int = MIN_ITEMS
    """Thresholds with fewer calibration items at or above them are not tried."""
    width: float = 0.1
    """The planner's target interval width."""
    grid: str = "auto"
    """The thresholds the fixed sequence tries (`fbi.trust.calibrate`): ``auto``
    (``multistart`` for a continuous confidence, else ``distinct``), ``multistart``,
    ``coarse``, ``distinct`` or ``authors``."""

    def __post_init__(self) -> None:
        for name in ("target", "delta"):
            value = getattr(self, name)
            if not 0 < value < 1:
                raise InputError(f"--{name} {value}: must lie strictly between 0 and 1 "
                                 f"(e.g. --target 0.8 --delta 0.1)")
        if not 0 <= self.test_share < 1:
            raise InputError(f"--test-share {self.test_share}: must be in [0, 1)")
        if self.confidence not in CONFIDENCES:
            raise InputError(f"--confidence {self.confidence}: one of "
                             f"{', '.join(CONFIDENCES)}")
        if self.grid not in GRIDS:
            raise InputError(f"--grid {self.grid}: one of {', '.join(GRIDS)}")
        if self.min_items < 1 or not 0 < self.width < 1:
            raise InputError("--min-items must be at least 1 and --width in (0, 1)")
