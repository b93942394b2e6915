"""Public names renamed in 0.3.0, still served for one release with a DeprecationWarning
(the Renames table of CHANGELOG.md lists them; they go in 0.4.0)."""

from __future__ import annotations

import functools
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
