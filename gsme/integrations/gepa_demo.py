"""An offline GEPA world with known ground truth: SIMULATED, for tests and notebooks.

A task has a skill (one of :data:`SKILLS`) and a base difficulty, both drawn from its id. A
candidate (GEPA's ``dict`` of component texts) holds *rules*: instruction lines from
:data:`RULES`, each with a true effect on the log-odds of passing tasks of some skills
(one fix per skill, a few side effects, some rules that do nothing). A task passes with
probability ``sigmoid(base + Σ effects of the rules found anywhere in the candidate)``;
:func:`pass_probability` and :func:`true_rate` give the truth a measurement can be held to.

* :class:`DemoAdapter` — a ``GEPAAdapter``: every rollout is a Bernoulli draw seeded by
  (seed, candidate text, task, how many times that pair was drawn before), so a run is
  the same every time and repeats of a task differ as real rollouts do; optional
  infrastructure faults raise :class:`DemoInfraError`.
* :class:`ScriptedReflection` — the reflection model: called with GEPA's reflection
  prompt, it appends one rule to the current instruction, the fix of a skill the feedback
  names with probability ``targeted``, else any rule (possibly harmful or idle).
  :meth:`ScriptedReflection.propose` is the same model as DSPy's ``instruction_proposer``.
* :func:`dspy_task_lm`, :func:`dspy_program`, :func:`dspy_metric` — the same world behind
  ``dspy.GEPA``: a ``dspy.LM`` whose offline engine answers as the world says.

Examples
--------
>>> tasks = make_tasks(3, prefix="t")
>>> [t["task_id"] for t in tasks]
['t000', 't001', 't002']
>>> round(true_rate(SEED_CANDIDATE, tasks), 3) == round(true_rate(dict(SEED_CANDIDATE), tasks), 3)
True
"""

from __future__ import annotations

import hashlib
import re
import threading

import numpy as np

__all__ = ["RULES", "SEED_CANDIDATE", "SKILLS", "DemoAdapter", "DemoInfraError",
           "ScriptedReflection", "dspy_metric", "dspy_program", "dspy_task_lm", "make_tasks",
           "pass_probability", "true_rate"]

SKILLS = ("units", "format", "arithmetic", "dates")
"""Skills a task may test; each has one fixing rule in :data:`RULES`."""

RULES = {
    "Always state the unit of every number.": {"units": 4.0},
    "Answer in exactly the requested format.": {"format": 4.0},
    "Check each arithmetic step twice.": {"arithmetic": 3.5},
    "Write dates as YYYY-MM-DD.": {"dates": 4.0},
    "Be as brief as possible.": {"arithmetic": -2.0, "units": -1.0, "format": 0.5},
    "Think step by step at length.": {"format": -2.0, "dates": -1.0, "arithmetic": 0.5},
    "Be polite.": {},
    "Use a friendly tone.": {},
}
"""Rule line → true effect on the log-odds of passing, by skill (SIMULATED)."""

_FIX = {skill: rule for rule, effects in RULES.items() for skill, e in effects.items()
        if e >= 2}

SEED_CANDIDATE = {"system_prompt": "You are a careful assistant.",
                  "answer_format": "Give the final answer on the last line."}
"""The seed candidate: two components and no rule."""


class DemoInfraError(RuntimeError):
    """A simulated infrastructure failure (the rollout's environment died).

    Examples
    --------
    >>> try:
    ...     DemoAdapter(seed=0, infra_rate=1.0).evaluate(make_tasks(2), SEED_CANDIDATE)
    ... except DemoInfraError as err:
    ...     print(err)
    simulated environment crash (call 1)
    """


def _hash(*parts) -> int:
    text = "\x1f".join(str(p) for p in parts).encode("utf-8")
    return int.from_bytes(hashlib.sha256(text).digest()[:8], "big")


def _task(task_id: str) -> tuple[str, float]:
    """A task's skill and base log-odds, drawn from its id: about 35% nearly never pass,
    25% nearly always, the rest in between."""
    rng = np.random.default_rng(_hash("task", task_id))
    kind = rng.random()
    base = -4.0 if kind < 0.35 else (3.0 if kind < 0.6 else rng.normal(-1.0, 1.0))
    return SKILLS[int(rng.integers(len(SKILLS)))], float(base)


