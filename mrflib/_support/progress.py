"""Progress of long loops, reported only when a caller asks for it (``solve`` does).

A loop makes a :func:`ticker` and calls it once per step with the work done so far; with no
:func:`reporting` in effect the ticker does nothing but compare a number, so the library's
loops pay nothing for it. Inside ``with reporting(say, every=5.0)``, ``say`` gets a line at
most every ``every`` seconds (``"upward pass: 42% of the clique tables"``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

__all__ = ["active", "reporting", "ticker"]

_state: dict = {"say": None, "every": 5.0, "next": 0.0}


@contextlib.contextmanager
def reporting(say: Callable[[str], None], every: float = 5.0) -> Iterator[None]:
    """Send progress lines to ``say`` (at most one every ``every`` seconds) in the block."""
    old = dict(_state)
    _state.update(say=say, every=float(every), next=time.monotonic() + every)
    try:
        yield
    finally:
        _state.update(old)


def ticker(what: str, total: float,
           detail: Callable[[], str] | None = None) -> Callable[[float], None]:
    """A function ``tick(done)`` for a loop over ``total`` units of work (``what`` names
    it): reports ``done / total`` when a line is due, else returns at once. ``detail``,
    called only when a line is due, adds to it (``" (step 341 of 10000)"``)."""
    if _state["say"] is None or total <= 0:
        return _nothing

    def tick(done: float) -> None:
        now = time.monotonic()
        if now >= _state["next"]:
            _state["next"] = now + _state["every"]
            _state["say"](f"{what}: {100.0 * done / total:.0f}% done"
                          + (detail() if detail is not None else ""))
    return tick


def active() -> bool:
    """Whether a :func:`reporting` block is in effect (a caller asked for lines)."""
    return _state["say"] is not None


def _nothing(done: float) -> None:
    return None
