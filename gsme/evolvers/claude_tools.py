"""The Claude evolver's two tools and a small validator of what the model sends through them.

The JSON schemas below are both what the API is given (``input_schema``) and what every
answer is checked against, item by item, by :func:`check`: one source of truth. The
validator covers exactly the subset of JSON Schema the two schemas use (``type`` with
null unions, ``properties``, ``required``, ``additionalProperties: false``, ``items``,
``enum``, ``minimum``, ``maximum``, ``minLength``).
"""

from __future__ import annotations

from gsme.schema import LEVERS

DIAGNOSE_TOOL = "report_diagnoses"
PROPOSE_TOOL = "propose_patches"

_TEXT = {"type": "string", "minLength": 1}
_NEW_LABEL = {
    "type": "object",
    "description": "Only for a why that is not in the vocabulary: the new label (equal "
                   "to why) and a one-sentence definition.",
    "properties": {"label": _TEXT, "definition": _TEXT},
    "required": ["label", "definition"],
    "additionalProperties": False,
}

DIAGNOSIS_ITEM = {
    "type": "object",
    "properties": {
        "task_id": {"type": "string", "minLength": 1,
                    "description": "task_id of the failure, as shown"},
        "k": {"type": "integer", "minimum": 0, "description": "repeat index, as shown"},
        "where": {"type": "string", "enum": list(LEVERS)},
        "why": {"type": "string", "minLength": 1, "description": "a vocabulary label"},
        "evidence": {"type": "string", "minLength": 1,
                     "description": "a short verbatim excerpt of this failure's transcript"},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "new_label": _NEW_LABEL,
    },
    "required": ["task_id", "k", "where", "why", "evidence", "confidence"],
    "additionalProperties": False,
}

CHANGE_ITEM = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "minLength": 1,
                 "description": "relative to the harness root, inside the where lever"},
        "old": {"type": ["string", "null"],
                "description": "exact text occurring once in the file, or null to write "
                               "the whole file"},
        "new": {"type": "string"},
    },
    "required": ["path", "old", "new"],
    "additionalProperties": False,
}

PATCH_ITEM = {
    "type": "object",
    "properties": {
        "where": {"type": "string", "enum": list(LEVERS)},
        "why": {"type": "string", "minLength": 1, "description": "a vocabulary label"},
        "mechanism": {"type": "string", "minLength": 1,
                      "description": "a short name for what the patch does"},
        "env_gate": {"type": "string", "description": "predicate over task features; "
                                                      "empty for every task"},
        "beacon": {"type": "string", "minLength": 1,
                   "description": "lowercase slug that appears verbatim in the added text"},
        "rationale": {"type": "string", "minLength": 1},
        "predicted_tasks": {"type": "array", "items": {"type": "string", "minLength": 1}},
        "changes": {"type": "array", "items": CHANGE_ITEM},
        "new_label": _NEW_LABEL,
    },
    "required": ["where", "why", "mechanism", "env_gate", "beacon", "rationale",
                 "predicted_tasks", "changes"],
    "additionalProperties": False,
}

_PAYLOAD_KEY = {DIAGNOSE_TOOL: "diagnoses", PROPOSE_TOOL: "patches"}
ITEM_SCHEMAS = {DIAGNOSE_TOOL: DIAGNOSIS_ITEM, PROPOSE_TOOL: PATCH_ITEM}

TOOLS = [
    {
        "name": DIAGNOSE_TOOL,
        "description": "Report one diagnosis (where, why, verbatim evidence, confidence) per "
                       "failing trajectory you can explain.",
        "input_schema": {
            "type": "object",
            "properties": {"diagnoses": {"type": "array", "items": DIAGNOSIS_ITEM}},
            "required": ["diagnoses"],
            "additionalProperties": False,
        },
    },
    {
        "name": PROPOSE_TOOL,
        "description": "Propose env-gated patches to the current harness, each aimed at one "
                       "(where, why) cell and declaring its activation beacon.",
        "input_schema": {
            "type": "object",
            "properties": {"patches": {"type": "array", "items": PATCH_ITEM}},
            "required": ["patches"],
            "additionalProperties": False,
        },
    },
]
"""Both tools go into every request, in this order, so the cached prefix is shared."""


def payload_items(tool: str, payload) -> list:
    """The list of items of a tool's input.

    Raises
    ------
    ValueError
        ``payload`` is not an object holding exactly the tool's list key.
    """
    key = _PAYLOAD_KEY[tool]
    if not isinstance(payload, dict) or set(payload) != {key} or not isinstance(
        payload[key], list
    ):
        shown = sorted(payload) if isinstance(payload, dict) else type(payload).__name__
        raise ValueError(f"{tool} input must be an object with one key {key!r} holding a "
                         f"list; got {shown}")
    return payload[key]


def check(value, schema: dict, label: str) -> list[str]:
    """Every way ``value`` breaks ``schema``, each message led by the field's ``label``.

    Examples
    --------
    >>> check({"path": "prompt/a.md", "new": 3}, CHANGE_ITEM, "changes[0]")
    ["changes[0]: missing field 'old'", 'changes[0].new: expected string, got 3']
    """
    kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    if not any(_is(value, kind) for kind in kinds):
        return [f"{label}: expected {' or '.join(kinds)}, got {_short(value)}"]
    if value is None:
        return []
    errors = []
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{label}: {_short(value)} is not one of {schema['enum']}")
    if "minLength" in schema and len(value.strip()) < schema["minLength"]:
        errors.append(f"{label}: must not be empty")
    if "minimum" in schema and value < schema["minimum"]:
        errors.append(f"{label}: {value} is below the minimum {schema['minimum']}")
    if "maximum" in schema and value > schema["maximum"]:
        errors.append(f"{label}: {value} is above the maximum {schema['maximum']}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        errors += [f"{label}: missing field {name!r}" for name in schema.get("required", [])
                   if name not in value]
        if schema.get("additionalProperties") is False:
            errors += [f"{label}: unknown field {name!r}; allowed: {sorted(props)}"
                       for name in value if name not in props]
        for name, sub in props.items():
            if name in value:
                errors += check(value[name], sub, f"{label}.{name}")
    if isinstance(value, list):
        for index, item in enumerate(value):
            errors += check(item, schema["items"], f"{label}[{index}]")
    return errors


def _is(value, kind: str) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool) \
            and value == value  # NaN is not a JSON number
    return isinstance(value, {"string": str, "object": dict, "array": list,
                              "null": type(None), "boolean": bool}[kind])


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
