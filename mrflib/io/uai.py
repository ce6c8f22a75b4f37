"""The UAI file format: models, evidence and the competition's answer files.

The UAI inference competitions' format describes a :class:`~mrflib.models.factor_graph.FactorGraph`
as text: a header ``MARKOV`` (or ``BAYES``), the number of variables, their cardinalities, the
number of factors, each factor's scope (its size, then its variables, numbered from 0), then
each factor's table (its entry count, then the entries, the **last** variable of the scope
changing fastest, i.e. C order of the axes in scope order). Entries are weights (or
conditional probabilities), not logs: :func:`read_uai` stores ``log(entry)`` (``0 -> -inf``)
and :func:`write_uai` writes ``exp(log_table)`` (a
:class:`~mrflib.models.boltzmann.BoltzmannMachine` as its factor graph, spin -1 as state 0).
A ``BAYES`` file is read like a ``MARKOV`` one (each conditional table is one factor, its
child the scope's last variable), once each table is checked to be a conditional
distribution: for each configuration of the parents, the child's entries must sum to 1
within :data:`BAYES_SUM_TOLERANCE` per entry, else the file is refused naming the function,
its scope, the parents' states and the sum. pgmpy's ``UAIWriter`` lists a table child
first (the child slowest, against its own scope's order), which this check refuses; a
table whose reordered rows still sum to 1 (a symmetric one) cannot be told from a right
one. pyAgrum's ``saveBN`` lists a table of two or more parents with the first parent
fastest after the child, against the format, with every row still summing to 1; its files
end every scope line with a ``# name`` comment, and a ``BAYES`` file whose every scope line
does so is read in pyAgrum's order. A ``MARKOV`` table may hold any weights.

Evidence files (``.evid``, UAI 2014 form): the number of observed variables, then
``variable value`` pairs; an empty file or ``0`` means none. The older form with a leading
sample count (``1``, then the same content) is also read: the two differ in the parity of
their token count (``1 + 2m`` against ``2 + 2m``), so they are never confused. Files with
several evidence samples are refused.

Answer files, UAI 2014 form, one per task (:data:`TASKS`): ``PR`` then ``log10 Z`` of the
model given the evidence; ``MAR`` then the number of variables and, for each, its
cardinality and its marginal probabilities (each summing to 1 within
:data:`MAR_SUM_TOLERANCE`); ``MPE`` then the number of variables and the
most probable state of each.

In every file read here, a ``#`` starts a comment to the end of its line, read as
whitespace wherever it stands (pyAgrum's ``saveBN`` writes one after each scope); line
numbers in errors count the comment lines. Other comment marks (``c ...``) are read as
tokens and refused where a number or keyword is expected (naming the line). Tokens are
separated by any whitespace (CRLF line ends are fine); a UTF-8 byte-order mark is skipped.
Table entries (and the numbers of answer files) are decimal numbers in ASCII digits (``1e-3``, not
``1_000``, hexadecimal or other scripts' digits such as ``١``); a positive entry too small
for float64 is refused rather than read as a zero weight. An error after the header adds
the variable and factor counts it declares, and their lines: a wrong count there misplaces
every later token.

Every reader takes a plain or gzip-compressed file (recognised by its first bytes, whatever
its name) and refuses a malformed one with a ``ValueError`` naming the file, the place in it
(line and token, or which factor's table and entry) and what was expected; sizes are checked
against the available memory before a table is converted. Writers write atomically
(:func:`mrflib._support.files.atomic_write`) and gzip when the name ends in ``.gz``. This
text layer, which every file kind shares, is :mod:`mrflib.io._uai_text`.

pgmpy's models and its BIF and XMLBIF files are read in :mod:`mrflib.io.pgmpy_models`.
"""

from __future__ import annotations

