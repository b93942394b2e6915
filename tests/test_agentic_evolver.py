"""The agentic evolver: a scripted stand-in agent (tests/scripts/scripted_evolver.py) run as
its command in the sandbox, the claude-agent-sdk adapter on a recorded session, the Codex
command line, and a whole simulated run killed with kill -9 mid-round and resumed.

No network, no API key. Every sandbox and budget rule has a test here that fails without it.
"""

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from gsme import evolve, sim
from gsme.cli import main
from gsme.evolvers import agentic_claude
from gsme.evolvers.agentic import AgenticEvolver, codex_command
from gsme.evolvers.agentic_workspace import read_answer_folder
from gsme.plugins import build_evolver
from gsme.run import Run
from gsme.settings import ConfigError
from tests.faults.faultkit import within

SCRIPT = Path(__file__).parent / "scripts" / "scripted_evolver.py"
SESSION = Path(__file__).parent / "data" / "agentic_claude" / "session.json"


def scripted(mode, *args, **kw):
    return AgenticEvolver(command=["{python}", str(SCRIPT), mode, *map(str, args)],
                          **{"minutes": 1, "readable": [str(SCRIPT)], **kw})


def one_round(tmp_path, evolver, *, n=2):
    """Round 1 of a tiny simulated run up to the proposals: (run, diagnoses, patches)."""
    run = Run.create(tmp_path / "run", agent=sim.preset("tiny"), evolver=evolver)
    evolve.cold_start(run, progress=False)
    failed = evolve.failures(run, "baseline", round=1)
    found = evolve.diagnose(run, failed, parent="baseline", round=1)
    return run, found, evolve.propose(run, "baseline", found, n=n, round=1)


def kept_files(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text(errors="replace")
            for p in folder.rglob("*") if p.is_file()}


def test_a_valid_answer_from_every_trace_becomes_diagnoses_and_patches(tmp_path):
    evolver = scripted("good", keep=tmp_path / "keep")
    run, found, patches = one_round(tmp_path, evolver)
    assert len(found) > 10 and found["evidence_verified"].all()
    assert [p.mechanism for p in patches] == ["submit-verify", "context-summarizer"]
    assert patches[0].env_gate.startswith("category in [")
    assert evolve.commit(run, "baseline", patches, round=1) == ["c0001", "c0002"]
    calls = run.calls()
    assert calls[["kind", "attempt", "ok", "round"]].values.tolist() == [["agent", 0, True, 1]]
    assert calls["input_tokens"].iloc[0] > 0 and "careless-submit" in calls["transcript"].iloc[0]
    assert "harness is a git checkout: True" in calls["transcript"].iloc[0]
    # the workspace held every valid train trial of the parent, passing ones too, and no
    # test task, no ground-truth pathology
    index = json.loads((tmp_path / "keep/round-1/workspace/index.json").read_text())
    train = run.trials(split="train", candidate="baseline").query("infra_ok")
    assert index["counts"]["trials"] == len(train) and index["counts"]["passing"] > 0
    text = "\n".join(kept_files(tmp_path / "keep/round-1/workspace").values())
    test_ids = run.tasks("test")["task_id"].tolist()
    assert test_ids and not any(t in text for t in test_ids)
    assert "pathology" not in text
    run.close()


def test_recorded_answers_replay_to_the_same_patches(tmp_path):
    """What benchmarks use to run the agentic evolver on recorded answers."""
    _, _, patches = one_round(tmp_path / "a", scripted("good", keep=tmp_path / "keep"))
    recorded = tmp_path / "recorded" / "round-1"
    recorded.mkdir(parents=True)
    for name in ("diagnoses.json", "patches.json"):
        recorded.joinpath(name).write_bytes((tmp_path / "keep/round-1/answer-0" / name)
                                            .read_bytes())
    evolver = scripted("replay", tmp_path / "recorded",
                       readable=[str(SCRIPT), str(tmp_path / "recorded")])
    _, _, again = one_round(tmp_path / "b", evolver)
    assert [p.id for p in again] == [p.id for p in patches] and len(again) == 2


def test_a_secret_the_agent_prints_is_redacted_from_the_recorded_call(tmp_path):
    secret = "sk-live-0123456789abcdefghijklmnop"
    evolver = scripted("good", env={"SERVICE_API_KEY": secret,
                                    "SCRIPTED_ECHO": "SERVICE_API_KEY"})
    run, _, _ = one_round(tmp_path, evolver)
    transcript = run.calls()["transcript"].iloc[0]
    assert "SERVICE_API_KEY=[REDACTED:SERVICE_API_KEY]" in transcript
    assert secret not in transcript and secret not in json.dumps(evolver.calls)
    run.close()


