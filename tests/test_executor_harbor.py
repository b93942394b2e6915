"""The Harbor executor against a fake ``harbor`` (tests/scripts/fake_harbor.py, which
follows Harbor 0.22.0, harbor-framework/harbor commit 39b85872597e): the job config it
writes, each trial read back once, Harbor's failures, a resumed job, the simulator's
decisions reproduced through Harbor, and ``kill -9`` of gsme during a job."""

import dataclasses
import json
import os
import signal
import socketserver
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from gsme import evolve, sim
from gsme.agents.base import TrialSpec
from gsme.config import load
from gsme.evolvers import RuleEvolver
from gsme.executors import Snapshot
from gsme.executors.harbor import HarborExecutor
from gsme.run import Run
from gsme.settings import ConfigError
from tests.faults.faultkit import cli, one_line_error, tiny_config, within

HARBOR = Path(__file__).parent / "scripts" / "harbor"
TASKS = ("t1", "t2", "t3")
SNAPSHOTS = {"baseline": Snapshot({"prompt.md": "Be brief."}),
             "c1": Snapshot({"prompt.md": "Test first.", "run.sh": "echo"},
                            executables=frozenset({"run.sh"}))}
SPECS = ([TrialSpec("baseline", t, "train", r) for t in TASKS for r in (0, 1)]
         + [TrialSpec("c1", "t1", "train", 0), TrialSpec("c1", "t2", "train", 0, attempt=1)])


