"""The task model is frozen: part of the run's commitment, out of every patch's reach, and
never the evolver's model unless the run says so."""

import pandas as pd
import pytest

from gsme.agents.anthropic_agent import AnthropicAgent
from gsme.agents.command import CommandAgent
from gsme.evolvers.claude import ClaudeEvolver
from gsme.evolvers.rule import RuleEvolver
from gsme.patches import FileChange, Patch
from gsme.run import Run, RunError
from gsme.settings import RunConfig

KEY = "sk-ant-api03-TASKMODEL-0123456789abcdef"
CONFIG = "config/agent.toml"


def _model_patch(old: str, new: str, gate: str = "") -> Patch:
    return Patch(id="bigger-model", where="config", why="careless-submit",
                 mechanism="a stronger model", beacon="bigger-model", env_gate=gate,
                 changes=(FileChange(CONFIG, new, old=old),))


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.delenv("GSME_TASK_MODEL", raising=False)
    agent = AnthropicAgent(api_key=KEY, model="claude-haiku-4-5", tasks=["lcm", "gcd_list"])
    with Run.create(tmp_path / "run", agent=agent, evolver=RuleEvolver()) as made:
        yield made


def test_the_run_records_its_frozen_task_model(run):
    assert run.task_model == "claude-haiku-4-5"
    assert run.frozen == ["config/agent.toml:model"]


@pytest.mark.parametrize("gate", ["", "category == 'math'"])
def test_a_patch_that_swaps_the_task_model_is_refused_naming_the_field(run, gate):
    line = 'model = "frozen-task-model"'
    assert line in run.harness("baseline")[CONFIG]
    made, reason = run.add_candidate(
        ["baseline"], patch=_model_patch(line, 'model = "claude-opus-4-8"', gate), round=1)
    assert made is None
    assert reason.startswith("the change sets config/agent.toml model to 'claude-opus-4-8' "
                             "(it was 'frozen-task-model')")
    assert list(run.candidates()["candidate"]) == ["baseline"]  # nothing of it kept
    removed, reason = run.add_candidate(["baseline"], patch=_model_patch(line + "\n", ""),
                                        round=1)
    assert removed is None and "removes config/agent.toml model" in reason


def test_other_config_changes_still_apply(run):
    made, reason = run.add_candidate(["baseline"], patch=_model_patch(
        "turn_limit = 30", "turn_limit = 15"), round=1)
    assert reason is None and made == "c0001"


def test_the_evolver_may_not_run_the_task_model_unless_the_run_says_so(tmp_path, monkeypatch):
    monkeypatch.delenv("GSME_TASK_MODEL", raising=False)
    agent = AnthropicAgent(api_key=KEY, model="claude-opus-4-8", tasks=["lcm", "gcd_list"])
    evolver = ClaudeEvolver(api_key=KEY, model="claude-opus-4-8")
    with pytest.raises(RunError, match="the evolver's model 'claude-opus-4-8' is the frozen "
                                       "task model"):
        Run.create(tmp_path / "same", agent=agent, evolver=evolver)
    assert not (tmp_path / "same").exists()
    with Run.create(tmp_path / "allowed", agent=agent, evolver=evolver,
                    run_config=RunConfig(allow_same_model=True)) as run:
        assert run.task_model == "claude-opus-4-8"


def test_a_run_resumed_with_another_task_model_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("GSME_TASK_MODEL", "claude-haiku-4-5")
    spec = {"kind": "anthropic", "tasks": ["lcm", "gcd_list"]}
    agent = AnthropicAgent(api_key=KEY, tasks=["lcm", "gcd_list"])
    Run.create(tmp_path / "run", agent=agent, agent_spec=spec).close()
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("GSME_TASK_MODEL", "claude-sonnet-4-5")
    with pytest.raises(RunError, match="frozen task model is 'claude-haiku-4-5' but its agent "
                                       "now runs 'claude-sonnet-4-5'"):
        Run.open(tmp_path / "run")
    monkeypatch.setenv("GSME_TASK_MODEL", "claude-haiku-4-5")
    Run.open(tmp_path / "run").close()


def test_a_command_agent_names_its_own_frozen_settings(tmp_path):
    tasks = pd.DataFrame({"task_id": ["a", "b", "c"], "split": ["train", "train", "test"]})
    agent = CommandAgent("true {out}", tasks, task_model="my-7b",
                         frozen=["config/agent.toml:model", "config/agent.toml:decoding.seed"],
                         isolation="none")
    with Run.create(tmp_path / "run", agent=agent) as run:
        assert run.task_model == "my-7b"
        base = run.harness("baseline")[CONFIG].splitlines()[-1]
        made, reason = run.add_candidate(["baseline"], patch=_model_patch(
            base, base + "\n[decoding]\nseed = 7"), round=1)
        assert made is None and "decoding.seed to 7 (it was absent)" in reason
    with pytest.raises(ValueError, match="frozen must list settings as '<file>:<key>'"):
        CommandAgent("true {out}", tasks, frozen=["agent.toml"])
