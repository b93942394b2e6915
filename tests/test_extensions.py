"""Extensions are objects in registries: a design, a keep policy, a log format, an agent, an
evolver and an executor defined here alone run end to end through the command line, and a
package's entry points reach them."""

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gsme import designs, plugins, policy, registry, schema
from gsme.cli import main
from gsme.designs import Fixed
from gsme.evolvers.rule import RuleEvolver
from gsme.executors import Executor
from gsme.importers import Format, Imported
from gsme.pairing import check
from gsme.policy import Policy
from gsme.run import Run
from gsme.settings import GateConfig, RunConfig, ValidationError
from gsme.sim import SimAgent


class Lenient(Fixed):
    """One look, crediting at a one-sided 20%."""

    summary = "one look at a one-sided 20% (a toy)"

    def decide(self, slots, pairs, *, split, gate):
        return super().decide(slots, pairs, split=split,
                              gate=gate.model_copy(update={"z_crit": 0.8416}))


class Everything(Policy):
    summary = "keeps every child (a toy)"

    def keep(self, decisions, expected, *, keep):
        return np.ones(len(decisions), dtype=bool)


class OldLenient(Fixed):
    """:class:`Lenient` as written before 0.3.0, taking ``config=``."""

    summary = "one look at a one-sided 20% (a toy, before 0.3.0)"

    def decide(self, slots, pairs, *, split, config):
        return super().decide(slots, pairs, split=split,
                              config=config.model_copy(update={"z_crit": 0.8416}))


class OldEverything(Policy):
    """:class:`Everything` as written before 0.3.0, taking ``config=``."""

    summary = "keeps every child (a toy, before 0.3.0)"

    def keep(self, decisions, expected, *, config):
        return np.full(len(decisions), config.worth_pp == 0.25)  # the run's KeepConfig


class Lines(Format):
    """``task_id passed`` per line, a file per candidate (``*.lines``)."""

    summary = "task and verdict per line (a toy)"

    def read(self, path, *, candidate=None, split="train"):
        rows = [line.split() for line in Path(path).read_text().splitlines() if line.strip()]
        frame = pd.DataFrame({"candidate": candidate or Path(path).stem,
                              "task_id": [task for task, _ in rows], "split": split,
                              "passed": [verdict == "pass" for _, verdict in rows]})
        frame["repeat"] = frame.groupby("task_id").cumcount()
        dropped = pd.DataFrame(columns=["candidate", "source", "task_id", "reason"])
        return Imported(schema.as_trials(frame), dropped)

    def guess_can_open(self, path):
        return path.suffix == ".lines"


def _note(log, line: str) -> None:
    with Path(log).open("a") as out:
        out.write(line + "\n")


class Noted(SimAgent):
    """The simulated agent, noting each call in ``log`` (a toy)."""

    def __init__(self, log: str, preset: str = "tiny"):
        super().__init__(preset)
        self.log = log
        self.name = f"noted:{self.name}"

    def run_many(self, harness, trials, *, run_seed):
        _note(self.log, f"run_many {len(trials)}")
        return super().run_many(harness, trials, run_seed=run_seed)


class OnePatch(RuleEvolver):
    """The rule evolver, proposing one patch a round and noting it in ``log`` (a toy)."""

    name = "one-patch"

    def __init__(self, log: str, *, seed: int = 0):
        super().__init__(seed=seed)
        self.log = log

    def propose(self, diagnoses, *, n, **kwargs):
        patches = super().propose(diagnoses, n=1, **kwargs)
        _note(self.log, f"propose {len(patches)}")
        return patches