def make_tasks(n: int, *, prefix: str = "t") -> list[dict]:
    """``n`` tasks ``{"task_id", "skill", "question"}``, ids ``<prefix>000`` on.

    Examples
    --------
    >>> [(t["task_id"], t["skill"]) for t in make_tasks(3, prefix="v")]
    [('v000', 'dates'), ('v001', 'arithmetic'), ('v002', 'units')]
    """
    tasks = []
    for i in range(n):
        task_id = f"{prefix}{i:03d}"
        skill, _ = _task(task_id)
        tasks.append({"task_id": task_id, "skill": skill,
                      "question": f"{task_id}: a {skill} question"})
    return tasks


def _rules(candidate) -> set[str]:
    text = "\n".join(candidate.values()) if isinstance(candidate, dict) else str(candidate)
    return {rule for rule in RULES if rule in text}


def pass_probability(candidate, task_id: str) -> float:
    """The true probability that ``candidate`` (a dict of texts, or one text) passes a task.

    Examples
    --------
    >>> round(pass_probability(SEED_CANDIDATE, "t000"), 3)
    0.953
    >>> round(pass_probability("Always state the unit of every number.", "t000"), 3)  # a units task
    0.999
    """
    skill, base = _task(task_id)
    logit = base + sum(RULES[rule].get(skill, 0.0) for rule in _rules(candidate))
    return float(1 / (1 + np.exp(-logit)))


def true_rate(candidate, tasks) -> float:
    """The mean true pass probability of ``candidate`` over ``tasks`` (dicts with task_id).

    Examples
    --------
    >>> tasks = make_tasks(4)
    >>> fixes = "\\n".join(rule for rule, effects in RULES.items()
    ...                     if max(effects.values(), default=0) >= 2)
    >>> round(true_rate(SEED_CANDIDATE, tasks), 3), round(true_rate(fixes, tasks), 3)
    (0.266, 0.682)
    """
    return float(np.mean([pass_probability(candidate, t["task_id"]) for t in tasks]))


class _Draws:
    """Seeded Bernoulli draws per (candidate text, task), counted so repeats differ."""

    def __init__(self, seed: int):
        self.seed, self.counts, self.lock = seed, {}, threading.Lock()

    def passed(self, key: str, candidate, task_id: str) -> bool:
        with self.lock:
            n = self.counts.get((key, task_id), 0)
            self.counts[(key, task_id)] = n + 1
        u = np.random.default_rng([self.seed, _hash(key), _hash(task_id), n]).random()
        return bool(u < pass_probability(candidate, task_id))


def _feedback(skill: str, passed: bool) -> str:
    return "Correct." if passed else (f"Wrong: this is a {skill} task and the answer missed "
                                      f"what {skill} questions require.")


class DemoAdapter:
    """A deterministic offline ``GEPAAdapter`` over :func:`make_tasks` items (SIMULATED).

    Parameters
    ----------
    seed : int
        Seeds every draw.
    infra_rate : float
        Probability that one ``evaluate`` call fails as a whole with
        :class:`DemoInfraError` (the environment died; GEPA itself would crash or score 0).

    Examples
    --------
    >>> adapter = DemoAdapter(seed=0)
    >>> batch = adapter.evaluate(make_tasks(4), SEED_CANDIDATE, capture_traces=True)
    >>> batch.scores
    [1.0, 0.0, 0.0, 0.0]
    >>> batch.trajectories[1]["feedback"]
    'Wrong: this is a arithmetic task and the answer missed what arithmetic questions require.'
    """

    propose_new_texts = None  # GEPA's own reflection proposes (with a reflection_lm)

    def __init__(self, *, seed: int = 0, infra_rate: float = 0.0):
        self.seed, self.infra_rate = seed, float(infra_rate)
        self.draws, self.calls = _Draws(seed), 0

    def evaluate(self, batch, candidate, capture_traces=False):
        from gepa.core.adapter import EvaluationBatch

        self.calls += 1
        if np.random.default_rng([self.seed, 1, self.calls]).random() < self.infra_rate:
            raise DemoInfraError(f"simulated environment crash (call {self.calls})")
        key = "\x1e".join(f"{k}={v}" for k, v in sorted(candidate.items()))
        passed = [self.draws.passed(key, candidate, item["task_id"]) for item in batch]
        outputs = ["correct" if p else "wrong" for p in passed]
        traces = [{"question": item["question"], "output": out,
                   "feedback": _feedback(item["skill"], p)}
                  for item, out, p in zip(batch, outputs, passed)] if capture_traces else None
        return EvaluationBatch(outputs=outputs, scores=[float(p) for p in passed],
                               trajectories=traces)

    def make_reflective_dataset(self, candidate, eval_batch, components_to_update):
        records = [{"Inputs": {"question": t["question"]}, "Generated Outputs": t["output"],
                    "Feedback": t["feedback"]} for t in eval_batch.trajectories or []]
        return {name: records for name in components_to_update}