import bisect
import math
import os
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from mrflib._support.validation import available_memory, format_count, require_memory
from mrflib.io._answers import require_answer_memory
from mrflib.io._tables import exact_weights
from mrflib.io._uai_text import (
    DECIMAL,
    DECIMAL_WHAT,
    INT64_MAX,
    PathLike,
    Tokens,
    number,
    write_text,
)
from mrflib.models._checks import check_evidence
from mrflib.models.boltzmann import BoltzmannMachine
from mrflib.models.factor_graph import MAX_TABLE_ENTRIES, FactorGraph

__all__ = ["BAYES_SUM_TOLERANCE", "MAR_SUM_TOLERANCE", "TASKS", "Answer", "format_answer",
           "format_answers", "write_answers", "BEGIN", "read_answer",
           "read_evidence", "read_uai", "write_answer", "write_evidence", "write_uai"]

#: The competition's tasks whose answer files are read and written here.
TASKS = ("PR", "MAR", "MPE")
#: The line before each answer of a file of several (an anytime solver's).
BEGIN = "-BEGIN-"
#: A marginal of a ``MAR`` answer must sum to 1 within this (the competition's reference
#: answers print six digits and sum to 1 within about 1.5e-6).
MAR_SUM_TOLERANCE = 1e-3
#: In a ``BAYES`` file, the child's entries for each configuration of the parents must sum
#: to 1 within this times their count. Files print probabilities to 6 digits or more
#: (pyAgrum 6 significant digits, pgmpy 17): an entry rounded to 6 digits,
#: significant or after the point, is off by at most 5e-7, so a row of ``c`` entries by
#: ``c * 5e-7`` (``0.333333`` three times sums to ``1 - 1e-6``). A table in another variable
#: order misses by far more (rows off by tenths), as does a table of weights.
BAYES_SUM_TOLERANCE = 1e-6


# ---------------------------------------------------------------------- models
def _read_scopes(tok: Tokens, n: int, n_factors: int) -> list[tuple[int, ...]]:
    scopes = []
    for k in range(n_factors):
        size = tok.integer(f"the size of factor {k}'s scope (an integer 0..{n})")
        if size > n:
            raise tok.error(tok.pos - 1, f"the size of factor {k}'s scope (an integer 0..{n})")
        scope: list[int] = []
        seen: set[int] = set()  # a list's `in` made a scope of 10^5 variables take minutes
        for j in range(size):
            what = f"variable {j} of factor {k}'s scope (an integer 0..{n - 1}"
            v = tok.integer(what + ")")
            if v >= n:
                raise tok.error(tok.pos - 1, what + ")")
            if v in seen:
                raise tok.error(tok.pos - 1, what + ", not already in the scope)")
            scope.append(v)
            seen.add(v)
        scopes.append(tuple(scope))
    return scopes


def _table_starts(tok: Tokens, card: list[int], scopes: list[tuple[int, ...]]) -> list[int]:
    """Check every table's declared size, then the memory, and return each table's first
    token: nothing of the tables is converted yet."""
    have = available_memory()
    starts, total = [], 0
    for k, scope in enumerate(scopes):
        shape = tuple(card[v] for v in scope)
        expected = math.prod(shape)
        what = (f"factor {k}'s entry count {format_count(expected)} (the product of its "
                "scope's cardinalities)")
        i = tok.pos
        count = tok.integer(what)
        if count != expected:
            raise tok.error(i, what)
        if count > MAX_TABLE_ENTRIES:
            raise tok.error(i, f"a table of at most {MAX_TABLE_ENTRIES} entries for factor {k}")
        total += count
        if 16.0 * total > have:  # name the first table that does not fit
            require_memory(16.0 * total, f"{tok.name}: factor {k}'s table (line {tok.line(i)}; "
                           f"{total} entries in the tables so far)", limit=have)
        tok.need(count, f"factor {k}'s {count} entries", declared=i)
        starts.append(tok.pos)
        tok.pos += count
    tok.end(f"factor {len(scopes) - 1}'s table" if scopes else "the scopes")
    require_memory(16.0 * total, f"{tok.name}: its {len(scopes)} tables ({total} entries)",
                   limit=have)
    return starts