class InProcess(Executor):
    """Each candidate's trials of a pass in one call of the agent, in this process, each
    pass noted in ``log`` (a toy)."""

    def __init__(self, log: str):
        self.log = log

    def stream(self, specs, *, agent, snapshots, tasks, run_seed, patience):
        _note(self.log, f"stream {len(specs)}")
        for candidate in dict.fromkeys(spec.candidate for spec in specs):
            mine = [spec for spec in specs if spec.candidate == candidate]
            trials = [(tasks[spec.task_id], spec.repeat, spec.attempt) for spec in mine]
            done = agent.run_many(snapshots[candidate].files, trials, run_seed=run_seed)
            yield list(zip(mine, done, strict=True))


@pytest.fixture
def toys():
    added = [(registry.DESIGNS, "lenient", Lenient), (registry.POLICIES, "everything",
                                                      Everything()),
             (registry.FORMATS, "lines", Lines)]
    for where, name, obj in added:
        where.register(name, obj)
    yield
    for where, name, _ in added:
        where.unregister(name)


def _help(capsys, *argv) -> str:
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    return " ".join(capsys.readouterr().out.split())


def test_a_registered_design_and_policy_run_the_demo(toys, tmp_path, capsys):
    shown = _help(capsys, "demo")
    assert "lenient (one look at a one-sided 20% (a toy))" in shown
    assert "everything (keeps every child (a toy))" in shown
    assert "lenient" in _help(capsys, "plan")
    assert main(["demo", "--preset", "tiny", "--rounds", "2", "--gate", "lenient",
                 "--policy", "everything", "--out", str(tmp_path / "d"), "--quiet"]) == 0
    assert "SIMULATED" in capsys.readouterr().out
    with Run.open(tmp_path / "d", read_only=True) as run:
        assert (run.config.gate.design, run.config.policy) == ("lenient", "everything")
        assert run.sealed
        children = run.decisions()
        assert len(children) and run.archive()["candidate"].isin(children["child"]).any()
    assert main(["plan", "--tasks", "40", "--effect", "10", "--design", "lenient",
                 "--json"]) == 0
    assert '"design":"lenient"' in capsys.readouterr().out.replace(" ", "")


def test_a_registered_format_is_read_and_detected_by_compare(toys, tmp_path, capsys):
    assert "lines (task and verdict per line (a toy))" in _help(capsys, "compare")
    rng = np.random.default_rng(0)
    for name, rate in (("base", 0.3), ("child", 0.8)):
        lines = [f"t{i} {'pass' if rng.random() < rate else 'fail'}"
                 for i in range(30) for _ in range(3)]
        (tmp_path / f"{name}.lines").write_text("\n".join(lines))
    for extra in ([], ["--format", "lines"]):
        assert main(["compare", str(tmp_path / "base.lines"), str(tmp_path / "child.lines"),
                     *extra]) == 0
        out = capsys.readouterr().out
        assert "base" in out and "child" in out and "credit" in out


@pytest.fixture
def ab_slots():
    """c gains on all 6 tasks (one-sided p 1/64), d on 5 (p 2/64): the fixed design credits
    c alone, a design at 20% both."""
    t = pd.DataFrame({"candidate": np.repeat(["p", "c", "d"], 6), "split": "train",
                      "task_id": [f"t{i}" for i in range(6)] * 3, "repeat": 0,
                      "passed": [0] * 6 + [1] * 6 + [1, 1, 1, 1, 1, 0]})
    return check(t).slots


def _decide_and_keep(design, rule, slots) -> tuple[list, list]:
    """The decisions of c and d under ``design``, and which of two decided children ``rule``
    keeps, each registered as ``toy``."""
    registry.DESIGNS.register("toy", design)
    registry.POLICIES.register("toy", rule)
    try:
        decided = designs.compare(slots, pd.DataFrame({"child": ["c", "d"], "parent": "p"}),
                                  split="train", gate=GateConfig(design="toy"))
        two = pd.DataFrame({"decision": ["credit", "cull"], "delta_pp": [5.0, -4.0],
                            "se_pp": [2.0, 1.5]})
        return decided["decision"].tolist(), policy.kept(two, policy="toy").tolist()
    finally:
        registry.DESIGNS.unregister("toy")
        registry.POLICIES.unregister("toy")


