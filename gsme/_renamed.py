"""Public names renamed in 0.3.0, still served for one release with a DeprecationWarning
(the Renames table of CHANGELOG.md lists them; they go in 0.4.0)."""

from __future__ import annotations

import sys
import warnings


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
                          "in 0.4.0)", DeprecationWarning, stacklevel=2)
            return getattr(sys.modules[module], names[name])
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    return __getattr__
