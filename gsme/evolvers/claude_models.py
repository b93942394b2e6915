"""What the Claude evolver knows of Claude models: default, prices, request rules.

Facts from Anthropic's published model pages and price list; a model this module does not
know gets the general rules (forced tool use, sampling parameters accepted) and a cost of
NaN, never a guessed price.
"""

from __future__ import annotations

import math
import re

MODEL_ENV = "GSME_EVOLVER_MODEL"
DEFAULT_MODEL = "claude-opus-4-8"
"""Fallback model when ``GSME_EVOLVER_MODEL`` is unset: the evolver model of the method's
paper. It accepts forced tool use with thinking off (its default)."""

API_TEMPERATURE = 1.0
"""The API's default temperature; sending nothing is the same."""

PRICES = {
    # model: USD per million tokens (input, output, 5-minute cache write, cache read)
    "claude-opus-5-5": (4.00, 20.00, 5.00, 0.20),
    "claude-opus-5": (5.00, 25.00, 6.25, 0.50),
    "claude-opus-4-8": (5.00, 25.00, 6.25, 0.50),
    "claude-opus-4-7": (5.00, 25.00, 6.25, 0.50),
    "claude-opus-4-6": (5.00, 25.00, 6.25, 0.50),
    "claude-opus-4-5": (5.00, 25.00, 6.25, 0.50),
    "claude-opus-4-1": (15.00, 75.00, 18.75, 1.50),
    "claude-sonnet-4-6": (3.00, 15.00, 3.75, 0.30),
    "claude-sonnet-4-5": (3.00, 15.00, 3.75, 0.30),
    "claude-haiku-4-5": (1.00, 5.00, 1.25, 0.10),
}
"""Price table of :func:`call_cost`; a model not listed costs NaN (unknown), never 0."""

# Opus 4.7 and later and every generation-5 model refuse sampling parameters.
_NO_SAMPLING = re.compile(r"claude-(?:opus-4-[7-9]|[a-z]+-(?:[5-9]|\d{2,}))(?:-|$)")
# From generation 5 on, thinking is on by default (or always) and forced tool use is refused.
_UNFORCED = re.compile(r"claude-[a-z]+-(?:[5-9]|\d{2,})(?:-|$)")
_DATE_SUFFIX = re.compile(r"-\d{8}$")


def call_cost(model: str, input_tokens: int, output_tokens: int,
              cache_creation_input_tokens: int = 0, cache_read_input_tokens: int = 0) -> float:
    """USD cost of one call from :data:`PRICES` (a dated model id uses its base id's price).

    Cache writes are priced at the 5-minute rate, the only cache the evolver asks for.
    Returns NaN for a model the table does not list.

    Examples
    --------
    >>> call_cost("claude-opus-4-8", 1_000_000, 100_000, 0, 2_000_000)
    8.5
    """
    price = PRICES.get(_DATE_SUFFIX.sub("", model))
    if price is None:
        return math.nan
    counts = (input_tokens, output_tokens, cache_creation_input_tokens, cache_read_input_tokens)
    return sum(c * p for c, p in zip(counts, price, strict=True)) / 1e6


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
