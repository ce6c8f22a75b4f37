"""A chapter's recorder: the scorecard rows of one notebook without repeating its names.

``Chapter("lap", "lap-mizrahi-defreitas-tenorio", profile).record(item, quantity, paper_value,
ours, verdict, note)`` is :func:`mrflib.repro.experiments.record` with the chapter, the paper and
the profile filled in once per notebook.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from mrflib._support.optional import optional_import

from . import experiments
from .scorecard import chapter_conclusion
from .trials import Trials

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
    _runs: list[Trials] = field(default_factory=list, repr=False, compare=False)

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
        """Record one reproduced number (:func:`mrflib.repro.experiments.record`).

        ``paper`` overrides the chapter's paper for this row. In a chunk of a chunked run
        (:meth:`trials` with ``n_chunks > 1``) nothing is recorded: the numbers describe only
        a part of the trials.
        """
        if self.partial:
            return
        experiments.record(self.chapter, self.paper if paper is None else paper, item,
                           quantity, paper_value, ours, verdict, note, profile=self.profile)

    def trials(self, seed: int, chunk: int | None = None, n_chunks: int | None = None,
               cache: str | Path | None = None) -> Trials:
        """The chapter's trial loops (:class:`~mrflib.repro.trials.Trials`) for ``seed``.

        A chapter passes only its ``seed``: the chunk and the store of a paper run come from
        the environment the paper runner sets (:func:`~mrflib.repro.trials.run_settings`).
        Progress lines are printed in the ``paper`` profile.
        """
        run = Trials(self.chapter, seed, chunk=chunk, n_chunks=n_chunks, cache=cache,
                     progress=self.profile == "paper")
        self._runs.append(run)
        return run

    @property
    def partial(self) -> bool:
        """True if this notebook runs as one chunk of a chunked run (it records nothing)."""
        return any(run.partial for run in self._runs)

    def conclusion(self) -> str:
        """The chapter's closing paragraph from its records
        (:func:`mrflib.repro.scorecard.chapter_conclusion`)."""
        return chapter_conclusion(self.chapter)

    def glue_conclusion(self, name: str = "conclusion") -> None:
        """Glue :meth:`conclusion` as Markdown under ``name`` for the chapter's closing cell
        (`` ```{glue:md} conclusion`` with ``:format: myst``), shown nowhere else."""
        glue = optional_import("myst_nb", "a chapter's generated conclusion", "book").glue
        from IPython.display import Markdown

        glue(name, Markdown(self.conclusion()), display=False)

    def records(self) -> pd.DataFrame:
        """This chapter's rows recorded in this process."""
        return experiments.records(self.chapter)
