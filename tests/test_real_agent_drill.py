"""The real-agent drill: the bundled Anthropic agent and the Claude evolver, both over
scripted Anthropic transports (no network, no key), through a whole run with one env-gated
patch on each of the four levers.

The scripted task model answers a pyfunc task with the reference solution when the harness
sends what its category needs, else with a function returning None:

* ``math`` — the prompt patch's phrase in the system prompt;
* ``strings`` — the knowledge note's phrase in the system prompt;
* ``lists`` — the failing examples sent back by submit-verify (the runtime patch);
* ``parsing`` — a request without extended thinking (the config patch; the seed harness
  thinks with a budget of 8192 tokens).

The scripted evolver diagnoses every failure it is shown by its task's category and
proposes the four patches, each gated on the tasks it fixes. Grading is real (one process
per trial), so the run is kept small: the fixed design with one repeat per task.
"""

from __future__ import annotations

import json
import re
import threading

import anthropic
import httpx2
import pandas as pd
import pytest

from gsme import evolve, measure
from gsme.agents.anthropic_agent import AnthropicAgent
from gsme.evolvers.claude import ClaudeEvolver
from gsme.resources import SEED_HARNESS
from gsme.run import Run
from gsme.settings import GateConfig, RunConfig
from gsme.suites import pyfunc

TASK_MODEL, EVOLVER_MODEL = "claude-haiku-4-5", "claude-opus-4-8"
KEY = "sk-ant-api03-DRILL-0123456789abcdef"
SUITE = pyfunc.load_tasks().set_index("task_id")
TRAIN = SUITE.index[(SUITE["split"] == "train") & (SUITE["category"] != "algorithms")].tolist()
TEST = ["camel_to_snake", "integer_nth_root", "parse_time_12h", "rotate"]
PROMPT_PHRASE = "When a number could be zero, handle zero first."
NOTE_PHRASE = "Python strings are immutable: build a new string."
VERIFY_FEEDBACK = "Before submitting, your function was run on the examples"
LAST_LINE = (SEED_HARNESS / "prompt" / "system.md").read_text().strip().splitlines()[-1]
USAGE = {"input_tokens": 300, "output_tokens": 40, "cache_creation_input_tokens": 0,
         "cache_read_input_tokens": 0}

# lever → (category, env gate, beacon, why, change): one patch per lever
LEVERS = {
    "prompt": ("math", "category == 'math'", "zero-first", "premature-finalization",
               {"path": "prompt/system.md", "old": LAST_LINE,
                "new": f"{LAST_LINE}\n\n{PROMPT_PHRASE} (zero-first)"}),
    "knowledge": ("strings", "category == 'strings'", "immutable-strings", "format-error",
                  {"path": "knowledge/strings.md", "old": None,
                   "new": f"# immutable-strings\n\n{NOTE_PHRASE}\n"}),
    "runtime": ("lists", "category == 'lists' and has_examples", "verify-lists",
                "careless-submit",
                {"path": "runtime/submit-verify.toml", "old": None,
                 "new": 'name = "submit-verify"\nbeacon = "verify-lists"\n\n[params]\n'
                        "max_retries = 1\n"}),
    "config": ("parsing", "category == 'parsing'", "thinking-off", "thinking-runaway",
               {"path": "config/agent.toml", "old": "thinking_budget = 8192",
                "new": "thinking_budget = 0  # thinking-off"}),
}
FIXED_BY = {
    "math": lambda body, last: PROMPT_PHRASE in body["system"],
    "strings": lambda body, last: NOTE_PHRASE in body["system"],
    "lists": lambda body, last: last.startswith(VERIFY_FEEDBACK),
    "parsing": lambda body, last: "thinking" not in body,
}


def gated(lever: str) -> set[str]:
    """The train tasks the lever's env gate admits."""
    gate = LEVERS[lever][1]
    return set(SUITE.loc[TRAIN].query(gate.replace("'", '"')).index)


def message(model: str, content: list, stop_reason: str, usage: dict) -> httpx2.Response:
    return httpx2.Response(200, json={
        "id": "msg_drill", "type": "message", "role": "assistant", "model": model,
        "content": content, "stop_reason": stop_reason, "stop_sequence": None, "usage": usage})


class TaskModel:
    """The task model's Messages endpoint (thread-safe: trials run in threads)."""

    def __init__(self):
        self.by_signature = {f"def {pyfunc.task(t)['entry_point']}(": t for t in TRAIN + TEST}
        self.lock = threading.Lock()
        self.requests: list[dict] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        first, last = body["messages"][0]["content"], body["messages"][-1]["content"]
        (task,) = [t for sig, t in self.by_signature.items() if sig in first]
        with self.lock:
            self.requests.append({**body, "task_id": task})
        if FIXED_BY[SUITE.loc[task, "category"]](body, last):
            code = pyfunc.reference(task)
        else:
            code = f"def {pyfunc.task(task)['entry_point']}(*args, **kwargs):\n    return None\n"
        return message(body["model"], [{"type": "text", "text": f"```python\n{code}```"}],
                       "end_turn", USAGE)


