"""Where extensions register: every kind of extension gsme takes by name, in one place.

Each registry maps a name to an object of one kind. gsme's own are listed here as
``"module:attribute"`` strings, imported the first time they are asked for, so that
:mod:`gsme.settings` can check a name, and ``gsme --help`` list every name, without importing
the statistics or an agent's SDK. Other packages add theirs through an entry point group,
read once, the first time a registry is asked:

=======================  ===================  ======================================
registry                 entry point group    object
=======================  ===================  ======================================
:data:`DESIGNS`          ``gsme.designs``     :class:`gsme.designs.Design`
:data:`POLICIES`         ``gsme.policies``    :class:`gsme.policy.Policy`
:data:`FORMATS`          ``gsme.formats``     :class:`gsme.importers.Format`
:data:`gsme.sim.MIXES`   ``gsme.mixes``       :class:`gsme.sim.catalogue.Mix`
:data:`AGENTS`           ``gsme.agents``      a :class:`gsme.agents.TaskAgent` class
:data:`EVOLVERS`         ``gsme.evolvers``    a :class:`gsme.evolvers.Evolver` class
:data:`EXECUTORS`        ``gsme.executors``   a :class:`gsme.executors.Executor` class
=======================  ===================  ======================================

Designs, policies, formats and mixes are objects (a class registered is made with no
arguments); agents, evolvers and executors are classes, built from a config's table
(``[agent]``, ``[evolver]``, ``[executor]``: ``kind`` plus the constructor's arguments) by
:mod:`gsme.plugins`, which checks the table against the constructor.

A package registers a design, or an executor, in its ``pyproject.toml``::

    [project.entry-points."gsme.designs"]
    strict = "mypackage.gates:StrictDesign"

    [project.entry-points."gsme.executors"]
    ray = "mypackage.cluster:RayExecutor"

The entry point's name is the name users choose (``GateConfig(design="strict")``, ``gsme
plan --design strict``, ``[executor] kind = "ray"``, ``gsme run --executor ray``). A script
or a test registers one in process with :meth:`Registry.register`. Registered names are
checked wherever a name is accepted and listed in ``gsme --help``.
"""

from __future__ import annotations

import importlib
from importlib import metadata

__all__ = ["AGENTS", "DESIGNS", "EVOLVERS", "EXECUTORS", "FORMATS", "POLICIES", "REGISTRIES",
           "Registry", "is_name"]


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
    make : bool
        Whether a registered class is made (with no arguments) when first asked for: an
        object registry (designs, policies, formats, mixes); False for a registry of
        classes built from a config's table (agents, evolvers, executors).

    Examples
    --------
    >>> DESIGNS.names()[:2]
    ('fixed', 'adaptive')
    >>> "learned" in POLICIES
    True
    >>> EXECUTORS.get("threads").__name__
    'ThreadExecutor'
    """

    def __init__(self, kind: str, group: str, builtins: dict[str, str], *, make: bool = True):
        self.kind = kind
        self.group = group
        self.make = make
        self._where: dict[str, object] = dict(builtins)
        self._loaded: dict[str, object] = {}
        self._entry_points_read = False

    def register(self, name: str, obj, *, replace: bool = False) -> None:
        """Add ``obj``: an instance, a class (made with no arguments if :attr:`make`) or
        ``"module:attr"``.

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
        """Remove ``name`` (registered in process)."""
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
        """The object registered as ``name`` (imported, and made if :attr:`make`, the first
        time)."""
        self.check(name)
        if name not in self._loaded:
            self._loaded[name] = _made(self._where[name], make=self.make)
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


def _made(where, *, make: bool):
    """The object ``where`` stands for: loaded from a string or entry point, a class made if
    ``make``."""
    if isinstance(where, metadata.EntryPoint):
        where = where.load()
    elif isinstance(where, str):
        module, _, attribute = where.partition(":")
        where = getattr(importlib.import_module(module), attribute)
    return where() if make and isinstance(where, type) else where


DESIGNS = Registry("design", "gsme.designs", {
    "fixed": "gsme.designs.fixed:Fixed",
    "adaptive": "gsme.designs.adaptive:Adaptive",
})
"""Gate designs (``GateConfig.design``): :class:`gsme.designs.Design` objects."""

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

AGENTS = Registry("agent", "gsme.agents", {
    "sim": "gsme.sim.agent:SimAgent",
    "command": "gsme.agents.command:CommandAgent",
    "anthropic": "gsme.agents.anthropic_agent:AnthropicAgent",
}, make=False)
"""Agent kinds (``[agent] kind``): :class:`gsme.agents.TaskAgent` classes, built by
:func:`gsme.plugins.build_agent`."""

EVOLVERS = Registry("evolver", "gsme.evolvers", {
    "rule": "gsme.evolvers.rule:RuleEvolver",
    "claude": "gsme.evolvers.claude:ClaudeEvolver",
    "mechanism": "gsme.evolvers.mechanism:MechanismEvolver",
    "agent": "gsme.evolvers.agentic:AgenticEvolver",
}, make=False)
"""Evolver kinds (``[evolver] kind``): :class:`gsme.evolvers.Evolver` classes, built by
:func:`gsme.plugins.build_evolver`."""

EXECUTORS = Registry("executor", "gsme.executors", {
    "threads": "gsme.executors.pool:ThreadExecutor",
    "processes": "gsme.executors.pool:ProcessExecutor",
    "dask": "gsme.executors.pool:DaskExecutor",
    "harbor": "gsme.executors.harbor:HarborExecutor",
    "inspect": "gsme.executors.inspect_eval:InspectExecutor",
}, make=False)
"""Executor kinds (``[executor] kind``, ``--executor``): what runs a scoring pass's trials,
:class:`gsme.executors.Executor` classes built by :func:`gsme.plugins.build_executor`."""

REGISTRIES = (DESIGNS, POLICIES, FORMATS, AGENTS, EVOLVERS, EXECUTORS)
"""The registries of this module, in the order ``gsme --help`` lists them (the mixes of the
simulator register in :data:`gsme.sim.MIXES`)."""