def _entry_error(tok: Tokens, starts: list[int], i: int,
                 expected: str = "a finite number >= 0 (a weight)") -> ValueError:
    k = bisect.bisect_right(starts, i) - 1
    return ValueError(f"{tok.name}: factor {k}'s table, entry {i - starts[k]} ({tok.place(i)}): "
                      f"expected {expected}{tok.hint}")


def _read_tables(tok: Tokens, card: list[int], scopes: list[tuple[int, ...]],
                 conditional: bool = False, parents_reversed: bool = False
                 ) -> tuple[np.ndarray, ...]:
    """The tables' logs; with ``conditional`` (a ``BAYES`` file) each must be a conditional
    table (:func:`_check_conditionals`); with ``parents_reversed`` (pyAgrum's files) a table
    of two or more parents lists the first parent fastest after the child, and is read so
    (its axes put back in scope order)."""
    starts = _table_starts(tok, card, scopes)
    if not starts:
        return ()
    first = starts[0]
    try:
        vals = np.array(tok.tokens[first:], dtype=np.float64)
    except ValueError:
        bad = next(i for i in range(first, len(tok.tokens)) if not _is_float(tok.tokens[i]))
        raise _entry_error(tok, starts, bad) from None
    ok = np.isfinite(vals) & (vals >= 0)  # the count tokens in between are >= 0 anyway
    if not ok.all():
        raise _entry_error(tok, starts, first + int(np.flatnonzero(~ok)[0]))
    _check_entry_text(tok, starts, first, vals)
    if conditional:
        _check_conditionals(tok, card, scopes, starts, vals)
    with np.errstate(divide="ignore"):
        logs = np.log(vals)
    logs.flags.writeable = False  # the tables are read-only views of this one array
    return tuple(_table(logs[s - first:s - first + math.prod(card[v] for v in scope)],
                        tuple(card[v] for v in scope), parents_reversed)
                 for s, scope in zip(starts, scopes))


def _table(entries: np.ndarray, shape: tuple[int, ...], parents_reversed: bool) -> np.ndarray:
    """A table of ``shape`` from its entries in the file's order: C order of the scope's
    axes, or (``parents_reversed``, two or more parents) C order of the parents reversed,
    then the child."""
    if not parents_reversed or len(shape) < 3:
        return entries.reshape(shape)
    m = len(shape) - 1
    t = entries.reshape(shape[:-1][::-1] + shape[-1:])
    out = np.ascontiguousarray(np.transpose(t, list(range(m - 1, -1, -1)) + [m]))
    out.flags.writeable = False
    return out


def _check_entry_text(tok: Tokens, starts: list[int], first: int, vals: np.ndarray) -> None:
    """Refuse what numpy reads but the format does not mean: ``1_000`` (Python's digit
    separators), digits of other scripts (``١``, ``１``) and a positive weight below
    float64's range (``1e-400``), which would silently become a zero weight, a hard
    constraint."""
    if "_" in tok.text or not tok.text.isascii():  # else every token numpy read is decimal
        bad = next((i for i in range(first, len(tok.tokens))
                    if not DECIMAL.fullmatch(tok.tokens[i])), None)
        if bad is not None:
            raise _entry_error(tok, starts, bad, DECIMAL_WHAT)
    zeros = np.flatnonzero(vals == 0)
    tiny = {t for t in {tok.tokens[first + i] for i in zeros.tolist()}
            if any(c in "123456789" for c in t.lower().split("e")[0])}
    if tiny:
        bad = first + next(i for i in zeros.tolist() if tok.tokens[first + i] in tiny)
        k = bisect.bisect_right(starts, bad) - 1
        raise ValueError(f"{tok.name}: factor {k}'s table, entry {bad - starts[k]} "
                         f"({tok.place(bad)}): a positive weight below float64's range "
                         "(about 4.9e-324) would be read as a zero weight; rescale the table")