@pytest.fixture
def here(tmp_path, monkeypatch):
    """A folder with a local dataset of TASKS (and the simulator's tasks), the fake on call."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FAKE_HARBOR_PYTHON", sys.executable)
    for name in ("FAKE_HARBOR_SIM", "FAKE_HARBOR_FAULT", "FAKE_HARBOR_FAULT_AT",
                 "FAKE_HARBOR_SECONDS", "FAKE_HARBOR_REWARD"):
        monkeypatch.delenv(name, raising=False)
    for task in [*TASKS, *sim.preset("tiny").tasks()["task_id"]]:
        (tmp_path / "tasks" / task).mkdir(parents=True)
        (tmp_path / "tasks" / task / "task.toml").write_text("")
    return tmp_path


def harbor(**settings) -> HarborExecutor:
    return HarborExecutor(**{"path": "tasks", "agent_import_path": "my_agent:HarnessAgent",
                             "harbor": str(HARBOR), "jobs_dir": "jobs", **settings})


def stream(executor, specs=SPECS):
    """Every ``(spec, trajectory)`` a pass yields, in order."""
    out = []
    for done in executor.stream(specs, agent=None, snapshots=SNAPSHOTS, tasks={}, run_seed=7,
                                patience=lambda: None):
        out += done
    return out


@pytest.mark.parametrize("settings, says", [
    ({"env": "kubernetes"}, "[executor] env must be one of"),
    ({"n_concurrent": 0}, "[executor] n_concurrent must be an integer >= 1, got 0"),
    ({"dataset": "terminal-bench@2.0"}, "[executor] give exactly one of dataset"),
    ({"agent_import_path": "terminus-2"}, "[executor] agent_import_path must name"),
    ({"harbor": "no-such-harbor"}, "[executor] harbor: no executable 'no-such-harbor'"),
    ({"args": ["--job-name", "x"]}, "[executor] args may not set ['--job-name']"),
    ({"args": "--debug"}, "[executor] args must be a list of strings"),
    ({"threshold": 2}, "[executor] threshold must be a number in [0, 1], got 2"),
    ({"path": "nowhere"}, "[executor] path: no such folder: nowhere"),
])
def test_a_bad_setting_is_one_line_naming_its_key(here, settings, says):
    with pytest.raises(ConfigError) as err:
        harbor(**settings)
    assert says in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("table, says", [
    ('n_concurrent = 0', "[executor] n_concurrent must be an integer >= 1, got 0"),
    ('harbor = "no-such-harbor"', "[executor] harbor: no executable 'no-such-harbor' found"),
])
def test_gsme_run_with_a_bad_harbor_setting_exits_2_with_one_line(here, capsys, table, says):
    config = tiny_config(here / "run.toml", here / "run")
    config.write_text(config.read_text() + '[executor]\nkind = "harbor"\npath = "tasks"\n'
                      f'agent_import_path = "my_agent:HarnessAgent"\n{table}\n')
    code, _, err = cli(capsys, "run", config)
    assert code == 2 and says in one_line_error(err)
    assert not (here / "run").exists()


def test_a_configs_harbor_folders_are_relative_to_it_and_its_jobs_the_runs_own(here):
    (here / "conf").mkdir()
    config = here / "conf" / "run.toml"
    table = ('[executor]\nkind = "harbor"\npath = "../tasks"\n'
             f'agent_import_path = "my_agent:HarnessAgent"\nharbor = "{HARBOR}"\n')
    config.write_text(f'[run]\ndir = "runs/a"\n{table}')
    spec = load(config)
    assert spec.executor["path"] == str(here / "tasks")
    assert spec.executor["jobs_dir"] == str(here / "conf" / "runs" / "a.harbor-jobs")
    config.write_text(f'[run]\ndir = "runs/b"\n{table}')
    assert load(config).executor["jobs_dir"] != spec.executor["jobs_dir"]
    config.write_text(f'[run]\ndir = "runs/a"\n{table}jobs_dir = "jobs"\n')
    assert load(config).executor["jobs_dir"] == str(here / "conf" / "jobs")
    config.write_text(f'[run]\ndir = "runs/a"\n{table}jobs_dir = "runs/a/jobs"\n')
    with pytest.raises(ConfigError, match=r"\[executor\] jobs_dir = 'runs/a/jobs' is or lies "
                                          "inside the run directory"):
        load(config)


@pytest.mark.slow  # runs the fake harbor
def test_a_pass_is_harbors_job_config_and_each_slot_comes_back_once(here):
    done = stream(harbor(n_concurrent=3, model="anthropic/claude-x", args=["--debug"]))
    assert sorted(map(repr, (spec for spec, _ in done))) == sorted(map(repr, SPECS))
    assert all(t.passed and t.infra_ok and t.score == 1.0 and t.tokens == 1100
               and t.cost_usd == 0.001 for _, t in done)
    configs = [json.loads(p.read_text()) for p in sorted(Path("jobs/.gsme").glob("gsme-*.json"))]
    assert len(configs) == 3  # baseline's 2 repeats share t1-t3; c1's two entries do not
    for config in configs:
        assert set(config) == {"job_name", "jobs_dir", "n_attempts", "n_concurrent_trials",
                               "quiet", "retry", "environment", "agents", "datasets"}
        assert config["n_attempts"] == 1 and config["retry"] == {"max_retries": 0}
        assert config["environment"] == {"type": "docker"}
        assert config["datasets"][0]["path"] == str(here / "tasks")
        assert (here / "jobs" / config["job_name"] / "config.json").is_file()
        for agent in config["agents"]:
            assert agent["import_path"] == "my_agent:HarnessAgent"
            assert agent["model_name"] == "anthropic/claude-x"
            kwargs = agent["kwargs"]
            files = SNAPSHOTS[kwargs["gsme_candidate"]].files
            folder = Path(kwargs["harness_dir"])
            assert {p.name: p.read_text() for p in folder.iterdir()} == files
            assert kwargs["gsme_run_seed"] == 7 and kwargs["gsme_split"] == "train"
    assert sum(c["n_concurrent_trials"] for c in configs) <= 3 + len(configs)
    baseline = next(c for c in configs if len(c["agents"]) == 2)
    assert baseline["datasets"][0]["task_names"] == list(TASKS)
    assert os.access(Path(configs[0]["agents"][0]["kwargs"]["harness_dir"]).parent, os.W_OK)


@pytest.mark.slow  # runs the fake harbor
@pytest.mark.parametrize("fault, infra_ok, says", [
    ("exception:AgentTimeoutError", True, "AgentTimeoutError: injected by fake_harbor"),
    ("exception:EnvironmentStartTimeoutError", False, "EnvironmentStartTimeoutError"),
    ("exception:ApiRateLimitError", False, "ApiRateLimitError"),
    ("no_result", False, "has no result.json"),
    ("malformed", False, "has a malformed result.json"),
    ("reward:1.5", False, "reward 'reward' = 1.5: a reward must be a number in [0, 1]"),
])
def test_a_failed_trial_is_scored_or_rerun_as_harbors_table_says(here, monkeypatch, fault,
                                                                  infra_ok, says):
    monkeypatch.setenv("FAKE_HARBOR_FAULT", fault)
    monkeypatch.setenv("FAKE_HARBOR_FAULT_AT", "1")
    specs = [TrialSpec("baseline", t, "train", 0) for t in TASKS]
    done = stream(harbor(), specs)
    assert sorted(map(repr, (spec for spec, _ in done))) == sorted(map(repr, specs))
    failed = [t for _, t in done if t.error]
    assert len(failed) == 1 and says in failed[0].error
    assert failed[0].infra_ok is infra_ok and not failed[0].passed
    assert failed[0].score == (0.0 if infra_ok else None)
    assert all(t.passed for _, t in done if not t.error)


@pytest.mark.slow  # runs the fake harbor
def test_a_trial_gsme_did_not_ask_for_is_dropped_with_a_line(here, monkeypatch, capfd):
    monkeypatch.setenv("FAKE_HARBOR_FAULT", "extra_task")
    specs = [TrialSpec("baseline", "t1", "train", 0)]
    done = stream(harbor(), specs)
    assert [spec for spec, _ in done] == specs and done[0][1].passed
    lines = [x for x in capfd.readouterr().err.splitlines() if "dropped trial" in x]
    assert len(lines) == 1 and "a trial gsme did not ask for" in lines[0]


@pytest.mark.slow  # runs the fake harbor
def test_a_job_killed_halfway_leaves_infra_failures_and_is_resumed(here, monkeypatch):
    specs = [TrialSpec("baseline", t, "train", 0) for t in TASKS]
    monkeypatch.setenv("FAKE_HARBOR_FAULT", "kill")
    monkeypatch.setenv("FAKE_HARBOR_FAULT_AT", "1")
    done = dict(stream(harbor(), specs))
    assert done[specs[0]].passed  # landed before the kill
    assert not done[specs[1]].infra_ok and "has no result.json" in done[specs[1]].error
    assert not done[specs[2]].infra_ok and "exited with code -9" in done[specs[2]].error
    monkeypatch.delenv("FAKE_HARBOR_FAULT")
    again = dict(stream(harbor(), specs))  # the same pass again: its first trial is read back
    assert set(again) == set(specs) and all(t.passed for t in again.values())
    logs = list(Path("jobs/.gsme").glob("*.log"))
    assert len(logs) == 1 and "Resuming job" in (here / "jobs" / logs[0].stem / "job.log"
                                                  ).read_text()
    trials = list((here / "jobs" / logs[0].stem).glob("*/result.json"))
    assert len(trials) == 3  # the first trial was not run again


@pytest.mark.slow  # runs the fake harbor
def test_a_job_harbor_refuses_is_one_line(here):
    with pytest.raises(ConfigError, match=r"harbor jobs start exited with code 1 before "
                                          r"starting any trial: Error: dataset"):
        stream(harbor(path=None, dataset="terminal-bench@2.0"))


@pytest.mark.slow  # runs the fake harbor
def test_rewards_without_the_reward_key_are_one_line(here):
    with pytest.raises(ConfigError, match="not reward_key='accuracy'"):
        stream(harbor(reward_key="accuracy"), SPECS[:1])


@pytest.fixture
def simulator(here, monkeypatch, request):
    """The simulator served to the fake harbor (FAKE_HARBOR_SIM_SOCKET): its trials come
    from this process's ``sim.preset("tiny", **param)``, and it starts without importing
    gsme."""
    agent = sim.preset("tiny", **getattr(request, "param", {}))
    records = {r["task_id"]: r for r in agent.tasks().to_dict("records")}

    class Handler(socketserver.StreamRequestHandler):
        def handle(self):
            asked = json.loads(self.rfile.readline())
            traj = agent.run(Path(asked["harness_dir"]), records[asked["task"]],
                             repeat=asked["repeat"], attempt=asked["attempt"],
                             run_seed=asked["run_seed"])
            self.wfile.write((json.dumps(dataclasses.asdict(traj)) + "\n").encode())

    server = socketserver.ThreadingUnixStreamServer(str(here / "sim.sock"), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("FAKE_HARBOR_SIM_SOCKET", str(here / "sim.sock"))
    yield
    server.shutdown()
    server.server_close()


@pytest.mark.slow  # runs the fake harbor
def test_a_run_through_harbor_decides_as_the_simulator_does(here, simulator):
    decisions, trials = {}, {}
    for name, executor in [("in-process", None), ("harbor", harbor(n_concurrent=8))]:
        run = Run.create(here / name, agent=sim.preset("tiny"), evolver=RuleEvolver(seed=0))
        decisions[name] = evolve.evolve(run, rounds=2, executor=executor, progress=False)
        trials[name] = run.trials().sort_values(["candidate", "split", "task_id", "repeat",
                                                 "attempt"], ignore_index=True)
        run.close()
    columns = ["child", "round", "decision", "kept"]
    assert decisions["harbor"][columns].equals(decisions["in-process"][columns])
    assert decisions["harbor"]["kept"].any() and len(decisions["harbor"]) == 6
    keys = ["candidate", "task_id", "repeat", "attempt", "passed", "infra_ok", "beacons",
            "activated", "pathology"]
    assert trials["harbor"][keys].equals(trials["in-process"][keys])
    assert (trials["harbor"]["cost_usd"] - trials["in-process"]["cost_usd"]).abs().max() < 1e-12


SCRIPT = textwrap.dedent("""
    import json, os, sys
    from gsme import sim
    from gsme.measure import measure
    from gsme.run import Run
    from gsme.executors.harbor import HarborExecutor
    agent = sim.preset("tiny", infra_fault_rate=0.0)
    run = (Run.open("run", agent=agent) if os.path.isdir("run") else
           Run.create("run", agent=agent))
    measure(run, ["baseline"], progress=False, executor=HarborExecutor(
        path="tasks", agent_import_path="my_agent:HarnessAgent", harbor=sys.argv[1],
        jobs_dir="jobs", n_concurrent=4))
    run.close()