def test_an_invalid_patch_is_repaired_in_one_turn(tmp_path):
    evolver = scripted("fix-on-repair")
    run, _, patches = one_round(tmp_path, evolver, n=5)
    calls = run.calls()
    assert calls["attempt"].tolist() == [0, 1] and calls["ok"].tolist() == [False, True]
    assert "../outside.md" in " ".join(calls["dropped"].iloc[0])
    assert calls["n_patches"].tolist() == [3, 1]  # the valid ones kept, then the fix
    assert [p.where for p in patches][-1] == "knowledge"
    assert evolver.failed_proposals == []
    run.close()


def test_an_answer_still_invalid_after_its_repair_is_dropped_and_recorded(tmp_path):
    evolver = scripted("always-invalid")
    run, _, patches = one_round(tmp_path, evolver, n=5)
    calls = run.calls()
    assert calls["ok"].tolist() == [False, False]
    assert "../outside.md" in " ".join(calls["dropped"].iloc[1])
    assert [p.mechanism for p in patches] == ["submit-verify", "context-summarizer",
                                              "loop-breaker"]
    assert len(evolver.failed_proposals) == 1
    assert "../outside.md" in evolver.failed_proposals[0]["reason"]
    run.close()


def test_the_agent_cannot_read_a_ledger_the_test_split_or_another_run(tmp_path):
    from gsme.resources import DATA_DIR

    other = Run.create(tmp_path / "other", agent=sim.preset("tiny"))
    other.close()
    evolver = scripted("snoop", tmp_path / "run" / Run.LEDGER, tmp_path / "run",
                       tmp_path / "other" / Run.LEDGER, tmp_path / "other", DATA_DIR,
                       keep=tmp_path / "keep")
    run, found, _ = one_round(tmp_path, evolver)
    seen = json.loads((tmp_path / "keep/round-1/answer-0/snoop.json").read_text())
    assert seen.pop("interfaces") == ["lo"]  # network = false: no way out
    assert len(seen) == 5
    for path, result in seen.items():
        assert result.startswith("refused") or result == "empty", (path, result)
    assert len(found) > 0  # its answer still counts
    run.close()


def test_the_network_is_there_only_when_the_config_allows_it(tmp_path):
    evolver = scripted("snoop", network=True, keep=tmp_path / "keep")
    run, _, _ = one_round(tmp_path, evolver)
    seen = json.loads((tmp_path / "keep/round-1/answer-0/snoop.json").read_text())
    assert "tap0" in seen["interfaces"]  # slirp4netns's; without network only lo (above)
    run.close()


def test_an_agent_over_its_minutes_is_killed_and_the_round_goes_on(tmp_path):
    evolver = scripted("overrun", minutes=0.04)
    started = time.monotonic()
    run = Run.create(tmp_path / "run", agent=sim.preset("tiny"), evolver=evolver)
    result = evolve.run_round(run, children=2, recombinations=0, progress=False)
    assert time.monotonic() - started < 60
    assert len(result.candidates) == 0 and run.rounds_done() == 1
    call = run.calls().iloc[0]
    assert call["stop_reason"] == "minutes" and "killed" in call["error"]
    assert call["dropped"] == ["the whole answer of this turn"]
    run.close()


@pytest.mark.parametrize("tokens, kept", [(10**6, False), (None, True)])
def test_an_answer_over_the_token_budget_is_discarded(tmp_path, tokens, kept):
    evolver = scripted("overbudget", tokens=tokens)
    run, found, patches = one_round(tmp_path, evolver)
    assert (len(found) > 0) is kept and (len(patches) > 0) is kept
    call = run.calls().iloc[-1]
    assert (call["stop_reason"] == "budget") is not kept
    assert len(run.calls()) == 1  # no repair turn after a discarded answer
    run.close()


def test_writes_outside_the_answer_folder_land_nowhere(tmp_path):
    outside = tmp_path / "escaped" / "planted.txt"  # in the sandbox: its private /tmp
    shown = Path(sys.prefix) / "gsme-planted.txt"  # the interpreter's folder: read-only
    evolver = scripted("escape", outside, shown, keep=tmp_path / "keep")
    run, found, patches = one_round(tmp_path, evolver)
    tried = json.loads((tmp_path / "keep/round-1/answer-0/escape.json").read_text())
    assert not outside.exists() and not (tmp_path / "escaped").exists()
    assert not shown.exists() and tried[str(shown)].startswith("refused")
    assert tried["index.json"].startswith("refused")
    assert tried["harness/prompt/system.md"].startswith("refused")
    workspace = kept_files(tmp_path / "keep/round-1/workspace")
    assert not any("planted by the agent" in text for text in workspace.values())
    assert len(found) > 0 and len(patches) > 0
    run.close()


