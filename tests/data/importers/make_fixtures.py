"""Write the importer fixtures in this folder: small, made-up logs in the upstream formats.

Run ``python tests/data/importers/make_fixtures.py`` to rewrite them (deterministic). The
contents are synthetic: no real benchmark result is copied here. Each format gets a
baseline and a child with infrastructure errors, agent failures, missing repeats and an
unequal number of repeats per task.

* ``harbor/{baseline,child}-job/`` — Harbor job folders (``<trial>/result.json``)
* ``tb/{baseline,child}/run-N/results.json`` — Terminal-Bench 1 runs
* ``swebench/`` — SWE-bench run reports and instance-log folders
* ``hal/`` — HAL ``*_UPLOAD.json`` files
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
START = datetime(2025, 11, 3, 9, 0, tzinfo=UTC)
N_TASKS = 16
TASKS = [f"task-{i:02d}" for i in range(N_TASKS)]


def _pass_probabilities(rng):
    base = rng.uniform(0.1, 0.8, N_TASKS)
    lift = np.where(rng.random(N_TASKS) < 0.5, 0.35, 0.0)  # half the tasks gain
    return base, np.clip(base + lift, 0, 1)


def _write(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")


def _iso(t: datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


# ------------------------------------------------------------------------------- Harbor

def harbor(rng) -> None:
    root = HERE / "harbor"
    shutil.rmtree(root, ignore_errors=True)
    p_base, p_child = _pass_probabilities(rng)
    for job, probs, k in (("baseline-job", p_base, 3), ("child-job", p_child, 3)):
        n = 0
        for i, task in enumerate(TASKS):
            repeats = k - 1 if i == 5 else k                       # a missing repeat
            for r in range(repeats):
                started = START + timedelta(minutes=37 * r + i)
                finished = started + timedelta(seconds=int(rng.integers(60, 900)))
                reward = float(rng.random() < probs[i])
                exception = None
                verifier = {"rewards": {"reward": reward}}
                if job == "baseline-job" and (i, r) == (2, 1):
                    exception = ("EnvironmentStartTimeoutError", "docker compose up timed out")
                    verifier = None
                elif job == "child-job" and (i, r) == (7, 0):
                    exception = ("DaytonaError", "sandbox quota exceeded")  # not in the table
                    verifier = None
                elif (i, r) == (9, 2):
                    exception = ("AgentTimeoutError", "Agent execution timed out after 900s")
                    verifier = {"rewards": {"reward": 1.0}} if job == "child-job" else None
                elif job == "baseline-job" and (i, r) == (11, 0):
                    exception = ("AgentSetupTimeoutError", "agent setup timed out")
                    verifier = None
                trial = f"{task}__{rng.integers(16**7):07x}"  # folder order is not time order
                data = {
                    "id": f"00000000-0000-4000-8000-{n:012d}",
                    "task_name": task,
                    "trial_name": trial,
                    "trial_uri": f"file:///jobs/{job}/{trial}",
                    "source": "terminal-bench@2.0",
                    "task_checksum": f"{i:064x}",
                    "agent_info": {"name": "terminus-2", "version": "2.0.0",
                                   "model_info": {"name": "claude-sonnet-4-5",
                                                  "provider": "anthropic"}},
                    "agent_result": {"n_input_tokens": int(rng.integers(20_000, 200_000)),
                                     "n_cache_tokens": 10_000,
                                     "n_output_tokens": int(rng.integers(1_000, 9_000)),
                                     "cost_usd": round(float(rng.uniform(0.05, 0.9)), 4),
                                     "rollout_details": None, "metadata": {"n_episodes": 12}},
                    "verifier_result": verifier,
                    "exception_info": None if exception is None else {
                        "exception_type": exception[0], "exception_message": exception[1],
                        "exception_traceback": "Traceback (most recent call last): ...",
                        "occurred_at": _iso(finished)},
                    "started_at": _iso(started),
                    "finished_at": _iso(finished),
                }
                _write(root / job / trial / "result.json", data)
                n += 1
        unfinished = {"task_name": TASKS[0], "trial_name": f"{TASKS[0]}__unfinished",
                      "started_at": _iso(START + timedelta(days=1)), "finished_at": None,
                      "agent_result": None, "verifier_result": None, "exception_info": None}
        _write(root / job / unfinished["trial_name"] / "result.json", unfinished)
        _write(root / job / "result.json",
               {"id": "job", "started_at": _iso(START), "n_total_trials": n + 1,
                "stats": {"n_trials": n + 1, "n_errors": 2}})


# ---------------------------------------------------------------------- Terminal-Bench 1

def terminal_bench(rng) -> None:
    root = HERE / "tb"
    shutil.rmtree(root, ignore_errors=True)
    p_base, p_child = _pass_probabilities(rng)
    for side, probs, runs in (("baseline", p_base, 2), ("child", p_child, 3)):  # unequal K
        for run in range(runs):
            results = []
            for i, task in enumerate(TASKS):
                if side == "child" and run == 2 and i % 2:        # the 3rd run: half the tasks
                    continue
                started = START + timedelta(days=run, minutes=3 * i)
                resolved = bool(rng.random() < probs[i])
                mode = "unset"
                if (side, run, i) == ("baseline", 0, 3):
                    mode, resolved = "agent_installation_failed", None
                elif (side, run, i) == ("child", 1, 4):
                    mode, resolved = "unknown_agent_error", None
                elif (run, i) == (0, 6):
                    mode = "agent_timeout"                        # tests still ran
                elif (run, i) == (1, 8):
                    mode, resolved = "parse_error", None
                elif (run, i) == (1, 10):
                    mode, resolved = "test_timeout", None
                results.append({
                    "id": f"00000000-0000-4000-8000-{run * 100 + i:012d}",
                    "trial_name": f"{task}.1-of-1.{side}-run-{run + 1}",
                    "task_id": task,
                    "instruction": f"Do {task}.",
                    "is_resolved": resolved,
                    "failure_mode": mode,
                    "parser_results": None,
                    "recording_path": None,
                    "total_input_tokens": int(rng.integers(5_000, 90_000)),
                    "total_output_tokens": int(rng.integers(500, 6_000)),
                    "trial_started_at": started.isoformat(),
                    "trial_ended_at": (started + timedelta(seconds=int(rng.integers(30, 600)))
                                       ).isoformat(),
                })
            rng.shuffle(results)                                  # file order is not time order
            _write(root / side / f"run-{run + 1}" / "results.json",
                   {"id": f"00000000-0000-4000-8000-{run:012d}", "results": results,
                    "pass_at_k": {}, "n_resolved": 0, "n_unresolved": 0, "accuracy": 0.0})


# ------------------------------------------------------------------------------ SWE-bench

def swebench(rng) -> None:
    root = HERE / "swebench"
    shutil.rmtree(root, ignore_errors=True)
    ids = [f"astropy__astropy-{1000 + i}" for i in range(N_TASKS)]
    p_base, p_child = _pass_probabilities(rng)
    for run in range(2):
        outcome = {"resolved_ids": [], "unresolved_ids": [], "error_ids": [],
                   "empty_patch_ids": [], "incomplete_ids": []}
        for i, iid in enumerate(ids):
            if i == 15:
                outcome["incomplete_ids"].append(iid)
            elif (run, i) == (0, 1):
                outcome["empty_patch_ids"].append(iid)
            elif i == 2 and run == 0:
                outcome["error_ids"].append(iid)                  # patch did not apply
                _write_log(root / "baseline-logs-run1" / iid, ">>>>> Patch Apply Failed:\n"
                           "patch unexpectedly ends in middle of line\n")
            elif i == 3 and run == 1:
                outcome["error_ids"].append(iid)                  # the harness failed
                _write_log(root / "baseline-logs-run2" / iid, "Error building image: "
                           "docker daemon not responding\n")
            elif rng.random() < p_base[i]:
                outcome["resolved_ids"].append(iid)
            else:
                outcome["unresolved_ids"].append(iid)
        submitted = sorted(set(ids) - set(outcome["incomplete_ids"]))
        _write(root / f"my-model.baseline-run{run + 1}.json", {
            "total_instances": len(ids), "submitted_instances": len(submitted),
            "completed_instances": len(outcome["resolved_ids"]) + len(outcome["unresolved_ids"]),
            "resolved_instances": len(outcome["resolved_ids"]),
            "unresolved_instances": len(outcome["unresolved_ids"]),
            "empty_patch_instances": len(outcome["empty_patch_ids"]),
            "error_instances": len(outcome["error_ids"]),
            "completed_ids": sorted(outcome["resolved_ids"] + outcome["unresolved_ids"]),
            "incomplete_ids": outcome["incomplete_ids"],
            "empty_patch_ids": outcome["empty_patch_ids"],
            "submitted_ids": submitted,
            "resolved_ids": sorted(outcome["resolved_ids"]),
            "unresolved_ids": sorted(outcome["unresolved_ids"]),
            "error_ids": sorted(outcome["error_ids"]),
            "schema_version": 2,
        })
    folder = root / "child-run1" / "my-model-v2"                  # instance-log folder form
    for i, iid in enumerate(ids[:15]):
        if i == 4:
            _write_log(folder / iid, ">>>>> Applied Patch\nTimeout error: 1800 seconds\n")
            continue
        resolved = bool(rng.random() < p_child[i])
        _write_log(folder / iid, ">>>>> Applied Patch\n>>>>> Start Test Output\n")
        _write(folder / iid / "report.json", {iid: {
            "patch_is_None": False, "patch_exists": True, "patch_successfully_applied": True,
            "resolved": resolved, "tests_status": {}}})


def _write_log(folder: Path, text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run_instance.log").write_text(text)


# ------------------------------------------------------------------------------------ HAL

def hal(rng) -> None:
    root = HERE / "hal"
    shutil.rmtree(root, ignore_errors=True)
    p_base, p_child = _pass_probabilities(rng)
    for side, probs in (("baseline", p_base), ("child", p_child)):
        for run in range(2):
            ok, failed, latencies, walls, logs = [], [], {}, {}, {}
            for i, task in enumerate(TASKS):
                if side == "child" and run == 1 and i == 0:
                    continue                                      # a missing repeat
                (ok if rng.random() < probs[i] else failed).append(task)
                first = START + timedelta(days=run, minutes=5 * i)
                total = float(rng.integers(20, 300))
                latencies[task] = {"first_call_timestamp": first.isoformat(),
                                   "last_call_timestamp": (first + timedelta(seconds=total)
                                                           ).isoformat(),
                                   "total_time": total}
                walls[task] = total + 3.0
                logs[task] = {"messages": [], "model": "gpt-4.1-2025-04-14", "call_count": 2,
                              "call_metadata": [
                                  {"usage": {"prompt_tokens": 1200, "completion_tokens": 80,
                                             "total_tokens": 1280},
                                   "started_at": first.isoformat(), "ended_at": None},
                                  {"usage": {"prompt_tokens": 1500, "completion_tokens": 120},
                                   "started_at": first.isoformat(), "ended_at": None}]}
            latencies["task-orphan"] = {"first_call_timestamp": START.isoformat(),
                                        "total_time": 1.0}
            run_id = f"{side}_run{run + 1}"
            _write(root / f"{run_id}_UPLOAD.json", {
                "config": {"agent_name": f"{side}-agent", "benchmark_name": "toy_bench",
                           "date": (START + timedelta(days=run)).date().isoformat(),
                           "run_id": run_id, "agent_args": {}},
                "results": {"accuracy": len(ok) / (len(ok) + len(failed)),
                            "successful_tasks": ok, "failed_tasks": failed,
                            "total_cost": 1.25, "latencies": latencies},
                "raw_eval_results": {t: {"score": int(t in ok)} for t in ok + failed},
                "raw_logging_results": logs,
                "total_usage": {"gpt-4.1-2025-04-14": {"prompt_tokens": 1, "completion_tokens": 1}},
                "total_cost": 1.25,
                "wall_clock_times": walls,
            })


if __name__ == "__main__":
    for seed, writer in enumerate((harbor, terminal_bench, swebench, hal)):
        writer(np.random.default_rng(seed))
    print(f"fixtures written under {HERE}")
