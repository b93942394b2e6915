"""A task agent of your own, run in process: the trials come from a Python object.

An agent subclasses :class:`gsme.agents.TaskAgent`: ``tasks()`` lists the tasks (``task_id``,
``split`` and the features env gates may read) and ``run(harness_dir, task, *, repeat,
attempt, run_seed)`` runs one trial in a fresh copy of the candidate's harness, returning a
:class:`gsme.agents.Trajectory`. Registered under a name, ``[agent] kind = "careless"``
builds it, with the table's other keys as constructor arguments. (A program outside Python
plugs in without a class, as a command agent: ``[agent] kind = "command"``.)
"""

import hashlib
import tomllib
from pathlib import Path

import pandas as pd

from gsme.agents import TaskAgent, Trajectory
from gsme.cli import main
from gsme.registry import AGENTS


class Careless(TaskAgent):
    """A stand-in model (SIMULATED) that often submits without running the tests, less
    often when the harness's runtime turns on the ``submit-verify`` middleware."""

    name = "careless"
    simulated = True

    def __init__(self, tasks: int = 30):
        self.n_tasks = tasks

    def tasks(self):
        ids = [f"t{task:02d}" for task in range(self.n_tasks)]
        test = self.n_tasks // 3
        return pd.DataFrame({"task_id": ids,
                             "split": ["train"] * (self.n_tasks - test) + ["test"] * test})

    def run(self, harness_dir, task, *, repeat, attempt, run_seed):
        runtime = [tomllib.loads(path.read_text())
                   for path in Path(harness_dir, "runtime").glob("*.toml")]
        verify = [m for m in runtime if m.get("name") == "submit-verify"]
        key = f"{task['task_id']}|{repeat}|{run_seed}|{bool(verify)}".encode()
        draw = int.from_bytes(hashlib.sha256(key).digest()[:8], "little") / 2**64
        passed = draw < (0.75 if verify else 0.35)
        transcript = ("tests pass, submitted" if passed else
                      "submitted without running the tests; hidden tests failed")
        return Trajectory(passed=passed, beacons=tuple(m["beacon"] for m in verify),
                          transcript=transcript)


AGENTS.register("careless", Careless)
Path("careless.toml").write_text("""
[run]
dir = "runs/careless"
rounds = 2
children_per_round = 2

[agent]
kind = "careless"
tasks = 30

[evolver]
kind = "rule"
""")
main(["run", "careless.toml", "--quiet"])
AGENTS.unregister("careless")