def test_a_design_and_a_policy_written_with_config_still_work_and_warn(ab_slots):
    with pytest.warns(DeprecationWarning) as caught:
        got = _decide_and_keep(OldLenient, OldEverything(), ab_slots)
    assert got == (["credit", "credit"], [True, True])
    assert sorted({str(w.message) for w in caught}) == [
        "Fixed.decide(config=) is now Fixed.decide(gate=) (the old keyword goes in 0.4.0)",
        "OldEverything.keep takes config=: gsme passes keep= since 0.3.0 (config= goes in 0.4.0)",
        "OldLenient.decide takes config=: gsme passes gate= since 0.3.0 (config= goes in 0.4.0)"]


def test_a_design_and_a_policy_taking_gate_and_keep_run_silently(ab_slots):
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        assert _decide_and_keep(Lenient, Everything(), ab_slots) == (["credit", "credit"],
                                                                     [True, True])
        assert _decide_and_keep(Fixed, policy.Gated(), ab_slots) == (
            ["credit", "inconclusive"], [True, False])


def test_unknown_names_list_the_registered_ones(toys):
    with pytest.raises(ValidationError, match="lenient"):
        GateConfig(design="strict")
    with pytest.raises(ValidationError, match="everything"):
        RunConfig(policy="hopeful")
    with pytest.raises(ValueError, match="registered already"):
        registry.DESIGNS.register("fixed", Lenient)


def test_gsme_s_own_names_resolve_to_their_kind():
    from gsme.designs import Design
    from gsme.importers import Format as FormatBase
    from gsme.policy import Policy as PolicyBase

    for where, kind in ((registry.DESIGNS, Design), (registry.POLICIES, PolicyBase),
                        (registry.FORMATS, FormatBase)):
        for name in where.names():
            assert isinstance(where.get(name), kind), name
            assert where.get(name).summary, name


def test_a_package_registers_through_entry_points(tmp_path):
    (tmp_path / "toy_gsme.py").write_text(textwrap.dedent("""
        from gsme.policy import Gated
        from gsme.designs import Fixed

        class Strict(Fixed):
            summary = "the fixed design (a packaged toy)"

        class Careful(Gated):
            summary = "the gated policy (a packaged toy)"
    """))
    info = tmp_path / "toy_gsme-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-gsme\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[gsme.designs]\nstrict = toy_gsme:Strict\n\n[gsme.policies]\ncareful = toy_gsme:Careful\n")
    code = ("from gsme.registry import DESIGNS, POLICIES; from gsme.settings import GateConfig;"
            "GateConfig(design='strict'); print(DESIGNS.names(), POLICIES.names(),"
            "DESIGNS.get('strict').summary)")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, check=False)
    assert done.returncode == 0, done.stderr
    assert "'strict'" in done.stdout and "'careful'" in done.stdout
    assert "a packaged toy" in done.stdout
    shown = subprocess.run([sys.executable, "-m", "gsme.cli", "demo", "--help"],
                           capture_output=True, text=True, env=env, check=False).stdout
    assert "strict (the fixed design (a packaged toy))" in " ".join(shown.split())


@pytest.fixture
def parts():
    added = [registry.AGENTS, registry.EVOLVERS, registry.EXECUTORS]
    for where, cls in zip(added, (Noted, OnePatch, InProcess), strict=True):
        where.register("toy", cls)
    yield
    for where in added:
        where.unregister("toy")


def _toy_config(folder: Path) -> Path:
    """A run of the toy agent, evolver and executor, each noting its calls in a log."""
    logs = {part: folder / f"{part}.log" for part in ("agent", "evolver", "executor")}
    config = folder / "run.toml"
    config.write_text("\n".join([
        '[run]\ndir = "run"\nrounds = 2\nchildren_per_round = 2\n',
        *(f'[{part}]\nkind = "toy"\nlog = "{log}"\n' for part, log in logs.items())]))
    return config


