"""Agents, evolvers and executors built from a config's table: ``[agent]``, ``[evolver]``,
``[executor]``.

A spec is a mapping: ``kind``, a name of :data:`gsme.registry.AGENTS`, :data:`~gsme.registry.
EVOLVERS` or :data:`~gsme.registry.EXECUTORS` (gsme's own, an entry point's or one
registered in process), plus keyword arguments of that class's constructor. The arguments
are checked against the constructor's own signature and annotations before the class is
built (so its defaults stay in one place, the constructor), and any problem is a
:class:`~gsme.settings.ConfigError` naming the table, the key and what is allowed. Classes
are imported when first built, so ``import gsme`` does not import the ``anthropic`` SDK.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Mapping
from functools import cache

import pydantic

from gsme.registry import AGENTS, EVOLVERS, EXECUTORS, Registry
from gsme.settings import ConfigError, describe

__all__ = ["build_agent", "build_evolver", "build_executor"]


def build_agent(spec: Mapping):
    """A task agent from its spec (``kind`` plus constructor arguments).

    Examples
    --------
    >>> build_agent({"kind": "sim", "preset": "tiny"}).name
    'simulated:tiny/qwen-careless'
    """
    return _build(AGENTS, spec)


def build_evolver(spec: Mapping):
    """An evolver from its spec (``kind`` plus constructor arguments).

    Examples
    --------
    >>> type(build_evolver({"kind": "rule", "seed": 0})).__name__
    'RuleEvolver'
    """
    return _build(EVOLVERS, spec)


def build_executor(spec: Mapping):
    """An executor from its spec (``kind`` plus constructor arguments); nothing starts or
    connects until its first trial.

    Examples
    --------
    >>> build_executor({"kind": "threads", "workers": 8}).concurrency
    8
    >>> try:
    ...     build_executor({"kind": "threads", "wokers": 8})
    ... except ConfigError as err:
    ...     print(err)
    [executor] wokers = 8: Extra inputs are not permitted
    """
    return _build(EXECUTORS, spec)


def _build(registry: Registry, spec: Mapping):
    table = registry.kind
    if not isinstance(spec, Mapping):
        raise ConfigError(f"[{table}] must be a table, got {type(spec).__name__}")
    args = dict(spec)
    kind = args.pop("kind", None)
    if kind not in registry:
        raise ConfigError(f"[{table}] kind = {kind!r}: must be one of {list(registry)}")
    cls = registry.get(kind)
    try:
        checked = _arguments(cls).model_validate(args)
    except pydantic.ValidationError as err:
        raise ConfigError(describe(err, table=table)) from None
    try:
        return cls(**{name: getattr(checked, name) for name in args})
    except ConfigError:  # it names its key already
        raise
    except (TypeError, ValueError) as err:
        raise ConfigError(f"[{table}] kind = {kind!r}: {err}") from None


@cache
def _arguments(cls: type) -> type[pydantic.BaseModel]:
    """A model of ``cls``'s constructor arguments: their annotations, their defaults."""
    hints = typing.get_type_hints(cls.__init__)
    fields = {}
    for name, param in inspect.signature(cls.__init__).parameters.items():
        if name == "self" or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[name] = (hints.get(name, typing.Any), default)
    config = pydantic.ConfigDict(extra="forbid", arbitrary_types_allowed=True)
    return pydantic.create_model(f"{cls.__name__}Arguments", __config__=config, **fields)
