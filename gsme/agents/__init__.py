"""Task agents: the interface, and the shared conversion of trajectories to trials rows."""

from gsme.agents.base import TaskAgent, Trajectory, TrialSpec, to_trials, trial_row

__all__ = ["TaskAgent", "Trajectory", "TrialSpec", "to_trials", "trial_row"]
