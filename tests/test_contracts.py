"""Every TaskAgent and every Evolver gsme ships keeps the same contract.

An agent: a tasks frame (unique ids, a train split), a ``run`` that returns a Trajectory
which becomes a valid trials row, and a pickle round trip (trials run in other processes).
An evolver: a diagnoses frame that meets its contract, at most ``n`` patches that each
apply to the harness they were proposed for, and reproducible proposals after ``reseed``.
"""

import json
import pickle
import shutil
import sys
from pathlib import Path

import anthropic
import httpx2
import pandas as pd
import pytest

from gsme import schema, sim
from gsme.agents import AnthropicAgent, CommandAgent, TaskAgent, Trajectory, TrialSpec
from gsme.agents.base import to_trials
from gsme.evolvers import ClaudeEvolver, Evolver, RuleEvolver
from gsme.evolvers.agentic import AgenticEvolver
from gsme.evolvers.mechanism import MechanismEvolver
from gsme.patches import Patch, harness_files, validate_patch
from gsme.resources import SEED_HARNESS
from gsme.vocabulary import Vocabulary

DATA = Path(__file__).parent / "data"
SCRIPT = Path(__file__).parent / "scripts" / "script_agent.py"
KEY = "sk-ant-api03-CONTRACT-0123456789"


def replay(*names, folder):
    answers = [json.loads((DATA / folder / n).read_text()) for n in names]
    transport = httpx2.MockTransport(lambda request: httpx2.Response(200, json=answers.pop(0)))
    return anthropic.Anthropic(api_key=KEY, http_client=httpx2.Client(transport=transport),
                               max_retries=0)


def sim_agent():
    return sim.preset("tiny", infra_fault_rate=0.0)


def command_agent():
    tasks = pd.DataFrame({"task_id": ["t1", "t2", "t3"], "split": ["train", "train", "test"]})
    return CommandAgent([sys.executable, str(SCRIPT), "pass", "{out}"], tasks, timeout_s=60)


def anthropic_agent():
    return AnthropicAgent(client=replay("lcm_right.json", folder="anthropic_agent"))


AGENTS = {"sim": sim_agent, "command": command_agent, "anthropic": anthropic_agent}


def test_every_shipped_agent_kind_is_covered():
    from gsme import registry

    assert set(AGENTS) == set(registry.AGENTS)


@pytest.mark.parametrize("make", AGENTS.values(), ids=AGENTS.keys())
def test_agent_contract(make, tmp_path):
    agent = make()
    assert isinstance(agent, TaskAgent) and isinstance(agent.name, str)
    tasks = agent.tasks()
    schema.require(tasks, ["task_id", "split"], "tasks")
    assert tasks["task_id"].is_unique and (tasks["split"] == "train").any()
    assert set(tasks["split"]) <= set(schema.SPLITS)
    task = tasks[tasks["split"] == "train"].iloc[0].to_dict()
    harness = shutil.copytree(SEED_HARNESS, tmp_path / "harness")
    if isinstance(agent, AnthropicAgent):
        (harness / "config" / "agent.toml").write_text(
            "temperature = 0.3\nmax_tokens = 1000\nthinking_budget = 0\nturn_limit = 3\n")
        task = {**task, "task_id": "lcm"}
    agent.check_harness(harness)
    traj = agent.run(harness, task, repeat=0, attempt=0, run_seed=0)
    assert isinstance(traj, Trajectory)
    spec = TrialSpec("c", str(task["task_id"]), "train", 0)
    row = to_trials([(spec, traj, "ref")])
    assert len(row) == 1 and row["repeat"].iloc[0] == 0
    assert bool(row["passed"].iloc[0]) == (traj.passed and traj.infra_ok)
    assert isinstance(agent.health_check(), bool)
    blob = pickle.dumps(agent)
    assert KEY.encode() not in blob  # a key never travels to a worker
    again = pickle.loads(blob)
    assert again.name == agent.name and again.tasks().equals(agent.tasks())


def failures():
    t1 = ("user: implement add(a, b)\nassistant: def add(a, b): return a - b\n"
          "assistant: I am confident, submitting without running the tests.\n[submit]\n"
          "grader: FAILED test_add")
    t2 = "assistant: let me reconsider the edge cases once more.\n" * 40 + "[turn limit reached]"
    t3 = ("assistant: SELECT name FROM users WHERE age > 30\nassistant: Final answer: the query\n"
          "grader:  expected JSON output, got plain text")
    return pd.DataFrame({"candidate": "base", "task_id": ["t1", "t2", "t3"],
                         "repeat": [0, 1, 0], "transcript": [t1, t2, t3],
                         "category": ["python", "python", "sql"]})


EVOLVERS = {
    "rule": lambda: RuleEvolver(seed=3),
    "claude": lambda: ClaudeEvolver(client=replay("diagnose_ok.json", "propose_ok.json",
                                                  folder="claude_evolver")),
    "mechanism": lambda: MechanismEvolver(["submit-verify", "format-validator"]),
    "agent": lambda: AgenticEvolver(  # the scripted stand-in agent, in the sandbox
        command=["{python}", str(Path(__file__).parent / "scripts/scripted_evolver.py"), "good"],
        readable=[str(Path(__file__).parent / "scripts/scripted_evolver.py")], minutes=1),
}


def test_every_shipped_evolver_kind_is_covered():
    from gsme import registry

    assert set(EVOLVERS) == set(registry.EVOLVERS)


@pytest.mark.parametrize("make", EVOLVERS.values(), ids=EVOLVERS.keys())
def test_evolver_contract(make):
    evolver = make()
    assert isinstance(evolver, Evolver) and isinstance(evolver.name, str)
    harness = harness_files(SEED_HARNESS)
    vocabulary = Vocabulary.default()
    calls = []
    evolver.reseed(11)
    diagnosed = evolver.diagnose(failures(), harness=harness, vocabulary=vocabulary,
                                 log=calls.append)
    assert list(diagnosed.columns[:7]) == schema.columns("diagnoses")
    if len(diagnosed):
        schema.validate(diagnosed.reset_index(drop=True), "diagnoses")
        assert set(diagnosed["task_id"]) <= set(failures()["task_id"])
    patches = evolver.propose(diagnosed, harness=harness, archive=schema.empty("archive"),
                              vocabulary=vocabulary, n=2, history=schema.empty("history"),
                              log=calls.append)
    assert 0 < len(patches) <= 2
    for patch in patches:
        assert isinstance(patch, Patch) and patch.why in vocabulary  # new labels were added
        validate_patch(harness, patch)
    assert all(isinstance(c, dict) for c in calls)
    if isinstance(evolver, ClaudeEvolver):
        assert [c["kind"] for c in calls] == ["diagnose", "propose"]
    if isinstance(evolver, RuleEvolver):  # reproducible from its seed
        again = make()
        again.reseed(11)
        same = again.propose(again.diagnose(failures(), harness=harness), harness=harness,
                             vocabulary=Vocabulary.default(), n=2)
        assert [p.id for p in same] == [p.id for p in patches]
