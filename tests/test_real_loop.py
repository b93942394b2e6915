"""One round of the loop with the real clients (AnthropicAgent, ClaudeEvolver) over mocked
HTTP transports: no network, no real key.

The mocked task model answers every pyfunc task deterministically: the reference solution
for the tasks in ``RIGHT``; for those in ``FIXABLE`` a function returning None, and the
reference once the harness's submit-verify middleware has sent the failing examples back.
The first request about ``ECHO_TASK`` fails with a server error that echoes the API key.
The mocked evolver answers with a recorded diagnosis, then a recorded patch that installs
submit-verify on tasks with examples.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
from pathlib import Path

import anthropic
import httpx2
import pytest

from gsme import evolve, measure, report
from gsme.agents.anthropic_agent import AnthropicAgent
from gsme.evolvers.claude import ClaudeEvolver
from gsme.prices import call_cost
from gsme.run import Run
from gsme.settings import GateConfig, RunConfig
from gsme.suites import pyfunc

DATA = Path(__file__).parent / "data" / "real_loop"
KEY = "sk-ant-api03-REALLOOP-SECRET-0123456789abcdef"
SECRET_PART = "REALLOOP-SECRET"
RIGHT = ("caesar_shift", "count_vowels", "fibonacci", "gcd_list")
FIXABLE = ("is_prime", "lcm", "reverse_words")
TEST = ("camel_to_snake", "digit_sum")
ECHO_TASK = "fibonacci"
VERIFY_FEEDBACK = "Before submitting, your function was run on the examples"
# The paper's one-look z gate, pinned so the test does not follow the defaults: a patch that
# fixes 3 of 7 tasks can never be credited by an exact sign-flip test (its p is at least 1/8).
PAPER_GATE = GateConfig(reference="normal", exact_below=0)
USAGE = {"input_tokens": 420, "output_tokens": 60, "cache_creation_input_tokens": 0,
         "cache_read_input_tokens": 0}


class TaskModel:
    """A mocked Messages endpoint for the task model (thread-safe: trials run in threads)."""

    def __init__(self):
        entry = {pyfunc.task(t)["entry_point"]: t for t in RIGHT + FIXABLE + TEST}
        self.by_signature = {f"def {name}(": task for name, task in entry.items()}
        self.lock = threading.Lock()
        self.echoed = False
        self.requests: list[dict] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        first, last = body["messages"][0]["content"], body["messages"][-1]["content"]
        (task,) = [t for sig, t in self.by_signature.items() if sig in first]
        with self.lock:
            self.requests.append(body)
            echo = task == ECHO_TASK and not self.echoed
            self.echoed = self.echoed or echo
        if echo:
            return httpx2.Response(500, json={"type": "error", "error": {
                "type": "api_error", "message": f"upstream rejected key {KEY}"}})
        if task in FIXABLE and not last.startswith(VERIFY_FEEDBACK):
            code = f"def {pyfunc.task(task)['entry_point']}(*args, **kwargs):\n    return None\n"
        else:
            code = pyfunc.reference(task)
        return httpx2.Response(200, json={
            "id": "msg_task", "type": "message", "role": "assistant", "model": body["model"],
            "content": [{"type": "text", "text": f"```python\n{code}```"}],
            "stop_reason": "end_turn", "stop_sequence": None, "usage": USAGE})


class EvolverModel:
    """A mocked Messages endpoint for the evolver: the recorded diagnose, then propose."""

    def __init__(self):
        self.answers = [json.loads((DATA / n).read_text()) for n in ("diagnose.json",
                                                                     "propose.json")]
        self.raw: list[str] = []
        self.keys: list[str] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.raw.append(request.content.decode())
        self.keys.append(request.headers.get("x-api-key") or request.headers.get("authorization"))
        return httpx2.Response(200, json=self.answers.pop(0))


def client(handler) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key=KEY, max_retries=0,
                               http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))


@pytest.fixture(scope="module")
def loop(tmp_path_factory):
    task_model, evolver_model = TaskModel(), EvolverModel()
    agent = AnthropicAgent(client=client(task_model), model="claude-haiku-4-5",
                           tasks=RIGHT + FIXABLE + TEST, grade_timeout_s=20)
    evolver = ClaudeEvolver(client=client(evolver_model), model="claude-opus-4-8")
    run = Run.create(tmp_path_factory.mktemp("real") / "run", agent=agent, evolver=evolver,
                     run_config=RunConfig(run_seed=7, workers=2, gate=PAPER_GATE))
    try:
        result = evolve.run_round(run, children=3, recombinations=1, progress=False)
        measure.finalize(run, progress=False)
        yield run, result, task_model, evolver_model
    finally:
        run.close()


def test_the_round_commits_scores_and_credits_the_patch(loop):
    run, result, _, evolver_model = loop
    assert len(evolver_model.raw) == 2 and all(KEY in key for key in evolver_model.keys)
    (child,) = result.candidates["candidate"]
    cand = run.candidates().set_index("candidate").loc[child]
    assert (cand["kind"], cand["parents"], cand["where"], cand["why"], cand["beacon"],
            cand["env_gate"]) == ("mutation", "baseline", "runtime", "careless-submit",
                                  "verify-examples", "has_examples")
    commit = run.candidates().set_index("candidate")["commit"]
    assert commit[child] != commit["baseline"]
    assert "verify-examples" in run.harness(child)["runtime/submit-verify.toml"]
    trials = run.trials(split="train")
    rates = trials[trials["infra_ok"]].groupby(["candidate", "task_id"])["passed"].mean()
    assert rates["baseline"].to_dict() == {t: float(t in RIGHT) for t in RIGHT + FIXABLE}
    assert rates[child].to_dict() == {t: 1.0 for t in RIGHT + FIXABLE}
    mine = trials[trials["candidate"] == child]
    # the Anthropic agent applies env gates itself: outside the patch's gate (count_vowels
    # has no examples) the child is its parent, so its trials there are borrowed
    assert AnthropicAgent.honours_env_gates
    borrowed = mine.groupby("task_id")["borrowed_from"].agg(lambda s: set(s.dropna()))
    assert borrowed.to_dict() == {t: {"baseline"} if t == "count_vowels" else set()
                                  for t in RIGHT + FIXABLE}
    fired = mine.set_index(["task_id", "repeat"])["activated"]
    assert fired.groupby("task_id").all().to_dict() == {t: t in FIXABLE for t in RIGHT + FIXABLE}
    (decision,) = result.decisions.to_dict("records")
    assert (decision["child"], decision["decision"], decision["n_tasks"]) == (
        child, "credit", 7)
    assert decision["delta_pp"] == pytest.approx(100 * 3 / 7)
    assert result.archive[["where", "why", "candidate"]].values.tolist() == [
        ["runtime", "careless-submit", child]]
    sealed = run.sealed_result.set_index("role")
    assert sealed.loc["selected", "candidate"] == child
    assert sealed.loc["baseline", "candidate"] == "baseline"
    assert set(run.trials(split="test")["task_id"]) == set(TEST)


def test_an_infra_failure_is_rerun_not_scored(loop):
    run = loop[0]
    echo = run.trials(candidate="baseline")
    echo = echo[echo["task_id"] == ECHO_TASK].sort_values(["repeat", "attempt"])
    failed = echo[~echo["infra_ok"]]
    assert len(failed) == 1 and not failed["passed"].any()
    repeat = failed["repeat"].item()
    assert echo.loc[echo["repeat"] == repeat, "attempt"].tolist() == [0, 1]
    assert "[REDACTED:ANTHROPIC_API_KEY]" in run.transcript(failed["trajectory"].item())


def test_the_evolver_never_sees_test_tasks(loop):
    _, _, task_model, evolver_model = loop
    sent = "\n".join(strings(json.loads(raw)) for raw in evolver_model.raw)
    assert "def is_prime(*args, **kwargs)" in sent  # it did see the failing train trials
    seen_by_agent = "\n".join(strings(body) for body in task_model.requests)
    test_tasks = pyfunc.load_tasks().query("split == 'test'")["task_id"]
    assert set(TEST) <= set(test_tasks)
    for task in test_tasks:
        statement = pyfunc.task(task)["statement"].strip()
        assert not re.search(rf"\b{re.escape(task)}\b", sent), task
        assert statement not in sent, task
        assert (statement in seen_by_agent) == (task in TEST)  # finalize did score TEST


def strings(value) -> str:
    """Every string inside a parsed JSON value, one per line."""
    if isinstance(value, str):
        return value
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return "\n".join(strings(v) for v in items)


def test_evolver_calls_with_usage_and_cost_are_in_the_ledger(loop):
    run = loop[0]
    calls = run.calls()
    assert calls["kind"].tolist() == ["diagnose", "propose"]
    assert calls["round"].tolist() == [1, 1] and calls["ok"].all()
    assert calls[["input_tokens", "output_tokens", "cache_creation_input_tokens",
                  "cache_read_input_tokens"]].values.tolist() == [[2400, 380, 3300, 0],
                                                                  [1100, 900, 0, 3300]]
    assert calls["cost_usd"].tolist() == pytest.approx([
        call_cost("claude-opus-4-8", 2400, 380, 3300, 0),
        call_cost("claude-opus-4-8", 1100, 900, 0, 3300)])
    table = report.cost_table(run).set_index("round")
    assert table.loc[1, "evolver_calls"] == 2
    assert table.loc[1, "evolver_usd"] == pytest.approx(calls["cost_usd"].sum())
    per_call = call_cost("claude-haiku-4-5", **USAGE)
    own = run.trials()
    own = own[own["borrowed_from"].isna() & own["infra_ok"]]
    assert own["cost_usd"].min() >= per_call and table["trials"].sum() == run.trials_spent()


def test_the_api_key_is_nowhere_in_the_run(loop):
    run = loop[0]
    run.close()  # flush the WAL into the database file and release the lock
    files = [p for p in run.path.rglob("*") if p.is_file()]
    assert any(p.name == "ledger.sqlite" for p in files)
    assert any(".git" in p.parts and "objects" in p.parts for p in files)
    for path in files:
        data = path.read_bytes()
        assert SECRET_PART.encode() not in data, path
    repo = run.path / "harness"
    history = git(repo, "log", "-p", "--all", "--notes=gsme").stdout
    assert "verify-examples" in history and SECRET_PART not in history
    notes = git(repo, "notes", "--ref", "gsme", "list").stdout.split()
    assert notes and all(SECRET_PART not in git(repo, "cat-file", "-p", blob).stdout
                         for blob in notes[::2])
    revs = git(repo, "rev-list", "--all").stdout.split()
    found = git(repo, "grep", "-I", SECRET_PART, *revs, check=False)
    assert found.returncode == 1 and found.stdout == ""  # 1: no match
    with Run.open(run.path, read_only=True) as reader:
        refs = reader.trials()["trajectory"].dropna()
        assert len(refs) > 50
        for text in [reader.transcript(ref) for ref in refs]:
            assert SECRET_PART not in text
        assert len(reader.calls()) == 2 and SECRET_PART not in reader.calls().to_json()
        assert SECRET_PART not in reader.events().to_json()


def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=check)