class EvolverModel:
    """The evolver's Messages endpoint: diagnoses each shown failure by its task's
    category, then proposes the four gated patches."""

    def __init__(self):
        self.calls: list[str] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        tool = body["tool_choice"]["name"]
        self.calls.append(tool)
        if tool == "report_diagnoses":
            shown = re.findall(r'<failure task_id="([^"]+)" repeat="(\d+)">',
                               body["messages"][0]["content"][0]["text"])
            lever = {cat: name for name, (cat, *_) in LEVERS.items()}
            payload = {"diagnoses": [
                {"task_id": t, "repeat": int(r), "where": lever[SUITE.loc[t, "category"]],
                 "why": LEVERS[lever[SUITE.loc[t, "category"]]][3], "evidence": "return None",
                 "confidence": 0.8} for t, r in shown]}
        else:
            payload = {"patches": [
                {"where": where, "why": why, "mechanism": f"{beacon} on {category} tasks",
                 "env_gate": gate, "beacon": beacon, "predicted_tasks": [],
                 "rationale": f"The {category} tasks fail; this {where} patch gives what they "
                              "lack.", "changes": [change]}
                for where, (category, gate, beacon, why, change) in LEVERS.items()]}
        usage = {**USAGE, "input_tokens": 2000, "output_tokens": 600}
        return message(EVOLVER_MODEL, [{"type": "tool_use", "id": f"toolu_{len(self.calls)}",
                                        "name": tool, "input": payload}], "tool_use", usage)


def client(handler) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key=KEY, max_retries=0,
                               http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))


@pytest.fixture(scope="module")
def drill(tmp_path_factory):
    task_model, evolver_model = TaskModel(), EvolverModel()
    agent = AnthropicAgent(client=client(task_model), model=TASK_MODEL, tasks=TRAIN + TEST,
                           grade_timeout_s=20)
    evolver = ClaudeEvolver(client=client(evolver_model), model=EVOLVER_MODEL)
    config = RunConfig(run_seed=11, workers=2, gate=GateConfig(design="fixed", k=1))
    run = Run.create(tmp_path_factory.mktemp("drill") / "run", agent=agent, evolver=evolver,
                     run_config=config)
    try:
        evolve.cold_start(run, progress=False)
        result = evolve.run_round(run, children=4, recombinations=0, progress=False)
        measure.finalize(run, progress=False)
        children = run.candidates().query("round == 1").set_index("where")["candidate"]
        yield run, result, children.to_dict(), task_model, evolver_model
    finally:
        run.close()


def test_every_lever_is_proposed_gated_and_committed(drill):
    run, _, children, _, evolver_model = drill
    assert evolver_model.calls == ["report_diagnoses", "propose_patches"]
    cands = run.candidates().set_index("candidate")
    assert sorted(children) == sorted(LEVERS)
    for where, child in children.items():
        assert (cands.loc[child, "env_gate"], cands.loc[child, "beacon"]) == LEVERS[where][1:3]
    assert {len(gated(lever)) for lever in LEVERS} == {7, 8}  # lists: dedupe has no examples


@pytest.mark.parametrize("lever", list(LEVERS))
def test_each_lever_fires_its_beacon_on_exactly_its_gated_tasks(drill, lever):
    run, _, children, _, _ = drill
    trials = run.trials(split="train", candidate=children[lever]).set_index("task_id")
    own = trials[trials["borrowed_from"].isna()]
    assert set(own.index) == gated(lever)  # run only where its gate admits the task
    assert own["activated"].all() and (own["beacons"] == LEVERS[lever][2]).all()
    lent = trials[trials["borrowed_from"].notna()]  # everywhere else it is its parent
    assert set(lent.index) == set(TRAIN) - gated(lever)
    assert (lent["borrowed_from"] == "baseline").all() and not lent["activated"].any()
    assert own["passed"].all() and not lent.loc[lent.index.isin(gated(lever)), "passed"].any()


@pytest.mark.parametrize("lever", list(LEVERS))
def test_each_lever_is_credited_on_its_own(drill, lever):
    run, result, children, _, _ = drill
    decision = result.decisions.set_index("child").loc[children[lever]]
    assert decision["decision"] == "credit", decision["reason"]
    assert (decision["n_tasks"], decision["n_changed"]) == (len(TRAIN), len(gated(lever)))
    assert decision["delta_pp"] == pytest.approx(100 * len(gated(lever)) / len(TRAIN))
    baseline = run.trials(split="train", candidate="baseline").set_index("task_id")["passed"]
    assert not baseline.any()  # every gated task went from fail to pass


def test_the_harness_each_request_carried(drill):
    run, _, children, task_model, _ = drill
    assert {body["model"] for body in task_model.requests} == {TASK_MODEL}
    sent = pd.DataFrame(task_model.requests)
    sent["category"] = SUITE.loc[sent["task_id"], "category"].to_numpy()
    prompt = sent["system"].str.contains(PROMPT_PHRASE, regex=False)
    note = sent["system"].str.contains(NOTE_PHRASE, regex=False)
    assert set(sent.loc[prompt, "category"]) == {"math"}  # the gates held: the texts went
    assert set(sent.loc[note, "category"]) == {"strings"}  # only to the tasks they admit
    unthinking = sent["thinking"].isna()
    assert set(sent.loc[unthinking, "category"]) == {"parsing"}
    transcripts = {row.task_id: json.loads(run.transcript(row.trajectory)) for row in
                   run.trials(candidate=children["runtime"]).itertuples()
                   if row.trajectory is not None and row.borrowed_from is None}
    events = transcripts["chunk"]
    assert events[0]["event"] == "harness" and len(events[0]["acting"]) == 1
    fired = [e for e in events if e["event"] == "beacon"]
    assert [(e["beacon"], e["lever"]) for e in fired] == [("verify-lists", "runtime")]


def test_the_run_is_sealed_with_a_credited_lever(drill):
    run, _, children, _, _ = drill
    sealed = run.sealed_result.set_index("role")
    assert sealed.loc["selected", "candidate"] in children.values()
    assert set(run.trials(split="test")["task_id"]) == set(TEST)
