"""Public names renamed in 0.3.0, still served for one release with a DeprecationWarning
(the Renames table of CHANGELOG.md lists them; they go in 0.4.0), and the methods of
extensions still written against the old keywords (:func:`call_extension`)."""

from __future__ import annotations

import functools
import inspect
import sys
import warnings

GOES_IN = "0.4.0"
"""The release that drops the old names."""


def renamed(module: str, names: dict[str, str]):
    """A module-level ``__getattr__`` for ``module`` serving each old name of ``names``
    (old → new) as the new one, with a DeprecationWarning.

    Examples
    --------
    >>> import gsme.io, warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     gsme.io.FORMATS == gsme.io.FILE_FORMATS, str(caught[0].message)
    (True, 'gsme.io.FORMATS is now gsme.io.FILE_FORMATS (the old name goes in 0.4.0)')
    """
    def __getattr__(name: str):
        if name in names:
            warnings.warn(f"{module}.{name} is now {module}.{names[name]} (the old name goes "
                          f"in {GOES_IN})", DeprecationWarning, stacklevel=2)
            return getattr(sys.modules[module], names[name])
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    return __getattr__


def moved(module: str, homes, renamed: dict | None = None):
    """A module-level ``__getattr__`` for ``module``, whose names moved: each is read from the
    first of ``homes`` holding it (``renamed``: an old name → its (home, new name)), with a
    DeprecationWarning.

    Examples
    --------
    >>> import gsme.sequential, warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     gsme.sequential.looks is gsme.designs.looks, str(caught[0].message)
    (True, 'gsme.sequential.looks is now gsme.designs.looks (the old name goes in 0.4.0)')
    """
    renamed = renamed or {}

    def __getattr__(name: str):
        places = [renamed[name]] if name in renamed else [(home, name) for home in homes]
        for home, new in places:
            if hasattr(home, new):
                warnings.warn(f"{module}.{name} is now {home.__name__}.{new} (the old name goes "
                              f"in {GOES_IN})", DeprecationWarning, stacklevel=2)
                return getattr(home, new)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    return __getattr__


def renamed_keywords(**old_to_new: str):
    """A decorator letting a function still take each old keyword of ``old_to_new`` (old →
    new) for one release, as the new one, with a DeprecationWarning. The function keeps its
    name, docstring and signature (``inspect.signature`` shows only the new keywords).

    Examples
    --------
    >>> import warnings
    >>> @renamed_keywords(config="gate")
    ... def credit(trials, *, gate=None):
    ...     return gate
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     credit(None, config="g"), str(caught[0].message)
    ('g', 'credit(config=) is now credit(gate=) (the old keyword goes in 0.4.0)')
    >>> import inspect; str(inspect.signature(credit))
    '(trials, *, gate=None)'
    """
    def decorate(function):
        name = function.__qualname__

        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            for old in old_to_new.keys() & kwargs.keys():
                new = old_to_new[old]
                if new in kwargs:
                    raise TypeError(f"{name}() takes {new}= (formerly {old}=), not both")
                warnings.warn(f"{name}({old}=) is now {name}({new}=) (the old keyword goes in "
                              f"{GOES_IN})", DeprecationWarning, stacklevel=2)
                kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)
        wrapper.renamed_keywords = dict(old_to_new)
        return wrapper
    return decorate


COLUMNS = {"child": "candidate"}
"""Frame columns renamed in 0.3.0, new → old: the child side of a comparison (pairs,
decisions, looks, comparisons frames) was ``candidate``."""


def renamed_columns(frame, names, what: str):
    """``frame`` with the old name of each column of ``names`` it lacks renamed to the new
    one (:data:`COLUMNS`), with a DeprecationWarning; ``frame`` itself when none is.

    Examples
    --------
    >>> import pandas as pd, warnings
    >>> old = pd.DataFrame({"candidate": ["c1"], "parent": ["baseline"]})
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     list(renamed_columns(old, ["child", "parent"], "pairs").columns), str(caught[0].message)
    (['child', 'parent'], "pairs column 'candidate' is now 'child' (the old name goes in 0.4.0)")
    """
    old = {COLUMNS[name]: name for name in names if name in COLUMNS
           and name not in frame.columns and COLUMNS[name] in frame.columns}
    for was, now in old.items():
        warnings.warn(f"{what} column {was!r} is now {now!r} (the old name goes in {GOES_IN})",
                      DeprecationWarning, stacklevel=3)
    return frame.rename(columns=old) if old else frame


def new_name(column: str) -> str:
    """``column``'s name since 0.3.0 (itself unless :data:`COLUMNS` renamed it): for what
    gsme itself wrote before, read silently under the new names.

    Examples
    --------
    >>> new_name("candidate"), new_name("parent")
    ('child', 'parent')
    """
    return _NEW_NAMES.get(column, column)


_NEW_NAMES = {old: new for new, old in COLUMNS.items()}


EXTENSION_KEYWORDS = {"gate": "config", "keep": "config"}
"""Keywords gsme passes to an extension's methods (a design's, a keep rule's), each with the
one it passed before 0.3.0."""


def call_extension(method, *args, **kwargs):
    """``method(*args, **kwargs)``, where ``method`` belongs to an extension: one written
    before 0.3.0, taking ``config=`` where gsme now passes a keyword of
    :data:`EXTENSION_KEYWORDS` (``gate=``, ``keep=``), gets it as ``config=`` for one more
    release, with a DeprecationWarning naming its class and the new keyword.

    Examples
    --------
    >>> import warnings
    >>> class Old:
    ...     def keep(self, decisions, *, config):
    ...         return config
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     call_extension(Old().keep, None, keep="k"), str(caught[0].message)
    ('k', 'Old.keep takes config=: gsme passes keep= since 0.3.0 (config= goes in 0.4.0)')
    """
    names, any_keyword = _parameters(getattr(method, "__func__", method))
    for new in EXTENSION_KEYWORDS.keys() & kwargs.keys():
        old = EXTENSION_KEYWORDS[new]
        if new not in names and old in names and not any_keyword:
            owner = getattr(method, "__self__", None)
            name = (f"{type(owner).__qualname__}.{method.__name__}" if owner is not None
                    else method.__qualname__)
            warnings.warn(f"{name} takes {old}=: gsme passes {new}= since 0.3.0 ({old}= goes "
                          f"in {GOES_IN})", DeprecationWarning, stacklevel=2)
            kwargs[old] = kwargs.pop(new)
    return method(*args, **kwargs)


@functools.cache
def _parameters(function) -> tuple[frozenset, bool]:
    """The parameter names of ``function``, and whether it takes any keyword (``**kwargs``)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):  # no signature to read: call it as it is
        return frozenset(EXTENSION_KEYWORDS), True
    return (frozenset(p.name for p in parameters),
            any(p.kind is p.VAR_KEYWORD for p in parameters))


def renamed_attribute(owner: str, old: str, new: str) -> property:
    """A read-only property ``old`` of class ``owner`` serving its attribute ``new``, with a
    DeprecationWarning.

    Examples
    --------
    >>> import warnings
    >>> class Slots:
    ...     candidate = [0, 1]
    ...     cand = renamed_attribute("Slots", "cand", "candidate")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     Slots().cand, str(caught[0].message)
    ([0, 1], 'Slots.cand is now Slots.candidate (the old name goes in 0.4.0)')
    """
    def get(self):
        warnings.warn(f"{owner}.{old} is now {owner}.{new} (the old name goes in {GOES_IN})",
                      DeprecationWarning, stacklevel=2)
        return getattr(self, new)
    return property(get, doc=f"``{new}`` (its old name, until {GOES_IN}).")
