"""What the Claude evolver knows of Claude models: the default and the request rules.

Facts from Anthropic's published model pages (prices are in :mod:`gsme.prices`); a model
this module does not know gets the general rules (forced tool use, sampling parameters
accepted).
"""

from __future__ import annotations

import re

__all__ = ["API_TEMPERATURE", "DEFAULT_MODEL", "MODEL_ENV", "accepts_temperature", "tool_choice"]

MODEL_ENV = "GSME_EVOLVER_MODEL"
DEFAULT_MODEL = "claude-opus-4-8"
"""Fallback model when ``GSME_EVOLVER_MODEL`` is unset: the evolver model of the method's
paper. It accepts forced tool use with thinking off (its default)."""

API_TEMPERATURE = 1.0
"""The API's default temperature; sending nothing is the same."""

# Opus 4.7 and later and every generation-5 model refuse sampling parameters.
_NO_SAMPLING = re.compile(r"claude-(?:opus-4-[7-9]|[a-z]+-(?:[5-9]|\d{2,}))(?:-|$)")
# From generation 5 on, thinking is on by default (or always) and forced tool use is refused.
_UNFORCED = re.compile(r"claude-[a-z]+-(?:[5-9]|\d{2,})(?:-|$)")


def accepts_temperature(model: str) -> bool:
    """False for models that refuse any temperature but the default (Opus 4.7+, generation 5+).

    Examples
    --------
    >>> accepts_temperature("claude-sonnet-4-6"), accepts_temperature("claude-opus-4-8")
    (True, False)
    """
    return _NO_SAMPLING.match(model) is None


def tool_choice(model: str, tool: str) -> dict:
    """The request's ``tool_choice``: the named tool, forced, where the model allows it.

    Generation-5 models get ``auto``: the prompt asks for the tool and an answer without
    the call is invalid (and retried once like any invalid answer).

    Examples
    --------
    >>> tool_choice("claude-opus-4-8", "t"), tool_choice("claude-opus-5-5", "t")
    ({'type': 'tool', 'name': 't'}, {'type': 'auto'})
    """
    return {"type": "auto"} if _UNFORCED.match(model) else {"type": "tool", "name": tool}
