"""Simulated transcripts: text in which a failure shows its pathology's signature.

A failing transcript carries the signature of its true failure mode (a runaway reasoning
section, a submission without tests, a repeated tool call, ...), in one of several
phrasings. A share :data:`AMBIGUOUS` of failing transcripts is ambiguous: a share
:data:`MISLEADING` shows the signature of a *different* failure mode, the rest none at all,
so that diagnosis from text alone is imperfect, as it is for real trajectories. All text is
simulated.
"""

from __future__ import annotations

from gsme.sim.profiles import WHYS

__all__ = ["AMBIGUOUS", "BLANK", "MISLEADING", "render", "signature"]

MISLEADING = 0.06
BLANK = 0.04
AMBIGUOUS = MISLEADING + BLANK


def _runaway(u: float, tokens: float) -> str:
    line = ("Wait, let me reconsider the previous step. ",
            "Hmm, actually, maybe I should double-check that again. ",
            "But what if the assumption is wrong? Let me redo it. ")[int(u * 3)]
    end = ("[reasoning budget exhausted after {:,.0f} tokens; no answer produced]",
           "[stopped: thinking exceeded the budget at {:,.0f} tokens]")[int(u * 2)]
    return "<think>\n" + line * (20 + int(u * 40)) + "\n</think>\n" + end.format(tokens)


def _looping(u: float, tokens: float) -> str:
    call = ("run_tests()", "read_file('setup.py')", "search('error message')")[int(u * 3)]
    return f"call: {call}\n" * (6 + int(u * 10)) + "[turn limit reached]"


_SIGNATURES = {
    "careless-submit": ("submit()  # submitted without running the tests",
                        "Submitting now; I'm confident, no need to run the checks.",
                        "Final answer submitted. (tests were not executed)"),
    "premature-finalization": (
        "The remaining steps are straightforward, so I'll stop here and finalize.",
        "Done with step 2 of 5. Finalizing now.",
        "Marking the task complete after partial work."),
    "tool-misuse": (
        "ToolError: invalid argument 'path' for tool read_file: expected str, got list",
        "ToolError: unknown parameter 'recursive' for tool list_dir",
        "ToolError: missing required argument 'url' for tool http_get"),
    "format-error": ("<answer>42</answr>\ngrader: could not parse the answer block",
                     "ANSWER: {\"result\": 42,\ngrader: malformed answer (invalid JSON)",
                     "grader: the final answer block is missing its closing tag"),
    "context-overflow": (
        "[context truncated: 131,072 tokens exceeded; earliest messages dropped]",
        "WARNING: context window full, conversation truncated",
        "[... 48 earlier messages removed to fit the context window ...]"),
}

_STEPS = ("$ ls -la", "read_file('README.md')", "Plan: inspect, change, check, submit.",
          "$ grep -rn TODO .", "Let me look at the inputs first.")


def signature(why: str, u: float, tokens: float) -> str:
    """The text by which failure mode ``why`` shows in a transcript (phrasing from ``u``).

    Examples
    --------
    >>> signature("careless-submit", 0.0, 5000)
    'submit()  # submitted without running the tests'
    >>> print(signature("looping", 0.0, 5000).splitlines()[-1])
    [turn limit reached]
    """
    if why == "thinking-runaway":
        return _runaway(u, tokens)
    if why == "looping":
        return _looping(u, tokens)
    variants = _SIGNATURES[why]
    return variants[int(u * len(variants))]


def render(content: str, pathology: str | None, beacons, u_ambiguous: float, u_variant: float,
           tokens: float) -> str:
    """A simulated transcript of one trial.

    Parameters
    ----------
    content : str
        The task statement (shown first, as the agent saw it).
    pathology : str or None
        The true failure mode, None for a passing trial.
    beacons : sequence of str
        Beacons that fired; the harness logs each.
    u_ambiguous, u_variant : float
        Uniform draws in [0, 1) deciding ambiguity and phrasing.
    tokens : float
        Tokens the trial spent (quoted by some signatures).

    Examples
    --------
    >>> print(render("Add two numbers", "careless-submit", ["verify-beacon"], 0.5, 0.0, 5000))
    task: Add two numbers
    $ ls -la
    Plan: inspect, change, check, submit.
    [harness] verify-beacon fired
    submit()  # submitted without running the tests
    grader: fail (expected output did not match)
    >>> render("Add two numbers", None, [], 0.5, 0.0, 5000).endswith("grader: pass")
    True
    """
    steps = _STEPS[int(u_variant * 5)] + "\n" + _STEPS[int(u_ambiguous * 5)]
    logs = "".join(f"[harness] {b} fired\n" for b in beacons)
    head = f"task: {content}\n{steps}\n{logs}"
    if pathology is None:
        return head + "$ run_tests\nall tests passed\nsubmit()\ngrader: pass"
    if u_ambiguous < MISLEADING:
        others = [w for w in WHYS if w != pathology]
        shown = signature(others[int(u_ambiguous / MISLEADING * len(others))], u_variant, tokens)
    elif u_ambiguous < AMBIGUOUS:
        shown = "submit()"
    else:
        shown = signature(pathology, u_variant, tokens)
    return head + shown + "\ngrader: fail (expected output did not match)"
