"""Keep credentials out of configs, specs and run directories.

Specs and settings are stored in a run's ledger, so a credential in them would be stored in
plain text. :func:`refuse_credentials` scans every nested key and string value: a key named
like a credential (``api_key``, ``OPENAI_KEY``, ``secret``, ``password``, ``token``, ...:
:data:`gsme.redact.CREDENTIAL_NAME`) holding a value, or a value shaped like a key
(``sk-ant-...``, ``ghp_...``, ``AKIA...``, a private key block: :data:`gsme.redact.KEY_RULES`)
is refused with a :class:`~gsme.settings.ConfigError` that names where it is, never what it
is. The rules are those that redact what a run stores (:mod:`gsme.redact`).
"""

from __future__ import annotations

from collections.abc import Mapping

from gsme.redact import CREDENTIAL_NAME, key_kind
from gsme.settings import ConfigError

__all__ = ["refuse_credentials"]


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
            if CREDENTIAL_NAME.search(str(key)) and item not in (None, "", False):
                return here
            found = _find(item, here)
            if found is not None:
                return found
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            found = _find(item, f"{path}[{i}]")
            if found is not None:
                return found
    elif isinstance(value, str) and key_kind(value) is not None:
        return f"{path or 'value'} holds a key-shaped string"
    return None