def test_the_config_builds_it_and_refuses_what_cannot_work(tmp_path):
    evolver = build_evolver({"kind": "agent", "command": ["{python}", "a.py", "{answer}"],
                             "minutes": 2, "tokens": 1000})
    assert evolver.budget == {"minutes": 2.0, "turns": None, "tokens": 1000, "dollars": None}
    with pytest.raises(ConfigError, match="set network = true"):
        build_evolver({"kind": "agent", "command": "claude"})
    with pytest.raises(ConfigError, match="unknown or malformed placeholder"):
        build_evolver({"kind": "agent", "command": ["run", "{ledger}"]})
    with pytest.raises(ConfigError, match="minutes must be a positive number"):
        build_evolver({"kind": "agent", "command": ["run"], "minutes": 0})


def test_codex_usage_is_read_from_its_event_stream(tmp_path):
    events = [{"type": "thread.started"}, {"type": "turn.completed", "usage": {
        "input_tokens": 1200, "cached_input_tokens": 800, "output_tokens": 90}},
        {"type": "turn.completed", "usage": {"input_tokens": 300, "output_tokens": 10}}]
    (tmp_path / "codex-events.jsonl").write_text("\n".join(map(json.dumps, events)) + "\nbad\n")
    found = read_answer_folder(tmp_path)
    assert found["usage"] == {"turns": 2, "input_tokens": 1500, "output_tokens": 100,
                              "cache_read_input_tokens": 800}
    assert "turn.completed" in found["transcript"]


def test_the_codex_and_claude_command_lines():
    codex = AgenticEvolver(command="codex", model="gpt-5.5", network=True)
    assert codex.command == codex_command("gpt-5.5")
    assert "--dangerously-bypass-approvals-and-sandbox" in codex.command[2]
    assert codex.pass_env == ("OPENAI_API_KEY",)
    claude = AgenticEvolver(command="claude", model="claude-opus-4-8", network=True)
    assert claude.command[1:] == ["{tools}/agentic_claude.py", "{workspace}", "{answer}",
                                  "claude-opus-4-8"]
    assert claude.pass_env == ("ANTHROPIC_API_KEY",)


# ------------------------------------------------------ claude-agent-sdk, replayed


class Replay:
    """A recorded Claude Code session played back as the SDK's transport: it answers the
    SDK's initialize request, asks the SDK's can_use_tool for every Write, Edit or Bash
    call and, like the CLI, writes a file only when allowed."""

    def __init__(self, messages):
        self.messages = messages
        self.inbox: asyncio.Queue | None = None
        self.asked: list[tuple[str, str]] = []

    async def connect(self):
        self.inbox = asyncio.Queue()

    def is_ready(self):
        return self.inbox is not None

    async def write(self, data):
        for line in data.splitlines():
            if line.strip():
                await self.inbox.put(json.loads(line))

    async def next(self, kind):
        while (message := await self.inbox.get())["type"] != kind:
            pass
        return message

    async def read_messages(self):
        init = await self.next("control_request")
        yield {"type": "control_response", "response": {
            "subtype": "success", "request_id": init["request_id"], "response": {}}}
        await self.next("user")
        for n, message in enumerate(self.messages):
            yield message
            for block in message.get("message", {}).get("content", []):
                if message["type"] == "assistant" and block["type"] == "tool_use" and \
                        block["name"] in ("Write", "Edit", "Bash"):
                    yield {"type": "control_request", "request_id": f"cli-{n}", "request": {
                        "subtype": "can_use_tool", "tool_name": block["name"],
                        "input": block["input"], "tool_use_id": block["id"]}}
                    said = (await self.next("control_response"))["response"]["response"]
                    target = block["input"].get("file_path", block["input"].get("command"))
                    self.asked.append((Path(target).name, said["behavior"]))
                    if said["behavior"] == "allow":
                        Path(target).write_text(block["input"]["content"])

    async def end_input(self):
        pass

    async def close(self):
        pass


