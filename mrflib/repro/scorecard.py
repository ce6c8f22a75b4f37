"""Labels of the reproduction scorecard: the papers' short titles and the verdict marks.

:func:`mrflib.repro.report.scorecard_markdown` uses them to render ``book/scorecard``.
"""

from __future__ import annotations

__all__ = ["PAPER_TITLES", "VERDICT_MARK"]

#: Short citation of each paper (the ``paper`` field of a recorded row) in the scorecard.
PAPER_TITLES = {
    "smci-learning-yasuda": "Yasuda 2018 (1-SMCI learning)",
    "gsmci-yasuda-uchizawa": "Yasuda & Uchizawa 2021 (GSMCI)",
    "fsll-takabatake-akaho": "Takabatake & Akaho 2022 (FSLL)",
    "lap-mizrahi-defreitas-tenorio": "Mizrahi et al. 2013 (LAP)",
    "higher-order-bounds-leisink-kappen": "Leisink & Kappen 2002 (bounds)",
}
#: How each verdict is shown: plain words (no emoji, which a browser without an emoji font
#: shows as empty boxes); the book styles them as badges (``book/_css/mrflib.css``).
VERDICT_MARK = {
    "reproduced": "reproduced",
    "reproduced in kind": "reproduced in kind",
    "not reproduced": "not reproduced",
    "new": "new (not in the paper)",
}