def _check_conditionals(tok: Tokens, card: list[int], scopes: list[tuple[int, ...]],
                        starts: list[int], vals: np.ndarray) -> None:
    """Refuse a ``BAYES`` table whose child's entries (the scope's last variable, the
    fastest) do not sum to 1, within :data:`BAYES_SUM_TOLERANCE` per entry, for some
    configuration of the parents (the scope's other variables): one reduction per table."""
    first = starts[0]
    for k, (s, scope) in enumerate(zip(starts, scopes)):
        shape = tuple(card[v] for v in scope)
        c = shape[-1] if shape else 1  # a function of no variable: one entry, to be 1
        sums = vals[s - first:s - first + math.prod(shape)].reshape(-1, c).sum(axis=1)
        off = np.abs(sums - 1.0) > BAYES_SUM_TOLERANCE * c
        if off.any():
            raise _conditional_error(tok, k, scope, shape, int(np.flatnonzero(off)[0]),
                                     float(sums[off][0]), s)


def _conditional_error(tok: Tokens, k: int, scope: tuple[int, ...], shape: tuple[int, ...],
                       row: int, total: float, start: int) -> ValueError:
    c = shape[-1] if shape else 1
    if not scope:
        what, found = "function of no variable", f"its one entry is {total!r}"
    else:
        parents = scope[:-1]
        states = np.unravel_index(row, shape[:-1]) if parents else ()
        given = "".join(f"{', ' if j else ' given '}x{v}={int(x)}"
                        for j, (v, x) in enumerate(zip(parents, states)))
        what = (f"child x{scope[-1]}, parents "
                + (", ".join(f"x{v}" for v in parents) if parents else "none"))
        found = f"the child's {c} entries{given} sum to {total!r}"
    return ValueError(
        f"{tok.name}: function {k} (scope {list(scope)}: {what}) of this BAYES file is not a "
        f"conditional probability table: {found}, not 1 (within "
        f"{BAYES_SUM_TOLERANCE * c:g}; {tok.place(start + row * c)}). A BAYES table lists "
        "the child's (the scope's last variable's) probabilities for each configuration of "
        "the parents, the last variable changing fastest; a table in another variable order "
        "(as pgmpy's UAIWriter writes one) or of weights is not one (write weights as a "
        "MARKOV file)")


