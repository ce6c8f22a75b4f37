"""Deprecation aliases: old names keep working for one release, with a warning naming the new call.

Three kinds of alias cover every rename in the library:

- :func:`renamed_argument` lets a function accept a keyword argument under its old name
  (``bm=`` for ``model=``, ``max_seconds=`` for ``time_limit=``);
- :class:`ModuleAliases` makes module paths import other modules: the short paths of the top
  level (``import mrflib.approx``), and old module paths that import the module replacing
  them, with a warning (``import mrflib.inference.factor_gibbs``), both without a file;
- :func:`moved_names` keeps a function importable from the module it left for a higher
  layer (``exact.fit_mle``, now a learner), which its old module cannot import.

Every warning is a :class:`FutureWarning` (shown to users by default, unlike
:class:`DeprecationWarning`, which Python hides outside ``__main__``) and names the call to use.
"""

from __future__ import annotations

import functools
import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["ModuleAliases", "MOVED_NAMES", "moved_names", "renamed_argument", "warn_deprecated"]


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


class ModuleAliases(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Module paths ``<package>.<name>`` that import another module, the same object.

    ``import mrflib.approx`` gives :mod:`mrflib.inference.approx` itself, not a copy, so its
    names, ``isinstance`` checks and monkeypatching are the real module's. With ``warn``,
    each alias is a deprecated path: importing it warns and names the module to import.
    No file stands for an alias.

    Parameters
    ----------
    package : str
        The package under which the aliases live (``"mrflib"``).
    targets : mapping of str to str
        Alias name (below ``package``) to the dotted path of the module it gives.
    warn : bool, default False
        Whether importing an alias is deprecated (a :class:`FutureWarning`).
    """

    def __init__(self, package: str, targets: Mapping[str, str], *, warn: bool = False) -> None:
        self.package, self.targets, self.warn = package, dict(targets), warn
        self._specs: dict[str, Any] = {}

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        """A spec for an alias whose target is another module, else ``None``."""
        head, _, name = fullname.rpartition(".")
        if head == self.package and self.targets.get(name, fullname) != fullname:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec: Any) -> Any:
        """The target module, imported (with the deprecation warning, if any)."""
        new = self.targets[spec.name.rpartition(".")[2]]
        if self.warn:
            warn_deprecated(f"module {spec.name}", f"module {new}", stacklevel=5)
        module = importlib.import_module(new)
        self._specs[spec.name] = module.__spec__  # the import system sets the alias's on it
        return module

    def exec_module(self, module: Any) -> None:
        """Nothing to run: :meth:`create_module` returned the loaded module, whose own spec
        is put back."""
        for spec in self._specs.values():
            if spec.name == module.__name__:
                module.__spec__ = spec

    def install(self) -> ModuleAliases:
        """Put the finder on :data:`sys.meta_path` (once per package) and return it."""
        for finder in sys.meta_path:
            if isinstance(finder, ModuleAliases) and finder.package == self.package:
                return finder
        sys.meta_path.append(self)
        return self


#: Public names that moved to a module of a higher layer than the module users imported
#: them from (which cannot import it): ``"old.module.name"`` to ``"new.module:name"``. The
#: top-level package, which stands above every layer, declares them; :func:`moved_names`
#: resolves them.
MOVED_NAMES: dict[str, str] = {}


def moved_names(module: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` giving the names :data:`MOVED_NAMES` lists under ``module``.

    Parameters
    ----------
    module : str
        The dotted name of the module whose ``__getattr__`` this becomes.

    Returns
    -------
    callable
        ``__getattr__(name)``: the moved object (imported on first use; the object warns
        when called, naming the call to use), else ``AttributeError``.
    """

    def __getattr__(name: str) -> Any:
        target = MOVED_NAMES.get(f"{module}.{name}")
        if target is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        path, _, attr = target.partition(":")
        return getattr(importlib.import_module(path), attr)

    return __getattr__