def _calls(folder: Path, part: str) -> list[str]:
    log = folder / f"{part}.log"
    return log.read_text().split("\n")[:-1] if log.exists() else []


def test_a_registered_agent_evolver_and_executor_run_by_kind(parts, tmp_path, capsys):
    shown = _top_help(capsys)
    for group, last in (("gsme.agents", "anthropic"), ("gsme.evolvers", "agent"),
                        ("gsme.executors", "inspect")):
        assert f"{group}: " in shown and f"{last}, toy\n" in shown.split(f"{group}: ")[1]
    assert main(["run", str(_toy_config(tmp_path)), "--quiet"]) == 0
    assert "noted:simulated:tiny" in capsys.readouterr().out
    assert _calls(tmp_path, "evolver") == ["propose 1", "propose 1"]
    passes = [int(line.split()[1]) for line in _calls(tmp_path, "executor")]
    ran = [int(line.split()[1]) for line in _calls(tmp_path, "agent")]
    assert passes and sum(passes) == sum(ran)  # every trial went through the toy executor
    with Run.open(tmp_path / "run", read_only=True) as run:
        assert run.sealed and run.agent.name.startswith("noted:")
        assert len(run.trials()) == sum(ran)
        assert run.executor_spec["kind"] == "toy"
        assert (run.decisions().groupby("round").size() <= 2).all()  # one child + one merge


def test_the_demo_and_grow_take_a_registered_executor_by_name(parts, tmp_path, capsys):
    log = tmp_path / "executor.log"
    assert main(["demo", "--preset", "tiny", "--rounds", "1", "--quiet", "--out",
                 str(tmp_path / "d"), "--executor", "toy", "--executor-opt", f"log={log}"]) == 0
    assert "SIMULATED" in capsys.readouterr().out
    demo = _calls(tmp_path, "executor")
    assert len(demo) >= 2  # the cold start's pass, a round's, the seal
    with Run.open(tmp_path / "d", read_only=True) as run:
        grown = plugins.build_agent({**run.agent_spec, "grown": 3}).tasks()
    grown.to_csv(tmp_path / "grown.csv", index=False)
    assert main(["grow", str(tmp_path / "d"), "--tasks", str(tmp_path / "grown.csv"),
                 "--agent", "grown=3", "--quiet"]) == 0  # the run's stored executor
    assert len(_calls(tmp_path, "executor")) > len(demo)
    assert main(["demo", "--executor", "nope"]) == 2
    assert "[executor] kind = 'nope': must be one of [" in capsys.readouterr().err


def _top_help(capsys) -> str:
    with pytest.raises(SystemExit):
        main(["--help"])
    return capsys.readouterr().out


def test_a_package_registers_an_agent_evolver_and_executor_through_entry_points(tmp_path):
    info = tmp_path / "toy_parts-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-parts\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[gsme.agents]\ntoy = test_extensions:Noted\n\n[gsme.evolvers]\n"
        "toy = test_extensions:OnePatch\n\n[gsme.executors]\ntoy = test_extensions:InProcess\n")
    here = Path(__file__).resolve().parent  # this file is the package's module
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(here)])}
    shown = subprocess.run([sys.executable, "-m", "gsme.cli", "--help"], capture_output=True,
                           text=True, env=env, check=False).stdout
    for group, last in (("gsme.agents", "anthropic"), ("gsme.evolvers", "agent"),
                        ("gsme.executors", "inspect")):
        assert f"{group}: " in shown and f"{last}, toy\n" in shown.split(f"{group}: ")[1]
    done = subprocess.run([sys.executable, "-m", "gsme.cli", "run", str(_toy_config(tmp_path)),
                           "--quiet"], capture_output=True, text=True, env=env, check=False,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert _calls(tmp_path, "evolver") == ["propose 1", "propose 1"]
    assert _calls(tmp_path, "executor") and _calls(tmp_path, "agent")
