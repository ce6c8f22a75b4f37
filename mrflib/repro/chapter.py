"""A chapter's recorder: the scorecard rows of one notebook without repeating its names.

``Chapter("lap", "lap-mizrahi-defreitas-tenorio", profile).record(item, quantity, paper_value,
ours, verdict, note)`` is :func:`mrflib.experiments.record` with the chapter, the paper and
the profile filled in once per notebook.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from .. import experiments

__all__ = ["Chapter"]


@dataclass(frozen=True)
class Chapter:
    """The scorecard recorder of one notebook.

    Parameters
    ----------
    chapter : str
        The notebook's file stem (the scorecard links to it).
    paper : str
        The paper's file stem most rows refer to (a row may name another with ``paper=``).
    profile : str
        The notebook profile the numbers are measured in (``"quick"``, ``"book"``,
        ``"paper"``).
    """

    chapter: str
    paper: str
    profile: str = ""

    def __post_init__(self) -> None:
        for name in ("chapter", "paper"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise ValueError(f"{name} must be a non-empty string, got {value!r}")
        if self.profile and self.profile not in experiments.PROFILES:
            raise ValueError(f"profile must be one of {experiments.PROFILES}, "
                             f"got {self.profile!r}")

    def record(self, item: str, quantity: str, paper_value: Any, ours: Any, verdict: str,
               note: str = "", *, paper: str | None = None) -> None:
        """Record one reproduced number (:func:`mrflib.experiments.record`).

        ``paper`` overrides the chapter's paper for this row.
        """
        experiments.record(self.chapter, self.paper if paper is None else paper, item,
                           quantity, paper_value, ours, verdict, note, profile=self.profile)

    def records(self) -> pd.DataFrame:
        """This chapter's rows recorded in this process."""
        return experiments.records(self.chapter)
