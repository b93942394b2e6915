"""The Claude evolver against a mocked HTTP transport: no network, no real key.

Responses are hand-written Messages API bodies in ``tests/data/claude_evolver/``.
"""

from __future__ import annotations

import json
import logging
import math
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import anthropic
import httpx2
import jsonschema
import pandas as pd
import pytest

from gsme.evolvers.claude import ClaudeEvolver, ClaudeEvolverError
from gsme.evolvers.claude_models import DEFAULT_MODEL, MODEL_ENV, accepts_temperature, tool_choice
from gsme.evolvers.claude_prompt import digest, sample_failures, train_failures
from gsme.evolvers.claude_tools import (
    CHANGE_ITEM,
    DIAGNOSIS_ITEM,
    PATCH_ITEM,
    TOOLS,
    check,
    payload_items,
)
from gsme.patches import apply_patch, harness_files, read_patches, validate_patch
from gsme.resources import SEED_HARNESS
from gsme.vocabulary import Vocabulary

DATA = Path(__file__).parent / "data" / "claude_evolver"
KEY = "sk-ant-test-XXXX-0123456789abcdef"
CANARY = "CANARY-held-out-7f3e"
TRUTH = "ground-truth-label-canary"

T1 = ("user: implement add(a, b)\nassistant: def add(a, b): return a - b\n"
      "assistant: I am confident, submitting without running the tests.\n[submit]\n"
      "grader: FAILED test_add")
T2 = "assistant: let me reconsider the edge cases once more.\n" * 40 + "[turn limit reached]"
T3 = ("assistant: SELECT name FROM users WHERE age > 30\nassistant: Final answer: the query\n"
      "grader: expected JSON output, got plain text")


def body(name: str) -> dict:
    return json.loads((DATA / name).read_text())