class ScriptedReflection:
    """The reflection model: one more rule per call, often the fix the feedback asks for.

    Parameters
    ----------
    seed : int
    targeted : float
        Probability of adding the fix of the first failing skill the feedback names (when
        the text lacks it); otherwise a rule drawn uniformly from those it lacks.

    Examples
    --------
    >>> reflection = ScriptedReflection(seed=0, targeted=1.0)
    >>> print(reflection.revise("Be careful.", "Wrong: this is a dates task and ..."))
    Be careful.
    Write dates as YYYY-MM-DD.
    """

    def __init__(self, *, seed: int = 0, targeted: float = 0.5):
        self.seed, self.targeted, self.calls = seed, float(targeted), 0

    def __call__(self, prompt) -> str:
        """GEPA's ``reflection_lm``: the prompt's first ``` block is the current text."""
        prompt = prompt if isinstance(prompt, str) else str(prompt)
        blocks = prompt.split("```")
        current = blocks[1].strip("\n") if len(blocks) > 2 else ""
        return f"```\n{self.revise(current, prompt)}\n```"

    def propose(self, candidate, reflective_dataset, components_to_update) -> dict[str, str]:
        """DSPy's ``instruction_proposer``: revise each component named."""
        return {name: self.revise(candidate[name], str(reflective_dataset.get(name, "")))
                for name in components_to_update}

    def revise(self, text: str, feedback: str) -> str:
        """``text`` with one rule appended, chosen from the skills ``feedback`` names."""
        rng = np.random.default_rng([self.seed, self.calls])
        self.calls += 1
        fixes = [_FIX[s] for s in re.findall(r"this is a (\w+) task", feedback)
                 if s in _FIX and _FIX[s] not in text]
        lacking = [rule for rule in RULES if rule not in text]
        if fixes and rng.random() < self.targeted:
            rule = fixes[0]
        elif lacking:
            rule = lacking[int(rng.integers(len(lacking)))]
        else:
            return text
        return f"{text.rstrip()}\n{rule}"


def dspy_task_lm(*, seed: int = 0):
    """A ``dspy.LM`` answering offline as the world says (its instructions are the text).

    Examples
    --------
    >>> import dspy
    >>> with dspy.context(lm=dspy_task_lm(seed=0)):
    ...     print(dspy_program()(question="t000: a units question").answer)
    correct
    """
    import dspy
    from dspy.lm15 import Message, Response, TextPart, Usage

    draws = _Draws(seed)

    class Engine:
        def complete(self, request):
            system = request.system if isinstance(request.system, str) else "".join(
                p.text for p in request.system or [])
            found = re.search(r"\b([a-z]\d{3}): a \w+ question", request.messages[-1].text or "")
            task_id = found.group(1) if found else "unknown"
            ok = draws.passed(system, system, task_id)
            text = f"[[ ## answer ## ]]\n{'correct' if ok else 'wrong'}\n\n[[ ## completed ## ]]"
            return Response(id=None, model="gsme-demo", finish_reason="stop",
                            message=Message.assistant([TextPart(text)]),
                            usage=Usage(input_tokens=0, output_tokens=0, total_tokens=0))

    return dspy.LM("gsme-demo/task", engine=Engine(), cache=False)


def dspy_program():
    """A one-predictor DSPy program whose instructions are the seed's system prompt.

    Examples
    --------
    >>> program = dspy_program()
    >>> program.solve.signature.instructions == SEED_CANDIDATE["system_prompt"]
    True
    """
    import dspy

    class Solve(dspy.Module):
        def __init__(self):
            super().__init__()
            self.solve = dspy.Predict(dspy.Signature("question -> answer",
                                                     SEED_CANDIDATE["system_prompt"]))

        def forward(self, question):
            return self.solve(question=question)

    return Solve()


def dspy_metric(gold, pred, trace=None, pred_name=None, pred_trace=None):
    """GEPA's five-argument DSPy metric: 1 for a correct answer, with the world's feedback.

    Examples
    --------
    >>> import dspy
    >>> result = dspy_metric(dspy.Example(task_id="t001"), dspy.Prediction(answer="wrong"))
    >>> result.score
    0.0
    >>> result.feedback
    'Wrong: this is a arithmetic task and the answer missed what arithmetic questions require.'
    """
    import dspy

    passed = str(getattr(pred, "answer", "")).strip() == "correct"
    skill = _task(gold.task_id)[0]
    return dspy.Prediction(score=float(passed), feedback=_feedback(skill, passed))
