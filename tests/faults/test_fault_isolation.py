"""Trials are isolated from the run and from each other, and never outlive the run."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import ClassVar

import pandas as pd
from faultkit import cli, gsme

from gsme.run import Run

PROBE = textwrap.dedent('''
    import json, os, sys
    from pathlib import Path
    harness, task, out = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    seen = {"harness": str(harness.resolve()), "leak_before": (harness / "prompt/leak.md").exists(),
            "ledger_up": any((p / "ledger.sqlite").exists() for p in harness.resolve().parents),
            "files": sorted(str(p.relative_to(harness)) for p in harness.rglob("*"))}
    (harness / "prompt" / "leak.md").write_text("left by " + task)  # tries to leak
    (harness / "prompt" / "system.md").write_text("overwritten")
    (out / "result.json").write_text(json.dumps({"passed": task.endswith("1"),
                                                 "transcript_text": json.dumps(seen)}))
''')


def _command_config(tmp_path, command, *, rounds=1, pass_env="", isolation="sandbox"):
    (tmp_path / "probe.py").write_text(PROBE)
    tasks = pd.DataFrame({"task_id": [f"t{i}" for i in range(8)],
                          "split": ["train"] * 6 + ["test"] * 2})
    tasks.to_csv(tmp_path / "tasks.csv", index=False)
    path = tmp_path / "c.toml"
    path.write_text(
        f'[run]\ndir = "run"\nrounds = {rounds}\nchildren_per_round = 1\nworkers = 2\n'
        f'[agent]\nkind = "command"\ntasks = "tasks.csv"\ncommand = "{command}"\n{pass_env}'
        f'isolation = "{isolation}"\n'
        '[evolver]\nkind = "rule"\n')
    return path


def test_each_trial_sees_only_a_clean_copy_of_its_harness(tmp_path, capsys):
    path = _command_config(tmp_path, "{python} probe.py {harness} {task_id} {out}")
    assert cli(capsys, "run", path, "--quiet")[0] == 0
    with Run.open(tmp_path / "run", read_only=True) as run:
        seen = [json.loads(run.transcript(ref)) for ref in run.trials()["trajectory"]]
        run_dir = run.path.resolve()
        test_ids = set(run.tasks("test")["task_id"])
        files = run.harness("baseline")
    assert len(seen) > 20
    assert not any(s["leak_before"] for s in seen)  # nothing a trial wrote reaches another
    assert not any(s["ledger_up"] for s in seen)  # no ledger above the harness copy
    assert not any(Path(s["harness"]).is_relative_to(run_dir) for s in seen)
    assert all("prompt/leak.md" not in s["files"] for s in seen)
    assert not any(t in json.dumps(files) for t in test_ids)
    assert files["prompt/system.md"] != "overwritten"  # the committed harness is untouched


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


SLEEPER = textwrap.dedent('''
    import os, subprocess, sys, time
    from pathlib import Path
    out, marks = Path(sys.argv[1]), Path(sys.argv[2])
    child = subprocess.Popen(["sleep", "300"])
    (marks / f"{os.getpid()}.json").write_text(f'[{os.getpid()}, {child.pid}, "{out}"]')
    time.sleep(300)
''')


def test_killing_the_run_ends_its_trial_processes_and_their_folders(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    (tmp_path / "sleeper.py").write_text(SLEEPER)
    path = _command_config(tmp_path, f"{{python}} sleeper.py {{out}} {marks}", isolation="none")
    proc = subprocess.Popen([sys.executable, "-m", "gsme.cli", "run", str(path), "--quiet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 90
    while time.time() < deadline and len(list(marks.glob("*.json"))) < 2:
        time.sleep(0.05)
    started = [json.loads(p.read_text()) for p in marks.glob("*.json")]
    assert len(started) >= 2, "no trial started"
    assert all(_alive(pid) and _alive(child) for pid, child, _ in started)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.time() + 60  # the reaper and the folder janitor act after gsme dies

    def gone() -> bool:
        return not any(_alive(p) or _alive(c) or Path(out).exists() for p, c, out in started)

    while time.time() < deadline and not gone():
        time.sleep(0.05)
    assert not any(_alive(p) or _alive(c) for p, c, _ in started)
    assert not any(Path(out).exists() for _, _, out in started)


def test_the_evolver_reads_harness_files_from_git_not_a_folder(tmp_path):
    from gsme import evolve, sim
    from gsme.evolvers.rule import RuleEvolver

    class Spy(RuleEvolver):
        harnesses: ClassVar[list] = []

        def propose(self, diagnoses, *, harness, **kwargs):
            self.harnesses.append(harness)
            return super().propose(diagnoses, harness=harness, **kwargs)

    with Run.create(tmp_path / "r", agent=sim.preset("tiny"), evolver=Spy()) as run:
        evolve.run_round(run, children=1, recombinations=0, progress=False)
        assert Spy.harnesses == [run.harness("baseline")]
        assert isinstance(Spy.harnesses[0], dict)


def test_a_second_writer_is_refused_while_readers_work(finished, tmp_path, capsys):
    import shutil

    live = shutil.copytree(finished, tmp_path / "live")
    with Run.open(live):  # this process is the writer now
        other = gsme("resume", live)
        assert other.returncode == 2
        line = other.stderr.strip()
        assert line.count("\n") == 0 and f"in use by pid {os.getpid()}" in line
        assert "Traceback" not in other.stderr
        assert gsme("status", live).returncode == 0
        assert gsme("report", live).returncode == 0
    assert gsme("resume", live, "--quiet").returncode == 0  # free again once closed
