"""Warnings that are part of a result: recorded with it instead of printed.

Some experiments meet an expected condition that the library warns about (a maximum
likelihood estimate that does not exist for a small sample, an auxiliary fit that does not
converge). A trial reports such a warning beside its numbers, where the chapter can count
and discuss it, rather than on stderr, where a published page would show the build's paths.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator

__all__ = ["recorded"]


@contextlib.contextmanager
def recorded(category: type[Warning] = RuntimeWarning) -> Iterator[list[str]]:
    """Collect the messages of the ``category`` warnings raised in the block (every one,
    repeats included) into the list this yields; other warnings are re-issued unchanged
    when the block ends."""
    notes: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", category)
        yield notes
    for w in caught:
        if issubclass(w.category, category):
            notes.append(str(w.message))
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