class Server:
    """A mock Messages endpoint: answers queued ``(status, body)`` pairs, keeps requests."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.requests: list[dict] = []
        self.raw: list[bytes] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.raw.append(request.content)
        self.requests.append(json.loads(request.content))
        status, payload = self.answers.pop(0)
        headers = {} if status == 200 else {"retry-after-ms": "1"}
        return httpx2.Response(status, json=payload, headers=headers)


def evolver(server: Server, *, max_retries: int = 2, **settings) -> ClaudeEvolver:
    client = anthropic.Anthropic(
        api_key=KEY, max_retries=max_retries,
        http_client=httpx2.Client(transport=httpx2.MockTransport(server)),
    )
    return ClaudeEvolver(client=client, **settings)


def ok(name: str) -> tuple[int, dict]:
    return 200, body(name)


def error(status: int) -> tuple[int, dict]:
    return status, body(f"error_{status}.json")


@pytest.fixture(autouse=True)
def no_model_setting(monkeypatch):
    monkeypatch.delenv(MODEL_ENV, raising=False)


@pytest.fixture
def harness(tmp_path) -> Path:
    return Path(shutil.copytree(SEED_HARNESS, tmp_path / "harness"))


@pytest.fixture
def failures() -> pd.DataFrame:
    return pd.DataFrame({
        "candidate": ["base", "base", "base", "base"],
        "task_id": ["t1", "t2", "t3", "held-out-task"],
        "repeat": [0, 1, 0, 0],
        "transcript": [T1, T2, T3, f"the hidden answer is {CANARY}"],
        "category": ["python", "python", "sql", "python"],
        "split": ["train", "train", "train", "test"],
        "pathology": ["careless-submit", TRUTH, "format-error", "careless-submit"],
    })


@pytest.fixture
def diagnoses() -> pd.DataFrame:
    return pd.DataFrame({
        "candidate": ["base", "base"], "task_id": ["t1", "t2"], "repeat": [0, 1],
        "where": ["prompt", "config"], "why": ["careless-submit", "thinking-runaway"],
        "evidence": ["submitting without running the tests", "reconsider the edge cases"],
        "confidence": [0.8, 0.6],
    })


ARCHIVE = pd.DataFrame({"where": ["knowledge"], "why": ["format-error"], "candidate": ["c3"],
                        "rate": [0.61], "delta_pp": [6.7], "z": [2.3], "round": [2]})
HISTORY = pd.DataFrame({"mechanism": ["answer-format-checklist"], "where": ["knowledge"],
                        "why": ["format-error"], "decision": ["cull"], "delta_pp": [-4.0]})


def propose(ev: ClaudeEvolver, harness: Path, diagnoses: pd.DataFrame, n: int = 3,
            vocabulary: Vocabulary | None = None, log=None) -> list:
    return ev.propose(diagnoses, harness=harness_files(harness), archive=ARCHIVE,
                      vocabulary=vocabulary or Vocabulary.default(), n=n, history=HISTORY,
                      log=log)


# ---------------------------------------------------------------------- request shape


def test_diagnose_request_shape_and_no_test_task_content(failures, harness):
    server = Server(ok("diagnose_ok.json"))
    ev = evolver(server, model="claude-sonnet-4-6", max_tokens=4000, temperature=0.7)
    with pytest.warns(UserWarning, match="split is not 'train'"):
        ev.diagnose(failures, harness=harness_files(harness))
    (request,) = server.requests
    assert request["model"] == "claude-sonnet-4-6"
    assert request["max_tokens"] == 4000
    assert request["temperature"] == 0.7
    assert [t["name"] for t in request["tools"]] == ["report_diagnoses", "propose_patches"]
    assert request["tool_choice"] == {"type": "tool", "name": "report_diagnoses"}
    system = request["system"]
    assert [("cache_control" in block) for block in system] == [False, True]
    assert system[-1]["cache_control"] == {"type": "ephemeral"}
    assert "careless-submit:" in system[0]["text"]  # the vocabulary with definitions
    assert (harness / "prompt/system.md").read_text() in system[1]["text"]
    user = request["messages"][0]["content"][0]["text"]
    assert 'task_id="t1" repeat="0"' in user and "category='python'" in user
    assert "I am confident, submitting without running the tests." in user
    raw = server.raw[0].decode()
    for secret in (CANARY, "held-out-task", TRUTH, "pathology="):
        assert secret not in raw


def test_propose_request_shows_archive_history_lineage_and_shares_cached_prefix(
        failures, diagnoses, harness):
    server = Server(ok("diagnose_ok.json"), ok("propose_ok.json"))
    ev = evolver(server)
    with pytest.warns(UserWarning):
        ev.diagnose(failures, harness=harness_files(harness))
    propose(ev, harness, diagnoses)
    first, second = server.requests
    assert second["tool_choice"] == {"type": "tool", "name": "propose_patches"}
    assert "temperature" not in second  # the API default is not sent
    assert second["model"] == ev.model == DEFAULT_MODEL
    assert first["tools"] == second["tools"] and first["system"] == second["system"]
    user = second["messages"][0]["content"][0]["text"]
    assert "answer-format-checklist" in user and "cull" in user  # history
    assert "c3" in user and "format-error" in user  # archive
    assert "this is the seed harness" in user  # lineage
    assert "category='python'" in user  # features remembered from diagnose
    assert "at most 3 patches" in user
    assert CANARY not in server.raw[1].decode()


def test_lineage_patches_are_shown_and_their_beacons_refused(diagnoses, harness):
    server = Server(ok("propose_ok.json"), ok("propose_ok.json"))
    prior = body("propose_ok.json")["content"][1]["input"]["patches"][1]
    from gsme.patches import FileChange, Patch
    apply_patch(harness, Patch(id="p-earlier", where="knowledge", why="careless-submit",
                               mechanism="earlier-checklist", beacon="runaway-guard",
                               changes=(FileChange("knowledge/check.md", "runaway-guard\n"),)))
    ev = evolver(server)
    patches = propose(ev, harness, diagnoses)
    assert "earlier-checklist" in server.requests[0]["messages"][0]["content"][0]["text"]
    assert [p.beacon for p in patches] == ["verify-before-submit"]
    assert prior["beacon"] == "runaway-guard"
    assert len(server.requests) == 2  # the rejected patch got its one retry
    assert [("already used" in f["reason"]) for f in ev.failed_proposals] == [True, True]


# --------------------------------------------------------------------------- parsing


def test_diagnose_parses_validates_and_marks_unverified_evidence(failures, harness):
    server = Server(ok("diagnose_ok.json"))
    ev = evolver(server)
    vocabulary = Vocabulary.default()
    with pytest.warns(UserWarning):
        frame = ev.diagnose(failures, vocabulary=vocabulary)
    assert list(frame.columns) == ["candidate", "task_id", "repeat", "where", "why", "evidence",
                                   "confidence", "evidence_verified"]
    assert frame["task_id"].tolist() == ["t1", "t2", "t3"]
    assert frame["repeat"].tolist() == [0, 1, 0] and frame["repeat"].dtype == "int64"
    assert frame["where"].tolist() == ["prompt", "config", "knowledge"]
    assert frame["why"].tolist() == ["careless-submit", "thinking-runaway", "output-schema-miss"]
    # t2's "evidence" is not in its transcript: marked and its confidence halved;
    # t3's differs from the transcript in whitespace only.
    assert frame["evidence_verified"].tolist() == [True, False, True]
    assert frame["confidence"].tolist() == pytest.approx([0.8, 0.3, 0.7])
    assert "output-schema-miss" in vocabulary.labels
    added = vocabulary.to_frame().set_index("label").loc["output-schema-miss"]
    assert added["added_by"] == "claude-evolver"
    assert ev.failed_diagnoses == [] and ev.calls[0]["ok"] is True


def test_new_label_from_diagnose_reaches_the_vocabulary_given_to_propose(failures, harness):
    server = Server(ok("diagnose_ok.json"), ok("propose_ok.json"))
    ev = evolver(server)
    with pytest.warns(UserWarning):
        frame = ev.diagnose(failures)
    fresh = Vocabulary.default()
    assert "output-schema-miss" not in fresh.labels
    propose(ev, harness, frame, vocabulary=fresh)
    assert "output-schema-miss" in fresh.labels


def test_propose_returns_patches_that_apply_to_the_seed_harness(diagnoses, harness):
    ev = evolver(Server(ok("propose_ok.json")))
    patches = propose(ev, harness, diagnoses)
    assert [(p.where, p.why, p.beacon) for p in patches] == [
        ("prompt", "careless-submit", "verify-before-submit"),
        ("runtime", "thinking-runaway", "runaway-guard"),
    ]
    assert patches[0].env_gate == 'category == "python"'
    assert patches[0].predicted_tasks == ("t1",)
    assert len({p.id for p in patches}) == 2
    assert all(p.id.startswith("p-") and len(p.id) == 14 for p in patches)
    for patch in patches:
        validate_patch(harness_files(harness), patch)
    for patch in patches:
        apply_patch(harness, patch)
    assert [p.id for p in read_patches(harness_files(harness))] == sorted(p.id for p in patches)
    assert "[verify-before-submit]" in (harness / "prompt/system.md").read_text()
    assert ev.failed_proposals == []


def test_propose_keeps_at_most_n_and_records_the_rest(diagnoses, harness):
    ev = evolver(Server(ok("propose_ok.json")))
    patches = propose(ev, harness, diagnoses, n=1)
    assert len(patches) == 1
    (failed,) = ev.failed_proposals
    assert failed["reason"] == "more than n=1 valid patches"
    assert failed["raw"].startswith("p-") and failed["raw"] != patches[0].id


# ------------------------------------------------------------- invalid answer: one retry


def test_invalid_items_get_one_retry_with_the_errors_sent_back(diagnoses, harness):
    server = Server(ok("propose_partly_invalid.json"), ok("propose_retry.json"))
    ev = evolver(server)
    patches = propose(ev, harness, diagnoses)
    assert len(server.requests) == 2
    messages = server.requests[1]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"][0]["type"] == "tool_use"
    (result,) = messages[2]["content"]
    assert result["type"] == "tool_result" and result["is_error"] is True
    assert result["tool_use_id"] == "toolu_01"
    assert "patches[1]" in result["content"] and "lever 'prompt'" in result["content"]
    assert "made-up-mode" in result["content"] and "1 item(s) passed" in result["content"]
    # the valid first item is kept, the corrected one added, the still-invalid one dropped
    assert [p.beacon for p in patches] == ["verify-before-submit", "runaway-guard"]
    (failed,) = ev.failed_proposals
    assert "'..'" in failed["reason"] and "escape.md" in failed["raw"]
    assert [c["attempt"] for c in ev.calls] == [0, 1]
    assert [c["ok"] for c in ev.calls] == [False, False]


def test_rejections_are_kept_when_the_retry_itself_fails(diagnoses, harness):
    server = Server(ok("propose_partly_invalid.json"), error(529))
    ev = evolver(server, max_retries=0)
    patches = propose(ev, harness, diagnoses)
    assert [p.beacon for p in patches] == ["verify-before-submit"]
    reasons = [f["reason"] for f in ev.failed_proposals]
    assert len(reasons) == 3
    assert reasons[0].startswith("patches[1]: ") and reasons[1].startswith("patches[2]: ")
    assert "OverloadedError (HTTP 529)" in reasons[2]


def test_diagnoses_of_failures_not_shown_or_twice_are_rejected(failures):
    first = body("diagnose_ok.json")
    items = first["content"][0]["input"]["diagnoses"]
    items += [dict(items[0], task_id="held-out-task"), dict(items[0], evidence="again")]
    retry = dict(body("diagnose_ok.json"), content=[
        {"type": "tool_use", "id": "toolu_02", "name": "report_diagnoses",
         "input": {"diagnoses": []}}])
    server = Server((200, first), (200, retry))
    ev = evolver(server)
    with pytest.warns(UserWarning):
        frame = ev.diagnose(failures)
    assert frame["task_id"].tolist() == ["t1", "t2", "t3"]
    sent = server.requests[1]["messages"][2]["content"][0]["content"]
    assert "diagnoses[3]: task_id 'held-out-task' with repeat=0 is not a failure shown" in sent
    assert "diagnoses[4]: a second diagnosis of task_id 't1' repeat=0" in sent
    assert [c["ok"] for c in ev.calls] == [False, True]
    assert ev.failed_diagnoses == []  # withdrawn on the retry; the reasons are in calls
    assert "held-out-task" in ev.calls[0]["error"]


def test_answer_without_the_tool_call_is_retried_once_then_recorded(diagnoses, harness):
    server = Server(ok("no_tool_call.json"), ok("no_tool_call.json"))
    ev = evolver(server, model="claude-opus-5-5")
    assert propose(ev, harness, diagnoses) == []
    assert len(server.requests) == 2
    assert server.requests[0]["tool_choice"] == {"type": "auto"}  # forcing is refused there
    retry = server.requests[1]["messages"]
    assert retry[2]["content"][0]["type"] == "text"
    assert "no propose_patches call" in retry[2]["content"][0]["text"]
    assert "no propose_patches call" in ev.failed_proposals[0]["reason"]
    assert "t1 is careless" in ev.failed_proposals[0]["raw"]


# ---------------------------------------------------------- refusal and truncation


def test_refusal_is_recorded_and_not_retried(diagnoses, harness):
    server = Server(ok("refusal.json"))
    ev = evolver(server)
    assert propose(ev, harness, diagnoses) == []
    assert len(server.requests) == 1
    (call,) = ev.calls
    assert call["stop_reason"] == "refusal" and call["ok"] is False
    assert "refus" in call["error"]
    assert ev.failed_proposals == [{"reason": call["error"], "raw": "I can't help with that."}]


def test_truncated_answer_is_discarded_and_retried(diagnoses, harness):
    server = Server(ok("truncated.json"), ok("propose_ok.json"))
    ev = evolver(server, max_tokens=8192)
    patches = propose(ev, harness, diagnoses)
    assert len(patches) == 2 and len(server.requests) == 2
    result = server.requests[1]["messages"][2]["content"][0]
    assert result["is_error"] is True and "cut off" in result["content"]
    assert "max_tokens=8192" in result["content"]
    assert ev.calls[0]["stop_reason"] == "max_tokens" and ev.calls[0]["ok"] is False
    assert ev.calls[1]["ok"] is True


def test_truncated_twice_returns_nothing_and_records_why(failures):
    server = Server(ok("truncated.json"), ok("truncated.json"))
    ev = evolver(server)
    with pytest.warns(UserWarning):
        frame = ev.diagnose(failures)
    assert frame.empty and list(frame.columns)[:7] == [
        "candidate", "task_id", "repeat", "where", "why", "evidence", "confidence"]
    assert "cut off" in ev.failed_diagnoses[0]["reason"]


# --------------------------------------------------------------- transport errors


@pytest.mark.parametrize("status", [429, 500, 529])
def test_rate_limits_and_server_errors_are_retried_by_the_sdk(status, diagnoses, harness):
    server = Server(error(status), error(status), ok("propose_ok.json"))
    ev = evolver(server, max_retries=2)
    assert len(propose(ev, harness, diagnoses)) == 2
    assert len(server.requests) == 3
    assert [c["ok"] for c in ev.calls] == [True]


@pytest.mark.parametrize("status", [429, 529])
def test_exhausted_retries_record_a_failed_call_and_return_nothing(status, failures, diagnoses,
                                                                    harness):
    server = Server(*[error(status)] * 6)
    ev = evolver(server, max_retries=2)
    seen = []
    assert propose(ev, harness, diagnoses, log=seen.append) == []
    with pytest.warns(UserWarning):
        assert ev.diagnose(failures).empty
    assert len(server.requests) == 6
    assert [(c["kind"], c["ok"]) for c in ev.calls] == [("propose", False), ("diagnose", False)]
    assert seen == ev.calls[:1]  # a failed call reaches the log too
    assert f"HTTP {status}" in ev.calls[0]["error"]
    assert ev.calls[0]["cost_usd"] == 0.0


# ----------------------------------------------------------------------- the API key


def test_api_key_never_appears_in_records_repr_logs_or_errors(diagnoses, harness, caplog):
    leaking = {"type": "error", "error": {"type": "authentication_error",
                                          "message": f"invalid x-api-key {KEY}"}}
    server = Server(ok("propose_ok.json"), ok("refusal.json"), (401, leaking))
    ev = evolver(server)
    with caplog.at_level(logging.DEBUG, logger="gsme"):
        propose(ev, harness, diagnoses)
        propose(ev, harness, diagnoses)
        with pytest.raises(ClaudeEvolverError) as raised:
            propose(ev, harness, diagnoses)
    assert "HTTP 401" in str(raised.value) and "[REDACTED:ANTHROPIC_API_KEY]" in str(raised.value)
    assert raised.value.__cause__ is None and raised.value.__suppress_context__
    texts = [str(raised.value), repr(ev), json.dumps(ev.calls), json.dumps(ev.failed_proposals),
             caplog.text]
    for text in texts:
        assert KEY not in text and "0123456789abcdef" not in text


def test_api_key_from_parameter_or_environment_is_not_kept(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.delenv(MODEL_ENV, raising=False)
    ev = ClaudeEvolver()
    assert ev.model == DEFAULT_MODEL
    assert KEY not in repr(ev)
    assert all(KEY not in repr(v) for k, v in vars(ev).items() if k != "_client")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY") as raised:
        ClaudeEvolver()
    assert KEY not in str(raised.value)
    assert KEY not in repr(ClaudeEvolver(api_key=KEY))
    with pytest.raises(ValueError, match="not both"):
        ClaudeEvolver(api_key=KEY, client=anthropic.Anthropic(api_key=KEY))


def test_temperature_is_refused_for_models_without_sampling_parameters():
    with pytest.raises(ValueError, match="temperature=0.2 cannot be used with model"):
        evolver(Server(), model="claude-opus-4-8", temperature=0.2)
    with pytest.raises(ValueError, match="temperature must be a number in"):
        evolver(Server(), temperature=1.5)
    assert evolver(Server(), model="claude-opus-5-5").temperature == 1.0


def test_model_rules_for_tool_choice_and_temperature():
    assert tool_choice("claude-opus-4-8", "x") == {"type": "tool", "name": "x"}
    assert tool_choice("claude-sonnet-5", "x") == {"type": "auto"}
    assert tool_choice("claude-opus-5-5", "x") == {"type": "auto"}
    assert accepts_temperature("claude-haiku-4-5-20251001")
    assert not accepts_temperature("claude-opus-4-7")
    assert not accepts_temperature("claude-fable-5-1")


def test_model_comes_from_the_environment_when_not_given(monkeypatch):
    monkeypatch.setenv(MODEL_ENV, "claude-sonnet-4-6")
    assert evolver(Server()).model == "claude-sonnet-4-6"
    assert evolver(Server(), model="claude-opus-4-5").model == "claude-opus-4-5"


# ----------------------------------------------------------------------- usage, cost


def test_usage_and_cost_are_recorded_per_call_and_passed_to_log(failures, diagnoses, harness):
    seen = []
    ev = evolver(Server(ok("diagnose_ok.json"), ok("propose_ok.json")),
                 model="claude-opus-4-8")
    with pytest.warns(UserWarning):
        ev.diagnose(failures, log=seen.append)
    assert len(seen) == 1  # passed on as it happens, not at the end
    propose(ev, harness, diagnoses, log=seen.append)
    assert seen == ev.calls and len(seen) == 2
    assert all(s is not c for s, c in zip(seen, ev.calls))  # a copy: the sink may change it
    first, second = seen
    assert set(first) == {"call_id", "kind", "model", "input_tokens", "output_tokens",
                          "cache_creation_input_tokens", "cache_read_input_tokens", "cost_usd",
                          "stop_reason", "attempt", "ok", "error"}
    assert (first["kind"], first["input_tokens"], first["output_tokens"],
            first["cache_creation_input_tokens"], first["stop_reason"]) == (
        "diagnose", 1520, 410, 3100, "tool_use")
    # $5 in, $25 out, $6.25 cache write, $0.50 cache read per million tokens
    assert first["cost_usd"] == pytest.approx((1520 * 5 + 410 * 25 + 3100 * 6.25) / 1e6)
    assert second["cost_usd"] == pytest.approx((900 * 5 + 1200 * 25 + 3100 * 0.5) / 1e6)
    assert first["call_id"] != second["call_id"] and second["error"] is None


def test_there_is_no_on_call_argument_any_more():
    with pytest.raises(TypeError, match="on_call"):
        evolver(Server(), on_call=print)


def test_cost_of_an_unlisted_model_is_nan(diagnoses, harness):
    ev = evolver(Server(ok("propose_ok.json")), model="claude-unlisted-9")
    propose(ev, harness, diagnoses)
    (call,) = ev.calls
    assert call["ok"] and call["output_tokens"] == 1200 and math.isnan(call["cost_usd"])


# ------------------------------------------------------ validation and prompt pieces


def test_schema_check_names_every_field_at_fault():
    item = {"where": "nowhere", "why": "", "mechanism": "m", "env_gate": "", "beacon": "b",
            "rationale": "r", "predicted_tasks": ["t1", 3], "extra": 1,
            "changes": [{"path": "prompt/a.md", "new": 3}]}
    errors = check(item, PATCH_ITEM, "patches[0]")
    assert "patches[0].where: 'nowhere' is not one of ['prompt', 'knowledge', 'runtime', " \
           "'config']" in errors
    assert "patches[0].why: must not be empty" in errors
    assert "patches[0]: unknown field 'extra'; allowed: " in errors[0] + "".join(errors)
    assert "patches[0].predicted_tasks[1]: expected string, got 3" in errors
    assert "patches[0].changes[0]: missing field 'old'" in errors
    one_line = dict(item, where="prompt", why="w", predicted_tasks=[], changes=[],
                    mechanism="a\nparent: forged-trailer", beacon="b" * 65)
    del one_line["extra"]
    assert check(one_line, PATCH_ITEM, "p") == ["p.mechanism: must be a single line",
                                                "p.beacon: 65 characters, at most 64"]
    assert check({"path": "p", "old": None, "new": ""}, CHANGE_ITEM, "c") == []
    assert check(True, {"type": "integer"}, "k") == ["k: expected integer, got True"]
    with pytest.raises(ValueError, match="one key 'patches'"):
        payload_items("propose_patches", {"diagnoses": []})
    assert [t["input_schema"]["required"] for t in TOOLS] == [["diagnoses"], ["patches"]]


def test_tool_schemas_are_valid_draft_2020_12():
    for tool in TOOLS:
        jsonschema.Draft202012Validator.check_schema(tool["input_schema"])


def test_schema_check_paths_reach_nested_items():
    patch = {"where": "prompt", "why": "w", "mechanism": "m", "env_gate": "x" * 501,
             "beacon": "b", "rationale": "r", "predicted_tasks": [], "changes": [],
             "new_label": {"label": "w", "definition": " ", "extra": 1}}
    items = [dict(patch, env_gate=""), dict(patch, env_gate=""), patch]
    assert check(items, {"type": "array", "items": PATCH_ITEM}, "items") == [
        "items[0].new_label: unknown field 'extra'; allowed: ['definition', 'label']",
        "items[0].new_label.definition: must not be empty",  # blank counts as empty
        "items[1].new_label: unknown field 'extra'; allowed: ['definition', 'label']",
        "items[1].new_label.definition: must not be empty",
        "items[2].env_gate: 501 characters, at most 500",
        "items[2].new_label: unknown field 'extra'; allowed: ['definition', 'label']",
        "items[2].new_label.definition: must not be empty",
    ]


def test_schema_check_is_stricter_than_json_schema_on_numbers_and_blanks():
    item = {"task_id": "t1", "repeat": 0, "where": "prompt", "why": "w", "evidence": "e",
            "confidence": 0.5}
    assert check(item, DIAGNOSIS_ITEM, "d") == []
    assert check(dict(item, repeat=1.0), DIAGNOSIS_ITEM, "d") == [
        "d.repeat: expected integer, got 1.0"]
    assert check(dict(item, repeat=True), DIAGNOSIS_ITEM, "d") == [
        "d.repeat: expected integer, got True"]
    for bad in (float("nan"), float("inf")):
        assert check(dict(item, confidence=bad), DIAGNOSIS_ITEM, "d") == [
            f"d.confidence: expected number, got {bad!r}"]
    assert check(dict(item, confidence=1.5, repeat=-1, evidence=" \n"), DIAGNOSIS_ITEM, "d") == [
        "d.repeat: -1 is below the minimum 0", "d.evidence: must not be empty",
        "d.confidence: 1.5 is above the maximum 1"]
    # a field of the wrong type gets one message, not one per rule it then also breaks
    assert check(dict(item, where=3, why=None), DIAGNOSIS_ITEM, "d") == [
        "d.where: expected string, got 3", "d.why: expected string, got None"]
    assert check([], DIAGNOSIS_ITEM, "d") == ["d: expected object, got []"]


def test_train_failures_drop_test_rows_and_pathology(failures):
    with pytest.warns(UserWarning, match="1 row"):
        shown = train_failures(failures)
    assert "pathology" not in shown.columns
    assert shown["task_id"].tolist() == ["t1", "t2", "t3"]
    with pytest.raises(ValueError, match=r"missing column\(s\) \['transcript'\]"):
        train_failures(failures.drop(columns="transcript"))


def test_failure_sample_depends_on_seed_not_row_order(failures):
    pool = pd.concat([failures.iloc[:3]] * 4, ignore_index=True).assign(
        repeat=range(12), split="train")
    one = sample_failures(train_failures(pool), max_failures=5, seed=1)
    again = sample_failures(train_failures(pool.iloc[::-1]), max_failures=5, seed=1)
    other = sample_failures(train_failures(pool), max_failures=5, seed=2)
    assert len(one) == 5 and one.equals(again)
    assert not one.equals(other)


def test_digest_keeps_head_and_tail_within_budget():
    text = "HEAD" + "x" * 1000 + "TAIL"
    short = digest(text, max_chars=100)
    assert short.startswith("HEAD") and short.endswith("TAIL")
    assert "[... 908 characters omitted ...]" in short
    assert digest("short", max_chars=100) == "short" and digest(None, max_chars=10) == ""


def test_trial_bookkeeping_is_never_shown_as_a_task_feature(failures):
    server = Server(ok("diagnose_ok.json"))
    ev = evolver(server)
    trials = failures.assign(attempt=1, error="hidden-error-text", borrowed_from="c9",
                             round=4, tokens=5.0, trajectory="ref-123")
    with pytest.warns(UserWarning):
        ev.diagnose(trials)
    user = server.requests[0]["messages"][0]["content"][0]["text"]
    assert "features: category='python'\n" in user
    for column in ("attempt=", "error=", "borrowed_from=", "round=", "tokens=", "trajectory="):
        assert column not in user


def test_a_harness_folder_is_refused_with_what_to_pass(failures, diagnoses, harness):
    ev = evolver(Server())
    with pytest.raises(TypeError, match=r"harness must be a mapping.*harness_files"):
        ev.propose(diagnoses, harness=harness, n=1)
    with warnings.catch_warnings():  # the argument is checked before the failures are read
        warnings.simplefilter("error")
        with pytest.raises(TypeError, match="harness must be a mapping"):
            ev.diagnose(failures, harness=harness)


def test_diagnose_shows_at_most_max_failures_with_digests(failures):
    server = Server(ok("diagnose_ok.json"))
    ev = evolver(server, max_failures=2, digest_tokens=50)
    with pytest.warns(UserWarning):
        ev.diagnose(failures)
    user = server.requests[0]["messages"][0]["content"][0]["text"]
    assert user.count("<failure ") == 2 and "of\n3 failures" in user
    assert T2 not in user  # never whole: digested to about 200 characters, or not sampled


def test_import_gsme_does_not_import_anthropic():
    code = "import sys, gsme, gsme.evolvers; print('anthropic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
