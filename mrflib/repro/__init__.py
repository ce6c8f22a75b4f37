"""The reproduction harness: per-paper experiments, paper tables and scorecard labels.

Code that runs the papers' experiments for the book (trials, the papers' own numbers, the
pgmpy baseline, the chapters' scorecard recorder) lives here, apart from the algorithm
modules of :mod:`mrflib`.
"""

from .chapter import Chapter
from .trials import Trials

__all__ = ["Chapter", "Trials"]
