"""Deprecation aliases: old names keep working for one release, with a warning naming the new call.

Three kinds of alias cover every rename in the library:

- :func:`renamed_argument` lets a function accept a keyword argument under its old name
  (``bm=`` for ``model=``, ``max_seconds=`` for ``time_limit=``);
- :func:`deprecated_function` makes an old function name call the new one;
- :func:`alias_module` makes an old module path import the module that replaced it, so that
  ``import mrflib.inference.factor_gibbs`` and the objects it holds are the new module's own.

Every warning is a :class:`FutureWarning` (shown to users by default, unlike
:class:`DeprecationWarning`, which Python hides outside ``__main__``) and names the call to use.
"""

from __future__ import annotations

import functools
import importlib
import sys
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["alias_module", "deprecated_function", "renamed_argument", "warn_deprecated"]


def warn_deprecated(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn that ``old`` is deprecated and ``new`` replaces it.

    Parameters
    ----------
    old : str
        The deprecated call or name, as a user wrote it.
    new : str
        The call or name to use instead.
    stacklevel : int, default 3
        Passed to :func:`warnings.warn`, so that the warning points at the user's line.
    """
    warnings.warn(f"{old} is deprecated and will be removed in the next release; use {new}",
                  FutureWarning, stacklevel=stacklevel)


def renamed_argument(old: str, new: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: accept keyword argument ``old`` as ``new``, with a :class:`FutureWarning`.

    Parameters
    ----------
    old : str
        The argument's former name.
    new : str
        Its name in the decorated function's signature.

    Returns
    -------
    callable
        A decorator. Passing both names is a ``TypeError``, as passing one argument twice is.
    """

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if old in kwargs:
                if new in kwargs:
                    raise TypeError(f"{fn.__name__}() got both {new}= and its deprecated "
                                    f"name {old}=")
                warn_deprecated(f"{fn.__name__}({old}=...)", f"{fn.__name__}({new}=...)")
                kwargs[new] = kwargs.pop(old)
            return fn(*args, **kwargs)

        return wrapper

    return decorate


def deprecated_function(new: Callable[..., Any], old_name: str,
                        new_name: str) -> Callable[..., Any]:
    """An alias of ``new`` that warns, on every call, that ``old_name`` is deprecated.

    Parameters
    ----------
    new : callable
        The function that replaces the old one.
    old_name : str
        The old dotted name, as users called it (``"exact.fit_mle"``).
    new_name : str
        The dotted name to call instead.

    Returns
    -------
    callable
        A function with ``new``'s signature and a docstring pointing at ``new_name``.
    """

    @functools.wraps(new)
    def alias(*args: Any, **kwargs: Any) -> Any:
        warn_deprecated(old_name, new_name)
        return new(*args, **kwargs)

    alias.__doc__ = f"Deprecated alias of :func:`{new_name}`; it will be removed."
    alias.__name__ = old_name.rsplit(".", 1)[-1]
    alias.__qualname__ = alias.__name__
    return alias


def alias_module(old: str, new: str) -> None:
    """Make module path ``old`` an alias of module ``new``, with a :class:`FutureWarning`.

    Call it from the body of the old module, ``alias_module(__name__, "mrflib...new")``. After
    it, ``sys.modules[old]`` is the new module object itself, so names (public and private),
    ``isinstance`` checks and monkeypatching all act on the one module.

    Parameters
    ----------
    old : str
        The deprecated dotted module path (the caller's ``__name__``).
    new : str
        The dotted path of the module that replaces it.
    """
    warn_deprecated(f"module {old}", f"module {new}", stacklevel=4)
    sys.modules[old] = importlib.import_module(new)
