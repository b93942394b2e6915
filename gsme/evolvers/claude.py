"""The Claude evolver: diagnoses and patches from a Claude model through forced tool use.

Every answer is untrusted: it is checked against the tool's JSON schema, the levers, the
why vocabulary, the env-gate grammar and the harness path rules (:func:`validate_patch`)
before anything is returned. An answer with invalid parts gets one retry, the errors sent
back as an error ``tool_result``; what is still invalid is dropped and kept, with its
reason, in ``failed_proposals`` / ``failed_diagnoses``. Rate limits and server errors
(429, 500, 529, ...) are retried with backoff by the ``anthropic`` SDK itself
(``max_retries``); a call that still fails is recorded and yields nothing, so a run goes
on. Every API call is recorded (tokens, cost, stop reason) in ``calls`` and passed to
the ``log`` given to :meth:`~ClaudeEvolver.diagnose` or :meth:`~ClaudeEvolver.propose`
(the run's ledger). The API key is handed to the SDK client only: no attribute, record, log
message or exception of this module holds it.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from collections.abc import Callable, Mapping

import anthropic
import pandas as pd

from gsme.evolvers.base import DIAGNOSIS_COLUMNS, Evolver, Log, prompt_digest
from gsme.evolvers.claude_models import (
    API_TEMPERATURE,
    DEFAULT_MODEL,
    MODEL_ENV,
    accepts_temperature,
    tool_choice,
)
from gsme.evolvers.claude_prompt import (
    archive_text,
    diagnoses_text,
    failure_digests,
    features,
    history_text,
    lineage_text,
    load_prompt,
    sample_failures,
    system_blocks,
    train_failures,
)
from gsme.evolvers.claude_tools import (
    DIAGNOSE_TOOL,
    PROPOSE_TOOL,
    TOOLS,
    accept_diagnosis,
    accept_patch,
    feedback,
    read_answer,
    runtime_beacons,
)
from gsme.patches import Patch, lever_files, read_patches
from gsme.prices import call_cost
from gsme.redact import redact
from gsme.settings import PROMPT_FAILURES
from gsme.vocabulary import Vocabulary

__all__ = ["ClaudeEvolver", "ClaudeEvolverError"]

logger = logging.getLogger(__name__)

ADDED_BY = "claude-evolver"


class ClaudeEvolverError(RuntimeError):
    """A call that can never succeed as configured (authentication or permission denied).

    Examples
    --------
    A fake client stands in for the API (nothing is sent) and refuses the key:

    >>> from types import SimpleNamespace
    >>> import httpx2  # the HTTP package of the anthropic SDK
    >>> def refuse(**params):
    ...     request = httpx2.Request("POST", "https://api.anthropic.com/v1/messages")
    ...     raise anthropic.AuthenticationError("invalid x-api-key", body=None,
    ...                                         response=httpx2.Response(401, request=request))
    >>> evolver = ClaudeEvolver(client=SimpleNamespace(messages=SimpleNamespace(create=refuse)))
    >>> failures = pd.DataFrame({"candidate": "baseline", "task_id": ["t1"], "repeat": [0],
    ...                          "transcript": ["submit()"], "category": ["shell"]})
    >>> try:
    ...     evolver.diagnose(failures)
    ... except ClaudeEvolverError as err:
    ...     print(err)
    AuthenticationError (HTTP 401): invalid x-api-key
    """


class ClaudeEvolver(Evolver):
    """An :class:`Evolver` backed by a Claude model over the ``anthropic`` SDK.

    Parameters
    ----------
    client : anthropic.Anthropic, optional
        A ready client (its own key, transport and ``max_retries``). Without it a client
        is made from ``api_key``, else the ``ANTHROPIC_API_KEY`` environment variable.
    api_key : str, optional
        Handed to the new client and kept nowhere else. Not with ``client``.
    model : str, optional
        Model id; default the ``GSME_EVOLVER_MODEL`` environment variable, else
        :data:`~gsme.evolvers.claude_models.DEFAULT_MODEL`.
    max_tokens : int
        Output limit of every request (tool input included: a cut-off answer is invalid).
    temperature : float
        Sampling temperature in [0, 1]. The API default 1.0 is not sent (the SDK takes it
        as an extra body field); Opus 4.7 and later and every generation-5 model refuse
        any other value, so setting one with such a model raises ValueError.
    digest_tokens : int
        Budget of one failure's transcript digest, estimated at four characters a token.
    seed : int
        Seed of the sampling of shown failures; :meth:`reseed` changes it per round.
    max_failures : int
        At most this many failures are shown to one diagnose call.
    max_retries : int
        SDK retries (with exponential backoff) of a rate-limited or failed request, for a
        client made here.

    Attributes
    ----------
    calls : list of dict
        One record per API call: ``call_id, kind, model, input_tokens, output_tokens,
        cache_creation_input_tokens, cache_read_input_tokens, cost_usd, stop_reason,
        attempt, ok, error``. ``attempt`` is 0, or 1 for the retry after an invalid answer;
        ``ok`` is True when the call's answer was valid as a whole.
    failed_proposals, failed_diagnoses : list of dict
        ``{reason, raw}`` of every patch / diagnosis (or whole answer) dropped as invalid.
    history : DataFrame or None
        Mechanisms tried before (``mechanism, where, why, decision, delta_pp``), shown by
        :meth:`propose` when its ``history`` argument is None.
    vocabulary : Vocabulary or None
        The why vocabulary :meth:`diagnose` uses when given none: the last one passed to
        :meth:`propose`, else :meth:`Vocabulary.default`.

    Examples
    --------
    Made with a key, it sends nothing until asked; the key is reported for redaction:

    >>> ClaudeEvolver(api_key="sk-ant-example").secrets()
    {'ANTHROPIC_API_KEY': 'sk-ant-example'}

    A fake client (here returning one locally built answer; no request is sent):

    >>> from types import SimpleNamespace
    >>> from anthropic.types import Message
    >>> item = {"task_id": "t1", "repeat": 0, "where": "prompt", "why": "careless-submit",
    ...         "evidence": "submit()", "confidence": 0.8}
    >>> answer = Message.model_validate({
    ...     "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
    ...     "stop_reason": "tool_use", "usage": {"input_tokens": 900, "output_tokens": 60},
    ...     "content": [{"type": "tool_use", "id": "toolu_1", "name": "report_diagnoses",
    ...                  "input": {"diagnoses": [item]}}]})
    >>> client = SimpleNamespace(messages=SimpleNamespace(create=lambda **params: answer))
    >>> evolver = ClaudeEvolver(client=client)
    >>> failures = pd.DataFrame({"candidate": "baseline", "task_id": ["t1"], "repeat": [0],
    ...                          "transcript": ["submit()"], "category": ["shell"]})
    >>> evolver.diagnose(failures)[["task_id", "where", "why", "confidence"]]
      task_id   where              why  confidence
    0      t1  prompt  careless-submit         0.8
    >>> evolver.calls[0]["kind"], evolver.calls[0]["ok"], evolver.calls[0]["input_tokens"]
    ('diagnose', True, 900)
    """

    name = "claude"

    def __init__(self, *, client: anthropic.Anthropic | None = None, api_key: str | None = None,
                 model: str | None = None, max_tokens: int = 8192,
                 temperature: float = 1.0, digest_tokens: int = 2000, seed: int = 0,
                 max_failures: int = PROMPT_FAILURES, max_retries: int = 4):
        for arg, value, low in (("max_tokens", max_tokens, 1), ("digest_tokens", digest_tokens, 1),
                                ("max_failures", max_failures, 1), ("max_retries", max_retries, 0)):
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ValueError(f"{arg} must be an integer >= {low}, got {value!r}")
        if not isinstance(temperature, (int, float)) or not 0.0 <= temperature <= 1.0:
            raise ValueError(f"temperature must be a number in [0, 1], got {temperature!r}")
        if client is not None and api_key is not None:
            raise ValueError("give either client or api_key, not both")
        if client is None:
            key = api_key or os.environ.get("ANTHROPIC_API_KEY")
            if not key:
                raise ValueError("no Anthropic API key: pass api_key=, set ANTHROPIC_API_KEY, "
                                 "or pass a ready client=")
            client = anthropic.Anthropic(api_key=key, max_retries=max_retries)
        self._client = client
        self.model = model or os.environ.get(MODEL_ENV) or DEFAULT_MODEL
        self.max_tokens = max_tokens
        self.temperature = float(temperature)
        if self.temperature != API_TEMPERATURE and not accepts_temperature(self.model):
            raise ValueError(f"temperature={temperature} cannot be used with model "
                             f"{self.model!r}, which accepts no sampling parameters; "
                             f"leave the default {API_TEMPERATURE}")
        self.digest_tokens = digest_tokens
        self.max_failures = max_failures
        self.seed = int(seed)
        self.calls: list[dict] = []
        self.failed_proposals: list[dict] = []
        self.failed_diagnoses: list[dict] = []
        self.history: pd.DataFrame | None = None
        self.vocabulary: Vocabulary | None = None
        self._task_features: dict[str, dict] = {}
        self._coined: dict[str, str] = {}

    def __repr__(self) -> str:
        return (f"ClaudeEvolver(model={self.model!r}, max_tokens={self.max_tokens}, "
                f"temperature={self.temperature}, digest_tokens={self.digest_tokens}, "
                f"max_failures={self.max_failures}, seed={self.seed})")

    def signature(self) -> dict[str, str]:
        """Its model; ``prompt`` a digest of its prompt texts and settings (not the seed)."""
        return {"evolver_model": self.model, "prompt": prompt_digest(
            "evolver_system", "diagnose", "propose", max_tokens=self.max_tokens,
            temperature=self.temperature, digest_tokens=self.digest_tokens,
            max_failures=self.max_failures)}

    def reseed(self, seed: int) -> None:
        """Restart the sampling of shown failures from ``seed``."""
        self.seed = int(seed)

    # ------------------------------------------------------------------------ diagnose

    def diagnose(self, failures: pd.DataFrame, *, harness: Mapping[str, str] | None = None,
                 vocabulary: Vocabulary | None = None, log: Log | None = None) -> pd.DataFrame:
        """One row per failure the model explains, from digests of the failing trajectories.

        Only train rows are shown (others are dropped with a warning), never a
        ``pathology`` column; at most ``max_failures``, sampled from ``seed``. The lever
        files of ``harness`` (the parent that failed) are shown when given. A ``why``
        the vocabulary lacks is accepted only with a ``new_label`` definition and is added
        to the vocabulary (``added_by="claude-evolver"``).

        Returns
        -------
        DataFrame
            ``candidate, task_id, repeat, where, why, evidence, confidence`` and
            ``evidence_verified``: False when the evidence is not a verbatim excerpt of
            the failure's transcript, in which case ``confidence`` is halved. Empty
            (same columns) when the call fails or nothing valid comes back.
        """
        if vocabulary is None:
            vocabulary = self.vocabulary if self.vocabulary is not None else Vocabulary.default()
        self.vocabulary = vocabulary
        levers = None if harness is None else lever_files(harness)  # checked before any work
        pool = train_failures(failures)
        shown = sample_failures(pool, max_failures=self.max_failures, seed=self.seed)
        if shown.empty:
            return _diagnoses_frame([])
        known = {}
        for _, row in shown.iterrows():
            self._task_features[str(row["task_id"])] = features(row)
            known.setdefault((str(row["task_id"]), int(row["repeat"])),
                             (row["candidate"], "" if pd.isna(row["transcript"])
                              else str(row["transcript"])))
        text = load_prompt("diagnose", n_shown=len(shown), n_total=len(pool),
                           digests=failure_digests(shown, digest_tokens=self.digest_tokens))
        rules = {"known": known, "seen": set(), "vocabulary": vocabulary,
                 "coined": self._coined, "added_by": ADDED_BY}
        rows = self._converse("diagnose", vocabulary, levers, text,
                              lambda item: accept_diagnosis(item, **rules), log)
        return _diagnoses_frame(rows)

    # ------------------------------------------------------------------------- propose

    def propose(self, diagnoses: pd.DataFrame, *, harness: Mapping[str, str],
                archive: pd.DataFrame | None = None, vocabulary: Vocabulary | None = None,
                n: int, history: pd.DataFrame | None = None,
                log: Log | None = None) -> list[Patch]:
        """Up to ``n`` validated patches for ``harness`` (the parent's files).

        The model is shown the harness files, the diagnoses (with the features of their
        tasks, as last seen by :meth:`diagnose`), the archive, the patches of the lineage
        and ``history`` (default ``self.history``): mechanisms tried before with the
        gates' decision. Each returned patch has passed :func:`validate_patch` on
        ``harness``, has a fresh ``p-<hash>`` id, a slug beacon that appears in its added
        text and is not used in the lineage, and predicts diagnosed train tasks only.

        Returns
        -------
        list of Patch
            Empty when the call fails; invalid patches are in ``failed_proposals``.
        """
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise ValueError(f"n must be an integer >= 0, got {n!r}")
        missing = [c for c in DIAGNOSIS_COLUMNS if c not in diagnoses.columns]
        if missing:
            raise ValueError(f"diagnoses is missing column(s) {missing}; "
                             f"it needs {DIAGNOSIS_COLUMNS}")
        vocabulary = vocabulary if vocabulary is not None else Vocabulary.default()
        self.vocabulary = vocabulary
        if n == 0:
            return []
        files = lever_files(harness)
        lineage = read_patches(harness)
        for label in sorted(set(diagnoses["why"]) - set(vocabulary.labels)):
            if label in self._coined:
                vocabulary.add(label, self._coined[label], added_by=ADDED_BY)
        text = load_prompt(
            "propose", n=n, lineage=lineage_text(lineage),
            archive=archive_text(archive if archive is not None else pd.DataFrame()),
            history=history_text(history if history is not None else self.history),
            diagnoses=diagnoses_text(diagnoses, self._task_features),
        )
        context = {"harness": harness, "files": files, "vocabulary": vocabulary,
                   "tasks": {str(t) for t in diagnoses["task_id"]}, "ids": set(),
                   "beacons": {p.beacon for p in lineage} | runtime_beacons(files),
                   "coined": self._coined, "added_by": ADDED_BY}
        patches = self._converse("propose", vocabulary, files, text,
                                 lambda item: accept_patch(item, **context), log)
        for extra in patches[n:]:
            self.failed_proposals.append({"reason": f"more than n={n} valid patches",
                                          "raw": extra.id})
        return patches[:n]

    # --------------------------------------------------------------------- the exchange

    def _converse(self, kind: str, vocabulary: Vocabulary, files: dict | None, text: str,
                  accept: Callable[[dict], object], log: Log | None) -> list:
        """Ask for ``kind``'s tool; keep the valid items; retry once with the errors.

        What is still invalid after the retry, or was invalid when the retry could not be
        made (API error, refusal), goes to ``failed_diagnoses`` / ``failed_proposals``.
        """
        tool = DIAGNOSE_TOOL if kind == "diagnose" else PROPOSE_TOOL
        failed = self.failed_diagnoses if kind == "diagnose" else self.failed_proposals
        system = system_blocks(vocabulary, files)
        messages = [{"role": "user", "content": [{"type": "text", "text": text}]}]
        kept: list = []
        pending: list[dict] = []
        for attempt in (0, 1):
            response, record = self._create(kind, tool, system, messages, attempt, log)
            if response is None:
                failed += pending + [{"reason": record["error"], "raw": ""}]
                return kept
            said = "".join(getattr(b, "text", "") for b in response.content)
            if response.stop_reason == "refusal":
                self._emit(record, "the model refused (stop_reason 'refusal')", log)
                failed += pending + [{"reason": record["error"], "raw": said}]
                return kept
            problems, rejected = read_answer(response, tool, accept, kept,
                                             max_tokens=self.max_tokens)
            reasons = problems + [f"{label}: {reason}" for label, reason, _ in rejected]
            pending = [{"reason": p, "raw": said} for p in problems] + [
                {"reason": f"{label}: {reason}", "raw": json.dumps(raw)}
                for label, reason, raw in rejected]
            self._emit(record, "; ".join(reasons) or None, log)
            if not pending:
                return kept
            messages += feedback(response, tool, problems, reasons, n_kept=len(kept))
        failed += pending
        return kept

    def _create(self, kind: str, tool: str, system: list, messages: list, attempt: int,
                log: Log | None):
        """One API call: ``(response, record)``, or ``(None, record)`` after an API error."""
        record = {"call_id": uuid.uuid4().hex[:12], "kind": kind, "model": self.model,
                  "input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 0, "cost_usd": 0.0, "stop_reason": None,
                  "attempt": attempt, "ok": False, "error": None}
        params = {"model": self.model, "max_tokens": self.max_tokens, "system": system,
                  "tools": TOOLS, "tool_choice": tool_choice(self.model, tool),
                  "messages": messages}
        if self.temperature != API_TEMPERATURE:
            params["extra_body"] = {"temperature": self.temperature}
        try:
            response = self._client.messages.create(**params)
        except anthropic.APIStatusError as err:
            self._emit(record, f"{type(err).__name__} (HTTP {err.status_code}): {err.message}",
                       log)
            if isinstance(err, (anthropic.AuthenticationError, anthropic.PermissionDeniedError)):
                raise ClaudeEvolverError(record["error"]) from None
            return None, record
        except anthropic.APIConnectionError as err:
            self._emit(record, f"{type(err).__name__}: {err}", log)
            return None, record
        usage = response.usage
        counts = {name: int(getattr(usage, name, 0) or 0) for name in
                  ("input_tokens", "output_tokens", "cache_creation_input_tokens",
                   "cache_read_input_tokens")}
        record.update(counts, stop_reason=response.stop_reason,
                      cost_usd=call_cost(self.model, *counts.values()))
        return response, record

    def _emit(self, record: dict, error: str | None, log: Log | None) -> None:
        """Finish ``record`` (``ok`` when there is no error), keep it and pass it on."""
        record["error"] = None if error is None else redact(error, self.secrets())
        record["ok"] = error is None
        if error is not None:
            logger.warning("Claude evolver %s call %s: %s", record["kind"], record["call_id"],
                           record["error"])
        self.calls.append(record)
        if log is not None:
            log(dict(record))

    def secrets(self) -> dict[str, str]:
        """The client's API key, under ``ANTHROPIC_API_KEY`` (none when it has none)."""
        key = getattr(self._client, "api_key", None)
        return {"ANTHROPIC_API_KEY": key} if isinstance(key, str) and key else {}


def _diagnoses_frame(rows: list[dict]) -> pd.DataFrame:
    columns = DIAGNOSIS_COLUMNS + ["evidence_verified"]
    frame = pd.DataFrame(rows, columns=columns)
    return frame.astype({"repeat": "int64", "confidence": "float64", "evidence_verified": bool})