def replayed(tmp_path, budget):
    workspace, answer = tmp_path / "workspace", tmp_path / "answer"
    workspace.mkdir()
    answer.mkdir()
    (workspace / "index.json").write_text(json.dumps({"budget": budget}))
    (workspace / "PROMPT.md").write_text("Diagnose the failures.")
    text = SESSION.read_text().replace("{answer}", str(answer))
    transport = Replay(json.loads(text.replace("{workspace}", str(workspace)))["messages"])
    code = agentic_claude.main([str(workspace), str(answer), "claude-opus-4-8"],
                               transport=transport)
    return code, answer, transport


def test_the_claude_adapter_on_a_recorded_session(tmp_path):
    """claude-agent-sdk 0.2.184 (bundling Claude Code 2.1.327), replayed from tests/data."""
    code, answer, transport = replayed(tmp_path, {"turns": 40, "dollars": 2.0})
    assert code == 0
    assert transport.asked == [("passwd", "deny"), ("diagnoses.json", "allow"),
                               ("usage.json", "deny"), ("patches.json", "allow")]
    usage = json.loads((answer / "usage.json").read_text())
    assert usage == {"turns": 6, "input_tokens": 34200, "output_tokens": 840,
                     "cache_creation_input_tokens": 4000, "cache_read_input_tokens": 20000,
                     "cost_usd": 0.4213, "subtype": "success"}
    transcript = (answer / "transcript.txt").read_text()
    assert "[tool_use Grep]" in transcript and "[result success] turns=6" in transcript
    assert json.loads((answer / "patches.json").read_text())["patches"][0]["beacon"] == \
        "submit-verify-1"


def test_the_claude_adapter_stops_a_session_past_its_tokens(tmp_path):
    code, answer, _ = replayed(tmp_path, {"tokens": 12000})
    usage = json.loads((answer / "usage.json").read_text())
    assert usage["stopped"] == "tokens 18760 > 12000" and usage["turns"] == 2
    assert not (answer / "patches.json").exists() and code == 0


# ------------------------------------------------------- a whole run, killed and resumed


def config(tmp_path, name, go):
    run_dir = tmp_path / name
    readable = json.dumps([str(SCRIPT), str(go.parent)])
    text = (f'[run]\ndir = "{run_dir}"\nrounds = 2\nchildren_per_round = 2\nrun_seed = 0\n'
            'gate = { design = "fixed" }\n'
            '[agent]\nkind = "sim"\npreset = "tiny"\ninfra_fault_rate = 0.0\n'
            f'[evolver]\nkind = "agent"\ncommand = ["{{python}}", "{SCRIPT}", "good"]\n'
            f'readable = {readable}\nminutes = 2\n'
            f'env = {{ SCRIPTED_WAIT_FOR = "{go}", SCRIPTED_WAIT_ROUND = "2" }}\n')
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return path, run_dir


def round_started(ledger: Path, round: int) -> bool:
    try:
        db = sqlite3.connect(f"file:{ledger}?mode=ro", uri=True, timeout=1)
        found = db.execute("SELECT COUNT(*) FROM events WHERE kind = 'round_started' "
                           "AND round = ?", (round,)).fetchone()[0]
        db.close()
        return found > 0
    except sqlite3.Error:
        return False


def test_a_whole_run_killed_mid_round_resumes_to_the_same_result(tmp_path):
    go = tmp_path / "gate" / "go"
    go.parent.mkdir()
    go.parent.chmod(0o755)
    go.write_text("")
    whole_cfg, whole_dir = config(tmp_path, "whole", go)
    assert main(["run", str(whole_cfg), "--quiet"]) == 0

    go.unlink()  # the killed run's agent waits in round 2 until it exists
    cfg, run_dir = config(tmp_path, "killed", go)
    proc = subprocess.Popen([sys.executable, "-m", "gsme.cli", "run", str(cfg), "--quiet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert within(120, lambda: round_started(run_dir / Run.LEDGER, 2))
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    go.write_text("")
    assert main(["resume", str(run_dir), "--quiet"]) == 0

    a, b = Run.open(whole_dir, read_only=True), Run.open(run_dir, read_only=True)
    ccols = ["candidate", "parents", "where", "why", "patch_id", "beacon", "env_gate", "round"]
    assert set(a.calls()["round"]) == {1, 2} and len(a.candidates()) > 3
    pd.testing.assert_frame_equal(a.candidates()[ccols], b.candidates()[ccols])
    dcols = ["child", "parent", "decision", "z", "kept"]
    pd.testing.assert_frame_equal(a.decisions()[dcols], b.decisions()[dcols])
    assert a.calls()["round"].tolist() == b.calls()["round"].tolist()
