"""Run configuration files (TOML) and building agents and evolvers from their specs.

A config file has three tables::

    [run]                       # where and how long
    dir = "runs/tb2"
    rounds = 5
    children_per_round = 3
    recombinations_per_round = 1
    trial_budget = 20000        # optional
    seed = 0                    # any other key is a RunConfig setting (k, policy, ...)

    [agent]                     # kind = "sim" | "command" | "anthropic"
    kind = "sim"
    preset = "tb2"

    [evolver]                   # kind = "rule" | "claude"
    kind = "rule"

Specs are stored in the run's ledger so ``gsme resume DIR`` can rebuild both.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from gsme.run import RunConfig

_SECRET = re.compile(r"api_?key|secret|token$|password", re.IGNORECASE)
LOOP_KEYS = ("dir", "rounds", "children_per_round", "recombinations_per_round", "trial_budget")


class ConfigError(ValueError):
    """A config file or spec is invalid; the message names the table and key."""


@dataclass(frozen=True)
class RunSpec:
    """A parsed config file: where the run lives, the loop sizes and the specs."""

    dir: Path
    config: RunConfig
    agent: dict
    evolver: dict
    rounds: int = 5
    children_per_round: int = 3
    recombinations_per_round: int = 1
    trial_budget: int | None = None
    extra: dict = field(default_factory=dict)


def load(path) -> RunSpec:
    """Read and check a TOML run config. Raises :class:`ConfigError` naming what is wrong."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path} is not valid TOML: {err}") from None
    unknown = sorted(set(data) - {"run", "agent", "evolver"})
    if unknown:
        raise ConfigError(f"{path}: unknown table(s) {unknown}; expected [run], [agent], [evolver]")
    run = dict(data.get("run", {}))
    loop = {k: run.pop(k) for k in LOOP_KEYS if k in run}
    if "dir" not in loop:
        raise ConfigError(f"{path}: [run] needs dir = \"...\" (the run directory)")
    try:
        config = RunConfig.from_dict(run)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{path}: [run] {err}") from None
    agent = data.get("agent", {"kind": "sim", "preset": "tiny"})
    evolver = data.get("evolver", {"kind": "rule"})
    check_no_secrets(agent, "agent")
    check_no_secrets(evolver, "evolver")
    base = path.parent
    if agent.get("kind") == "command":
        agent = _command_paths(agent, base)
    build_agent(agent)  # fail now, not mid-run
    build_evolver(evolver)
    return RunSpec(dir=(base / loop.pop("dir")).resolve(), config=config, agent=agent,
                   evolver=evolver, **loop)


def _command_paths(spec: dict, base: Path) -> dict:
    """A command agent's files are relative to the config file; stored as absolute paths."""
    spec = dict(spec)
    if isinstance(spec.get("tasks"), str):
        spec["tasks"] = str((base / spec["tasks"]).resolve())
    spec["workdir"] = str((base / spec.get("workdir", ".")).resolve())
    return spec


def check_no_secrets(spec: dict | None, table: str) -> None:
    """Refuse a spec that holds a credential: specs are stored in the run's ledger."""
    secret = [k for k in (spec or {}) if _SECRET.search(k)]
    if secret:
        raise ConfigError(
            f"[{table}] {secret[0]}: credentials never go in a config or a run's ledger; "
            "set them in the environment (e.g. ANTHROPIC_API_KEY)"
        )


def build_agent(spec: dict):
    """Build a task agent from its spec (``kind`` plus that kind's keyword arguments)."""
    spec = dict(spec)
    kind = spec.pop("kind", None)
    try:
        if kind == "sim":
            from gsme import sim

            name = spec.pop("preset", "tiny")
            if name not in sim.PRESETS:
                raise ConfigError(f"[agent] preset must be one of {list(sim.PRESETS)}, "
                                  f"got {name!r}")
            return sim.preset(name, **spec)
        if kind == "command":
            from gsme.agents.command import CommandAgent

            return CommandAgent(**spec)
        if kind == "anthropic":
            from gsme.agents.anthropic_agent import AnthropicAgent

            return AnthropicAgent(**spec)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"[agent] kind = {kind!r}: {err}") from None
    raise ConfigError(f"[agent] kind must be 'sim', 'command' or 'anthropic', got {kind!r}")


def build_evolver(spec: dict):
    """Build an evolver from its spec (``kind`` plus that kind's keyword arguments)."""
    spec = dict(spec)
    kind = spec.pop("kind", None)
    try:
        if kind == "rule":
            from gsme.evolvers.rule import RuleEvolver

            return RuleEvolver(**spec)
        if kind == "claude":
            from gsme.evolvers.claude import ClaudeEvolver

            return ClaudeEvolver(**spec)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"[evolver] kind = {kind!r}: {err}") from None
    raise ConfigError(f"[evolver] kind must be 'rule' or 'claude', got {kind!r}")
