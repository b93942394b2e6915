"""Write real Inspect AI logs offline, with Inspect's mock model, for the importer tests.

Imported by ``tests/test_importers.py`` and ``tests/test_compare.py`` (by file path). The
mock model answers ``yes`` or ``no`` per (task, epoch) as ``outcomes`` says, and reports
explicit token usage (without it Inspect would count tokens with an encoding it downloads).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import Score, Target, accuracy, match, scorer
from inspect_ai.solver import Generate, TaskState, generate, solver

USAGE = ModelUsage(input_tokens=40, output_tokens=2, total_tokens=42)


@solver
def _flaky(crash: tuple[str, ...], retry: tuple[str, ...]):
    """Raise for the ``crash`` tasks always, for the ``retry`` tasks on their first try."""
    tried: Counter = Counter()

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        task = str(state.sample_id)
        tried[task, state.epoch] += 1
        if task in crash:
            raise RuntimeError(f"sandbox for {task} died")
        if task in retry and tried[task, state.epoch] == 1:
            raise ConnectionError("model API connection reset")
        return state

    return solve


@scorer(metrics=[accuracy()])
def _confidence():
    """A float scorer: 0.9 for a ``yes`` answer, 0.4 otherwise."""

    async def score(state: TaskState, target: Target) -> Score:
        return Score(value=0.9 if state.output.completion == "yes" else 0.4)

    return score


@scorer(metrics=[accuracy()])
def _graded(scores: dict[str, list[float]]):
    """A float scorer: the score ``scores`` gives the sample's task at its epoch."""

    async def score(state: TaskState, target: Target) -> Score:
        return Score(value=scores[str(state.sample_id)][state.epoch - 1])

    return score


def write_inspect_log(
    log_dir: Path,
    outcomes: dict[str, list[bool]],
    *,
    crash: tuple[str, ...] = (),
    retry: tuple[str, ...] = (),
    tags: tuple[str, ...] = (),
    metadata: dict | None = None,
    two_scorers: bool = False,
    log_format: str = "eval",
    name: str | None = None,
    graded: dict[str, list[float]] | None = None,
    task_args: dict | None = None,
) -> Path:
    """Run a tiny Inspect eval on the mock model and return the log file it wrote.

    ``name`` names the Inspect task (default: Inspect's, ``"task"``). ``graded`` (task →
    a float score per epoch) makes the only scorer one that gives those scores.
    ``task_args`` (``level``, ``hint``) makes it a ``@task`` function called with them, as
    ``inspect eval quiz.py -T level=2`` does (Inspect records them in ``eval.task_args``).
    """
    epochs = max(len(v) for v in outcomes.values())
    answered: Counter = Counter()

    def answer(messages, tools, tool_choice, config) -> ModelOutput:
        task = messages[-1].text.split()[-1]
        epoch = answered[task]
        answered[task] += 1
        hit = outcomes[task][epoch % len(outcomes[task])]
        return ModelOutput.from_content("mockllm/model", "yes" if hit else "no").model_copy(
            update={"usage": USAGE})

    def build() -> Task:
        return Task(
            dataset=[Sample(id=t, input=f"Is this solved: {t}", target="yes") for t in outcomes],
            solver=[_flaky(crash, retry), generate()],
            scorer=(_graded(graded) if graded is not None
                    else [match(), _confidence()] if two_scorers else match()),
            epochs=epochs,
            metadata=metadata or {},
            name=name,
        )

    if task_args is None:
        the_task = build()
    else:
        @task(name=name or "quiz")
        def quiz(level: int = 1, hint: str = "none") -> Task:
            return build()

        the_task = quiz(**task_args)
    model = get_model("mockllm/model", custom_outputs=answer)
    (log,) = inspect_eval(the_task, model=model, log_dir=str(log_dir), display="none",
                          max_samples=1, fail_on_error=False, retry_on_error=1 if retry else 0,
                          tags=list(tags), log_format=log_format, score_display=False)
    return Path(log.location)
