"""An executor of your own: every trial in turn, in this process.

An executor subclasses :class:`gsme.executors.Executor` and implements ``stream``: given
every :class:`gsme.agents.TrialSpec` of a scoring pass, it yields each group of completed
``(spec, trajectory)`` pairs as it lands, and gsme records them at once. A cluster
executor (Ray, a batch scheduler) submits the specs and yields results as they come back.
Registered under a name, ``[executor] kind = "serial"`` or ``gsme run --executor serial``
uses it.
"""

import tempfile
from pathlib import Path

from gsme.cli import main
from gsme.executors import Executor
from gsme.registry import EXECUTORS


class Serial(Executor):
    """One trial at a time, each in a fresh copy of its candidate's harness."""

    def stream(self, specs, *, agent, snapshots, tasks, run_seed, patience):
        for spec in specs:
            with tempfile.TemporaryDirectory() as scratch:
                harness = snapshots[spec.candidate].write(Path(scratch, "harness"))
                trajectory = agent.run(harness, dict(tasks[spec.task_id]),
                                       repeat=spec.repeat, attempt=spec.attempt,
                                       run_seed=run_seed)
            yield [(spec, trajectory)]


EXECUTORS.register("serial", Serial)
Path("serial.toml").write_text("""
[run]
dir = "runs/serial"
rounds = 1

[agent]
kind = "sim"
preset = "tiny"

[executor]
kind = "serial"
""")
main(["run", "serial.toml", "--quiet"])
EXECUTORS.unregister("serial")
