"""Where extensions register: gate designs, keep policies, log formats, mixes, each by name.

Each registry maps a name to an object: a gate design (:class:`gsme.sequential.Design`), a
keep policy (:class:`gsme.policy.Policy`), a log format (:class:`gsme.importers.Format`) or a
simulated world of proposals (:class:`gsme.sim.catalogue.Mix`, registered in
:mod:`gsme.sim.catalogue`). gsme's own are listed here as ``"module:attribute"``
strings, imported the first time they are asked for, so that :mod:`gsme.settings` can check
a name without importing the statistics. Other packages add theirs through an entry point
group, read once, the first time a registry is asked:

=======================  ==================  ===============================
registry                 entry point group   object
=======================  ==================  ===============================
:data:`DESIGNS`          ``gsme.designs``    :class:`gsme.sequential.Design`
:data:`POLICIES`         ``gsme.policies``   :class:`gsme.policy.Policy`
:data:`FORMATS`          ``gsme.formats``    :class:`gsme.importers.Format`
:data:`gsme.sim.MIXES`   ``gsme.mixes``      :class:`gsme.sim.catalogue.Mix`
=======================  ==================  ===============================

A package registers a design in its ``pyproject.toml``::

    [project.entry-points."gsme.designs"]
    strict = "mypackage.gates:StrictDesign"

The entry point's name is the name users choose (``GateConfig(design="strict")``, ``gsme
demo --gate strict``); it loads a class (made with no arguments) or an instance. A script or
a test registers one in process with :meth:`Registry.register`. Registered names are checked
wherever a name is accepted and listed in ``gsme --help``.
"""

from __future__ import annotations

import importlib
from importlib import metadata

__all__ = ["DESIGNS", "FORMATS", "POLICIES", "Registry", "is_name"]


class Registry:
    """Named objects of one kind: gsme's own, then those of an entry point group.

    Parameters
    ----------
    kind : str
        What a name names (``"design"``), for messages.
    group : str
        The entry point group other packages register through.
    builtins : dict
        gsme's own, name → ``"module:attribute"``, imported when first asked for.

    Examples
    --------
    >>> DESIGNS.names()[:2]
    ('fixed', 'adaptive')
    >>> "learned" in POLICIES
    True
    """

    def __init__(self, kind: str, group: str, builtins: dict[str, str]):
        self.kind = kind
        self.group = group
        self._where: dict[str, object] = dict(builtins)
        self._loaded: dict[str, object] = {}
        self._entry_points_read = False

    def register(self, name: str, obj, *, replace: bool = False) -> None:
        """Add ``obj`` (an instance, a class made with no arguments, or ``"module:attr"``).

        Raises
        ------
        ValueError
            ``name`` is taken (unless ``replace``) or not an identifier.
        """
        self._read_entry_points()
        if not is_name(name):
            raise ValueError(f"a {self.kind} name must be an identifier, got {name!r}")
        if name in self._where and not replace:
            raise ValueError(f"a {self.kind} named {name!r} is registered already "
                             "(replace=True replaces it)")
        self._where[name] = obj
        self._loaded.pop(name, None)

    def unregister(self, name: str) -> None:
        """Remove ``name`` (a design, policy or format registered in process)."""
        self._read_entry_points()
        self._where.pop(self.check(name), None)
        self._loaded.pop(name, None)

    def names(self) -> tuple[str, ...]:
        """Every registered name, gsme's own first, in the order they were registered."""
        self._read_entry_points()
        return tuple(self._where)

    def check(self, name) -> str:
        """``name`` if it is registered, else a ValueError naming what is allowed."""
        if name not in self.names():
            raise ValueError(f"{self.kind} must be one of {list(self.names())}, got {name!r}")
        return name

    def get(self, name: str):
        """The object registered as ``name`` (imported and made the first time)."""
        self.check(name)
        if name not in self._loaded:
            self._loaded[name] = _made(self._where[name])
        return self._loaded[name]

    def __getitem__(self, name: str):
        return self.get(name)

    def __contains__(self, name) -> bool:
        return name in self.names()

    def __iter__(self):
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, group={self.group!r}, names={list(self.names())})"

    def _read_entry_points(self) -> None:
        if self._entry_points_read:
            return
        self._entry_points_read = True
        for point in metadata.entry_points(group=self.group):
            self._where.setdefault(point.name, point)


def is_name(name) -> bool:
    """Whether ``name`` can name a registered object: an identifier, hyphens allowed.

    Examples
    --------
    >>> is_name("rare-big"), is_name("my mix")
    (True, False)
    """
    return isinstance(name, str) and name.replace("-", "_").isidentifier()


def _made(where):
    """The object ``where`` stands for: loaded from a string or entry point, classes made."""
    if isinstance(where, metadata.EntryPoint):
        where = where.load()
    elif isinstance(where, str):
        module, _, attribute = where.partition(":")
        where = getattr(importlib.import_module(module), attribute)
    return where() if isinstance(where, type) else where


DESIGNS = Registry("design", "gsme.designs", {
    "fixed": "gsme.sequential:Fixed",
    "adaptive": "gsme.sequential:Adaptive",
})
"""Gate designs (``GateConfig.design``): :class:`gsme.sequential.Design` objects."""

POLICIES = Registry("policy", "gsme.policies", {
    "gated": "gsme.policy:Gated",
    "greedy": "gsme.policy:Greedy",
    "peak": "gsme.policy:Peak",
    "learned": "gsme.policy:Learned",
})
"""Keep policies (``RunConfig.policy``): :class:`gsme.policy.Policy` objects."""

FORMATS = Registry("format", "gsme.formats", {
    "inspect": "gsme.importers.inspect_logs:Inspect",
    "tb": "gsme.importers.terminal_bench:TerminalBench",
    "harbor": "gsme.importers.terminal_bench:Harbor",
    "swebench": "gsme.importers.swebench:SWEBench",
    "hal": "gsme.importers.hal:HAL",
    "gepa": "gsme.importers.gepa:GEPA",
    "csv": "gsme.importers.csv_trials:CSV",
})
"""Log formats (``gsme compare --format``): :class:`gsme.importers.Format` objects, asked
in this order whether they can open a path (:func:`gsme.importers.detect_format`)."""
