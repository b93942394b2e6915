"""The scoring driver: passes until the design wants nothing more, the activation gate first."""

import hashlib

import pandas as pd
import pytest

from gsme import gates, measure
from gsme.agents import TaskAgent, Trajectory
from gsme.patches import FileChange, Patch
from gsme.run import Run
from gsme.settings import GateConfig, RunConfig


class CoinAgent(TaskAgent):
    """Every trial a fair coin (a hash of task, repeat and the harness's patches); a patch's
    beacon fires only when ``fires`` says so."""

    name = "coin"
    honours_env_gates = True

    def __init__(self, fires: bool):
        self.fires = fires

    def tasks(self):
        return pd.DataFrame({"task_id": [f"t{i:02d}" for i in range(30)],
                             "split": ["train"] * 24 + ["test"] * 6})

    def run(self, harness_dir, task, *, repeat, attempt, run_seed):
        patches = sorted(p.name for p in (harness_dir / "patches").glob("*.toml"))
        seed = f"{task['task_id']}/{repeat}/{patches}".encode()
        passed = hashlib.sha256(seed).digest()[0] < 128
        beacons = ("coin-fired",) if self.fires and patches else ()
        return Trajectory(passed=passed, beacons=beacons, transcript="flip")


PATCH = Patch(id="coin", where="prompt", why="careless-submit", mechanism="a note",
              beacon="coin-fired", changes=(FileChange("prompt/coin.md", "Flip well.\n"),))


def _child_trials(tmp_path, fires: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    gate = GateConfig(design="adaptive")
    with Run.create(tmp_path / "run", agent=CoinAgent(fires), run_config=RunConfig(gate=gate)) as run:
        measure.measure(run, "baseline", round=0, progress=False)
        child, reason = run.add_candidate(["baseline"], patch=PATCH, round=1)
        assert reason is None
        measure.measure(run, child, round=1, progress=False)
        trials = run.trials(split="train")
        decided = gates.credit(trials, run.candidates(), gate=gate)
        return trials[trials["candidate"] == child], decided


def test_a_child_whose_beacon_never_fires_gets_no_repeat_after_the_first_look(tmp_path):
    trials, decided = _child_trials(tmp_path, fires=False)
    assert trials["repeat"].max() == 2 and len(trials) == 24 * 3  # look 1 only
    assert decided["decision"].tolist() == ["inactive"]


def test_a_child_whose_beacon_fires_goes_on_to_the_designs_later_looks(tmp_path):
    trials, decided = _child_trials(tmp_path, fires=True)
    assert trials["repeat"].max() > 2  # the coin's mixed tasks are extended
    assert decided["decision"].tolist() != ["inactive"]


@pytest.mark.parametrize("k", [1, 3])
def test_silent_waits_for_every_slot_of_the_first_look(k):
    tasks = pd.DataFrame({"task_id": ["t1", "t2"], "split": "train"})
    pairs = pd.DataFrame({"child": ["c"], "parent": ["p"]})
    rows = pd.DataFrame([{"candidate": "c", "task_id": t, "split": "train", "repeat": r,
                          "passed": False, "activated": False} for t in ("t1", "t2")
                         for r in range(k)])
    config = GateConfig(k=k)
    assert gates.silent(rows, pairs, tasks, gate=config).tolist() == [True]
    assert gates.silent(rows.iloc[1:], pairs, tasks, gate=config).tolist() == [False]
    fired = rows.assign(activated=[True] + [False] * (len(rows) - 1))
    assert gates.silent(fired, pairs, tasks, gate=config).tolist() == [False]
    # an infrastructure failure that may still be re-run leaves the look open
    faulted = rows.assign(infra_ok=[False] + [True] * (len(rows) - 1))
    assert gates.silent(faulted, pairs, tasks, gate=config).tolist() == [False]
