"""Keep credentials out of configs, specs and run directories.

Specs and settings are stored in a run's ledger, so a credential in them would be stored in
plain text. :func:`refuse_credentials` scans every nested key and string value: a key named
like a credential (``api_key``, ``secret``, ``password``, ``token``, ...) or a value shaped
like a key (``sk-ant-...``, ``ghp_...``, ``AKIA...``, a private key block) is refused with
a :class:`~gsme.settings.ConfigError` that names where it is, never what it is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from gsme.settings import ConfigError

__all__ = ["refuse_credentials"]

_NAME = re.compile(r"(api|access|secret|private|auth)[_-]?key|secret|password|passwd|"
                   r"credential|bearer|(^|_)token$|^auth$|authorization", re.IGNORECASE)
_VALUE = re.compile(
    r"sk-(ant-)?[A-Za-z0-9_-]{16,}"          # Anthropic, OpenAI
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
    r"|AKIA[0-9A-Z]{16}|ASIA[0-9A-Z]{16}"     # AWS access keys
    r"|AIza[0-9A-Za-z_-]{35}"                 # Google
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"         # Slack
    r"|hf_[A-Za-z0-9]{30,}"                   # Hugging Face
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----"
)


def refuse_credentials(value, where: str) -> None:
    """Raise :class:`ConfigError` if ``value`` (a spec, nested freely) holds a credential.

    ``where`` names the value in the message, e.g. ``"[agent]"``.

    Examples
    --------
    >>> refuse_credentials({"kind": "command", "env": {"MODE": "fast"}}, "[agent]")
    >>> refuse_credentials({"env": {"ANTHROPIC_API_KEY": "x"}}, "[agent]")
    Traceback (most recent call last):
    ...
    gsme.settings.ConfigError: [agent] env.ANTHROPIC_API_KEY: credentials never go in a config or a run's ledger; set them in the environment and name them in pass_env
    """
    found = _find(value, "")
    if found is not None:
        raise ConfigError(f"{where} {found}: credentials never go in a config or a run's "
                          "ledger; set them in the environment and name them in pass_env")


def _find(value, path: str) -> str | None:
    if isinstance(value, Mapping):
        for key, item in value.items():
            here = f"{path}.{key}" if path else str(key)
            if _NAME.search(str(key)) and item not in (None, "", False):
                return here
            found = _find(item, here)
            if found is not None:
                return found
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            found = _find(item, f"{path}[{i}]")
            if found is not None:
                return found
    elif isinstance(value, str) and _VALUE.search(value):
        return f"{path or 'value'} holds a key-shaped string"
    return None
