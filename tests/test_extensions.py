"""Extensions are objects in registries: a design, a keep policy and a log format defined
here alone run end to end through the command line, and a package's entry points reach
them."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gsme import registry, schema
from gsme.cli import main
from gsme.designs import Fixed
from gsme.importers import Format, Imported
from gsme.policy import Policy
from gsme.run import Run
from gsme.settings import GateConfig, RunConfig, ValidationError


class Lenient(Fixed):
    """One look, crediting at a one-sided 20%."""

    summary = "one look at a one-sided 20% (a toy)"

    def decide(self, slots, pairs, *, split, config):
        return super().decide(slots, pairs, split=split,
                              config=config.model_copy(update={"z_crit": 0.8416}))


class Everything(Policy):
    summary = "keeps every child (a toy)"

    def keep(self, decisions, expected, *, config):
        return np.ones(len(decisions), dtype=bool)


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
        assert len(children) and run.archive()["candidate"].isin(children["candidate"]).any()
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