def _is_float(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def read_uai(path: PathLike, evidence: PathLike | Mapping[int, int] | None = None
             ) -> FactorGraph:
    """Read a UAI model file (``MARKOV`` or ``BAYES``; plain or gzip).

    Parameters
    ----------
    path : str or path-like
        The model file.
    evidence : str, path-like, mapping or None, default None
        A UAI evidence file (see :func:`read_evidence`) or ``{variable: value}``; applied
        with :meth:`~mrflib.models.factor_graph.FactorGraph.condition`.

    Returns
    -------
    FactorGraph
        Factor ``k`` has the file's ``k``-th scope, in the file's variable order, and the
        natural log of its table (``0 -> -inf``); tables are read-only.

    Raises
    ------
    ValueError
        For a malformed file, naming the file, the place (line and token, or factor ``k``'s
        table and entry) and what was expected; for tables that would not fit in memory
        (checked before any is converted); for evidence out of range.
    """
    if evidence is not None and not isinstance(evidence, (Mapping, str, os.PathLike)):
        raise TypeError("evidence must be the path of a UAI evidence file or a mapping "
                        f"{{variable: value}}, got {type(evidence).__name__}")
    tok = Tokens(path)
    kind = tok.word("the network type MARKOV or BAYES")
    if kind.upper() not in ("MARKOV", "BAYES"):
        raise tok.error(0, "the network type MARKOV or BAYES")
    n = tok.integer("the number of variables (an integer >= 1)", minimum=1)
    # a wrong count in the header misplaces every later token: each error says so
    tok.hint = (f" (the header declares {n} variables on line {tok.line(1)}; if that count "
                "is wrong, every later token is out of place)")
    tok.need(n, f"the cardinalities of {n} variables")
    card = [tok.integer(f"the cardinality of variable {i} (an integer >= 1)", minimum=1)
            for i in range(n)]
    at = tok.pos
    n_factors = tok.integer("the number of factors (an integer >= 0)")
    tok.hint = (f" (the header declares {n} variables on line {tok.line(1)} and {n_factors} "
                f"factors on line {tok.line(at)}; if a count is wrong, every later token is "
                "out of place)")
    tok.need(n_factors, f"the scopes of {n_factors} factors")
    scopes = _read_scopes(tok, n, n_factors)
    bayes = kind.upper() == "BAYES"
    # pyAgrum comments every scope line with its variable's name, and lists a table of two
    # or more parents with the first parent fastest after the child, against the format
    # (every row still sums to 1, so only its signature tells it)
    pyagrum = bayes and n_factors > 0 and tok.named_scopes == n_factors
    tables = _read_tables(tok, card, scopes, conditional=bayes, parents_reversed=pyagrum)
    cards = np.array(card, dtype=np.int64)
    cards.flags.writeable = False
    model = FactorGraph._from_checked(cards, tuple(scopes), tables)
    if evidence is None:
        return model
    if not isinstance(evidence, Mapping):
        evidence = _parse_evidence(Tokens(evidence, "evidence"), model)
    return model.condition(evidence)


def _format_table(table: np.ndarray, k: int) -> str:
    w = exact_weights(table, k)
    rows = w.reshape(-1, w.shape[-1]) if w.ndim else w.reshape(1, 1)
    body = "\n".join(" ".join(map(repr, row)) for row in rows.tolist())
    return f"{w.size}\n{body}"


def write_uai(model: FactorGraph | BoltzmannMachine, path: PathLike) -> None:
    """Write ``model`` as a UAI ``MARKOV`` file (gzip if ``path`` ends in ``.gz``), atomically.

    A :class:`~mrflib.models.boltzmann.BoltzmannMachine` is written as its factor graph
    (:meth:`FactorGraph.from_boltzmann <mrflib.models.factor_graph.FactorGraph.from_boltzmann>`:
    state 0 is spin -1, state 1 is +1; one unary factor per spin, then one per edge), so the
    file has the same ``log Z``.

    Entries are ``exp(log_table)`` printed with ``repr`` (the shortest text that reads back
    as the same float), each the float whose ``log`` is the stored entry when one exists
    within two units in the last place: for every model read from a file (whose tables are
    logs of floats) :func:`read_uai` gives back a model with bit-identical tables. A table
    whose weights overflow, or underflow to 0 (or to a subnormal too coarse to give the
    log-weight back, ``exp(-745)``) from a finite log-weight, is refused: the format holds
    weights, not logs.

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        The model; anything else is a ``TypeError``.
    path : str or path-like
        The file to write (replaced atomically; gzip if it ends in ``.gz``).

    Raises
    ------
    ValueError
        For a table whose weights overflow or underflow, or a path that cannot be written.
    """
    if isinstance(model, BoltzmannMachine):
        model = FactorGraph.from_boltzmann(model)
    if not isinstance(model, FactorGraph):
        raise TypeError("model must be a BoltzmannMachine or a FactorGraph, got "
                        f"{type(model).__name__}")
    lines = ["MARKOV", str(model.n), " ".join(map(str, model.cardinalities.tolist())),
             str(model.n_factors)]
    lines += [" ".join(map(str, (len(s), *s))) for s in model.scopes]
    lines += [""]
    for k, t in enumerate(model.log_tables):
        lines += [_format_table(t, k), ""]
    write_text(path, "\n".join(lines))


# ---------------------------------------------------------------------- evidence
def read_evidence(path: PathLike, model: FactorGraph | None = None) -> dict[int, int]:
    """Read a UAI evidence file: ``{variable: value}`` (empty for an empty file or ``0``).

    The UAI 2014 form is ``m v_1 x_1 ... v_m x_m``; the older one has a leading sample count
    ``1`` (``1 m v_1 x_1 ...``): an odd token count is the first, an even one the second.
    Several samples are refused (with an even token count, by name; otherwise as the UAI 2014
    form they are not). A variable may be observed once.

    Parameters
    ----------
    path : str or path-like
        The evidence file (plain or gzip).
    model : FactorGraph or None, default None
        With a model, variables and values are checked against its cardinalities (naming
        the file and place); anything but a ``FactorGraph`` or ``None`` is a ``TypeError``.

    Returns
    -------
    dict of int to int
        ``{variable: value}`` in file order.

    Raises
    ------
    ValueError
        For a malformed file, naming the file, line and token.
    """
    if model is not None and not isinstance(model, FactorGraph):
        raise TypeError(f"model must be a FactorGraph or None, got {type(model).__name__}")
    return _parse_evidence(Tokens(path), model)


def _parse_evidence(tok: Tokens, model: FactorGraph | None) -> dict[int, int]:
    if not tok.tokens:
        return {}
    if len(tok.tokens) % 2 == 0:  # the older, multi-sample form: 1 sample, then the same
        if tok.tokens[0] != "1":
            raise tok.error(0, "the UAI 2014 form (m, then m pairs 'variable value': an odd "
                            "token count) or the older one with one sample (1, m, then m "
                            f"pairs); the file has {len(tok.tokens)} tokens (several samples "
                            "are not supported)")
        tok.pos = 1
    m = tok.integer("the number of observed variables")
    tok.need(2 * m, f"{m} pairs 'variable value'")
    card = model.cardinalities.tolist() if model is not None else None
    out: dict[int, int] = {}
    for j in range(m):
        what = f"observed variable {j} (an integer" + (f" 0..{len(card) - 1}" if card else "")
        v = tok.integer(what + ")")
        if (card is not None and v >= len(card)) or v in out:
            raise tok.error(tok.pos - 1, what + ", not observed before)")
        what = f"the value of variable {v} (an integer" + (f" 0..{card[v] - 1}" if card else "")
        x = tok.integer(what + ")")
        if card is not None and x >= card[v]:
            raise tok.error(tok.pos - 1, what + ")")
        out[v] = x
    tok.end(f"the {m} observed variables")
    return out


def write_evidence(path: PathLike, evidence: Mapping[int, int],
                   model: FactorGraph | None = None) -> None:
    """Write ``{variable: value}`` as a UAI 2014 evidence file (sorted by variable), atomically.

    Parameters
    ----------
    path : str or path-like
        The file to write (gzip if it ends in ``.gz``).
    evidence : mapping of int to int
        Variables ``>= 0`` to values ``>= 0`` (int64), each variable once.
    model : FactorGraph or None, default None
        With a model, the evidence is checked against its cardinalities first.
    """
    if not isinstance(evidence, Mapping):
        raise ValueError(f"evidence must be a mapping {{variable: value}}, got "
                         f"{type(evidence).__name__}")
    if model is not None and not isinstance(model, FactorGraph):
        raise TypeError(f"model must be a FactorGraph or None, got {type(model).__name__}")
    if model is not None:
        ev = check_evidence(evidence, model.cardinalities)
    else:
        ev = {}
        for v, x in evidence.items():
            if not all(isinstance(a, (int, np.integer)) and not isinstance(a, (bool, np.bool_))
                       and 0 <= a <= INT64_MAX for a in (v, x)):
                raise ValueError("evidence must map integer variables >= 0 to integer values "
                                 f">= 0 (int64, as read back), got {v!r}: {x!r}")
            if int(v) in ev:
                raise ValueError(f"evidence names variable {int(v)} twice")
            ev[int(v)] = int(x)
    pairs = " ".join(f"{v} {x}" for v, x in sorted(ev.items()))
    write_text(path, f"{len(ev)} {pairs}".rstrip() + "\n")


# ---------------------------------------------------------------------- answers
class Answer(NamedTuple):
    """An answer file's content (:func:`read_answer`).

    Attributes
    ----------
    task : str
        One of :data:`TASKS`.
    value : float or list of ndarray or ndarray
        ``log10 Z`` (float) for ``PR``, one marginal array per variable for ``MAR``, the
        states (``int64 (n,)``) for ``MPE``.
    """

    task: str
    value: Any


def _check_task(task: Any) -> str:
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    return task


def format_answer(task: str, value: Any) -> str:
    """The text of a UAI 2014 answer file (see :func:`write_answer`).

    Parameters
    ----------
    task : {"PR", "MAR", "MPE"}
        The task.
    value : float or sequence of array_like or array_like of int
        The answer, as :func:`write_answer` takes it (checked).

    Returns
    -------
    str
        The task line, then the answer's line.
    """
    task = _check_task(task)
    return f"{task}\n{_answer_body(task, value)}"


def format_answers(task: str, values: Sequence[Any]) -> str:
    """The text of an answer file holding several answers, each after a ``-BEGIN-`` line.

    Parameters
    ----------
    task : {"PR", "MAR", "MPE"}
        The task.
    values : sequence
        A non-empty sequence of answers, each as :func:`write_answer` takes it (an anytime
        solver's improving answers; :func:`read_answer` takes the last).

    Returns
    -------
    str
        The task line, then each answer after a :data:`BEGIN` line.
    """
    task = _check_task(task)
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
        raise ValueError("values must be a non-empty sequence of answers")
    return task + "\n" + "".join(f"{BEGIN}\n{_answer_body(task, v)}" for v in values)


def write_answers(path: PathLike, task: str, values: Sequence[Any]) -> None:
    """Write :func:`format_answers` atomically.

    The whole file is replaced, so a reader never sees a half-written answer, even after a
    crash.

    Parameters
    ----------
    path : str or path-like
        The file to write (gzip if it ends in ``.gz``).
    task : {"PR", "MAR", "MPE"}
        The task.
    values : sequence
        A non-empty sequence of answers, as :func:`format_answers` takes them.
    """
    write_text(path, format_answers(task, values))


def _answer_body(task: str, value: Any) -> str:
    """One answer's line (after the task line), ending with a newline."""
    if task == "PR":
        try:  # a number, not its text (float("1.5") would pass) nor a bool
            v = math.nan if isinstance(value, (str, bytes, bool, np.bool_)) else float(value)
        except (TypeError, ValueError):
            v = math.nan
        if math.isnan(v) or v == math.inf:
            raise ValueError(f"value must be log10 Z, a float < +inf (not NaN), got {value!r}")
        return f"{v!r}\n"
    if task == "MPE":
        x = np.asarray(value)
        if x.ndim != 1 or x.dtype.kind not in "iu" or (x < 0).any() or (x > INT64_MAX).any():
            raise ValueError("value must be the MPE states, a 1-d array of integers >= 0 "
                             f"(int64, as read back), got {value!r}")
        return f"{' '.join(map(str, (len(x), *x.tolist())))}\n"
    if isinstance(value, (np.ndarray, str, bytes)) or not isinstance(value, Sequence):
        raise ValueError("value must be the marginals, a sequence of one 1-d array per "
                         f"variable, got {type(value).__name__}")
    require_answer_memory(sum(np.size(p) for p in value))
    parts = [str(len(value))]
    for i, p in enumerate(value):
        try:
            p = np.asarray(p, dtype=np.float64)
        except (TypeError, ValueError):
            p = np.full(1, np.nan)
        if p.ndim != 1 or p.size == 0 or not np.isfinite(p).all() or (p < 0).any():
            raise ValueError(f"value[{i}] must be a non-empty 1-d array of probabilities "
                             f"(finite, >= 0), got {p!r}")
        if abs(p.sum() - 1.0) > MAR_SUM_TOLERANCE:
            raise ValueError(f"value[{i}] must be a distribution (summing to 1 within "
                             f"{MAR_SUM_TOLERANCE:g}), got a sum of {float(p.sum())!r}")
        parts.append(" ".join(map(repr, (len(p), *p.tolist()))))
    return " ".join(parts) + "\n"


def write_answer(path: PathLike, task: str, value: Any) -> None:
    """Write a UAI 2014 answer file, atomically (gzip if ``path`` ends in ``.gz``).

    Numbers are printed with ``repr``, so they read back exactly.

    Parameters
    ----------
    path : str or path-like
        The file to write.
    task : {"PR", "MAR", "MPE"}
        The task.
    value : float or sequence of array_like or array_like of int
        ``"PR"``: ``log10 Z`` (natural ``log Z / ln 10``; ``-inf`` for a model of zero
        weight; NaN and ``+inf`` refused); ``"MAR"``: one marginal array per variable
        (each summing to 1 within :data:`MAR_SUM_TOLERANCE`), written on one line after
        the variable count, each preceded by its length; ``"MPE"``: the states, integers
        ``>= 0``.
    """
    write_text(path, format_answer(task, value))


def read_answer(path: PathLike) -> Answer:
    """Read a UAI 2014 answer file (``PR``, ``MAR`` or ``MPE``; plain or gzip).

    A file of several answers, each after a ``-BEGIN-`` line (an anytime solver's,
    :func:`write_answers`), gives the last complete one: a last line without its newline (a
    solver killed while writing it) is left out, and a last answer that then does not parse
    is skipped for the one before it. Sample counts of earlier competitions are not read.

    Parameters
    ----------
    path : str or path-like
        The answer file.

    Returns
    -------
    Answer
        The task and its value.

    Raises
    ------
    ValueError
        For a malformed file, naming the file, line and token.
    """
    tok = Tokens(path)
    task = tok.word("the task PR, MAR or MPE")
    if task not in TASKS:
        raise tok.error(0, "the task PR, MAR or MPE")
    if tok.remaining() and tok.tokens[tok.pos] == BEGIN:
        return Answer(task, _last_block(tok, task))
    value = _read_body(tok, task)
    tok.end(f"the {task} answer")
    return Answer(task, value)


def _last_block(tok: Tokens, task: str) -> Any:
    """The value of the last complete ``-BEGIN-`` block (every earlier one must parse)."""
    tokens = tok.tokens
    if not tok.text.endswith("\n"):  # the last line is cut short: its tokens do not count
        partial = len(tok.text[tok.text.rfind("\n") + 1:].split())
        tokens = tokens[:len(tokens) - partial]
    starts = [i for i, t in enumerate(tokens) if t == BEGIN]
    value, found = None, False
    for b, start in enumerate(starts):
        last = b == len(starts) - 1
        stop = starts[b + 1] if not last else len(tokens)
        view = Tokens.__new__(Tokens)
        view.name, view.text, view.pos, view.hint = tok.name, tok.text, start + 1, tok.hint
        view.tokens = tok.tokens[:stop]
        try:
            v = _read_body(view, task)
            view.end(f"the {task} answer after {BEGIN}")
        except ValueError:
            if last and found:  # cut short while being written
                break
            raise
        value, found = v, True
    return value


def _read_body(tok: Tokens, task: str) -> Any:
    """One answer's value after the task line."""
    if task == "PR":
        return number(tok, "log10 Z (a number < inf)", lowest=-math.inf)
    if task == "MPE":
        n = tok.integer("the number of variables (an integer >= 1)", minimum=1)
        tok.need(n, f"the states of {n} variables")
        return np.array([tok.integer(f"the state of variable {i} (an integer >= 0)")
                         for i in range(n)], dtype=np.int64)
    n = tok.integer("the number of variables (an integer >= 1)", minimum=1)
    tok.need(2 * n, f"the marginals of {n} variables")
    value = []
    for i in range(n):
        c = tok.integer(f"the cardinality of variable {i} (an integer >= 1)", minimum=1)
        tok.need(c, f"the {c} probabilities of variable {i}")
        start = tok.pos
        value.append(np.array([number(tok, f"a probability of variable {i} "
                                           "(a finite number >= 0)") for _ in range(c)]))
        if abs(value[-1].sum() - 1.0) > MAR_SUM_TOLERANCE:
            raise tok.error(start, f"the {c} probabilities of variable {i} to sum to 1 "
                            f"(within {MAR_SUM_TOLERANCE:g}; they sum to "
                            f"{float(value[-1].sum())!r})")
    return value
