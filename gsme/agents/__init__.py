"""Task agents: the interface, and the shared conversion of trajectories to trials rows.

The real agents are imported on first use: ``CommandAgent`` (any executable) and
``AnthropicAgent`` (a Claude model on the bundled pyfunc benchmark).
"""

from gsme.agents.base import TaskAgent, Trajectory, TrialSpec, to_trials, trial_row

__all__ = ["AnthropicAgent", "CommandAgent", "TaskAgent", "Trajectory", "TrialSpec",
           "to_trials", "trial_row"]

_LAZY = {"AnthropicAgent": "gsme.agents.anthropic_agent", "CommandAgent": "gsme.agents.command"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'gsme.agents' has no attribute {name!r}")