""")


@pytest.mark.slow  # runs the fake harbor
@pytest.mark.parametrize("simulator", [{"infra_fault_rate": 0.0}], indirect=True)
def test_kill_9_during_a_harbor_job_loses_nothing_and_scores_nothing_twice(here, simulator,
                                                                           monkeypatch):
    monkeypatch.setenv("FAKE_HARBOR_SECONDS", "0.1")
    monkeypatch.setenv("FAKE_HARBOR_PIDS", str(here / "pids"))
    (here / "go.py").write_text(SCRIPT)

    def finished():
        return [p for p in Path("jobs").glob("gsme-*/*/result.json")]

    gsme = subprocess.Popen([sys.executable, "go.py", str(HARBOR)])
    try:
        assert within(120, lambda: len(finished()) >= 8)
    finally:
        gsme.send_signal(signal.SIGKILL)
        gsme.wait()
    job_logs = list(Path("jobs/.gsme").glob("*.log"))
    harbors = [int(pid) for pid in (here / "pids").read_text().split()]
    assert within(30, lambda: not any(map(_alive, harbors)))  # Harbor was told gsme died
    before = {p.parent.name for p in finished()}
    done = subprocess.run([sys.executable, "go.py", str(HARBOR)], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    run = Run.open(here / "run", read_only=True)
    trials = run.trials(split="train")
    run.close()
    slots = trials[["candidate", "task_id", "repeat", "attempt"]]
    assert not slots.duplicated().any() and len(trials) == 48  # 16 tasks at k = 3, once
    results = {}
    for path in finished():
        data = json.loads(path.read_text())
        kwargs = data["config"]["agent"]["kwargs"]
        results.setdefault((data["task_name"], kwargs["gsme_repeat"]), []).append(
            path.parent.name)
    assert all(len(names) == 1 for names in results.values())  # no slot run twice
    assert before <= {n for names in results.values() for n in names}  # none lost
    assert len(job_logs) == 1 and len(list(Path("jobs/.gsme").glob("*.log"))) > 1  # the rest


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "State:\tZ" not in status


def test_harbor_logs_read_a_reward_outside_0_1_and_a_failed_step_as_infra_failures(here):
    from gsme.importers import read_harbor

    trials = [("a", {"verifier_result": {"rewards": {"reward": 1.5}}}),
              ("b", {"verifier_result": {"rewards": {"reward": 1.0}},
                     "step_results": [{"exception_info": None,
                                       "agent_result": {"n_input_tokens": 10, "cost_usd": 0.5}},
                                      {"exception_info": {"exception_type": "HealthcheckError",
                                                          "exception_message": "gone"},
                                       "agent_result": {"n_input_tokens": 5, "cost_usd": 0.25}}]}),
              ("c", {"verifier_result": {"rewards": {"reward": 0.5}},
                     "step_results": [{"exception_info": {"exception_type": "AgentTimeoutError",
                                                          "exception_message": "slow"}}]})]
    for name, fields in trials:
        (here / "job" / name).mkdir(parents=True)
        (here / "job" / name / "result.json").write_text(json.dumps(
            {"task_name": name, "trial_name": name, **fields}))
    got = read_harbor("job").trials.set_index("task_id")
    assert not got.loc["a", "infra_ok"] and "1.5" in got.loc["a", "error"]
    assert not got.loc["b", "infra_ok"] and got.loc["b", "error"] == "HealthcheckError: gone"
    assert got.loc["b", "tokens"] == 15 and got.loc["b", "cost_usd"] == 0.75
    assert got.loc["c", "infra_ok"] and got.loc["c", "score"] == 0.5
