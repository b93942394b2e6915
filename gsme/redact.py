"""Keep credentials out of everything a run stores: one rule set, one redaction.

A :class:`Redactor` replaces each secret in a text with ``[REDACTED:NAME]``:

* the value of a variable that trials or gsme itself are given (an agent's
  :meth:`~gsme.agents.base.TaskAgent.secrets`, an evolver's API key), NAME being the
  variable's name; the value is also found as JSON writes it (escaped), URL-encoded, in hex
  and in base64 (standard and URL-safe, at each of the three alignments it can have inside
  a longer encoded text: the characters that depend on the value alone). A value shorter
  than :data:`MIN_SECRET_CHARS` is left alone: it would mangle ordinary text;
* a key-shaped string matched by a rule of :data:`KEY_RULES`, NAME being the kind of key.
  The match is redacted with the rest of its token (``[A-Za-z0-9_-]*``), so a key longer
  than its rule requires is never left half shown.

No rule matches a quote, or a backslash other than a whole ``\\n`` or ``\\r`` escape, so JSON
text stays JSON after redaction; ``[REDACTED:...]`` matches no rule, so redacting twice
changes nothing.

A text cut to a length is redacted before it is cut (:meth:`Redactor.cut`), so a cut never
leaves half a secret or half a key.

The config scan (:mod:`gsme.credentials`) and patch validation (:mod:`gsme.patches`) use
the same rules: :func:`key_kind` for a key-shaped value, :data:`CREDENTIAL_NAME` for a
name that looks like a credential.

Key rules
---------
Most are the shapes of the detect-secrets scanner's plugins (Yelp, 1.5.0), taken as plain
regexes rather than imported (importing its plugins costs 0.16 s and pulls in ``requests``);
``tests/test_redact.py`` checks each one against the installed scanner. Its rules that need
a keyword beside the value (AWS secret keys, Cloudant, IBM, SoftLayer, npm) or match
ordinary text (public IPs, Artifactory, Mailchimp, Telegram, Discord) are not taken: those
secrets are caught by name (:data:`CREDENTIAL_NAME`) in a config and by value when passed
to trials.

=================== ================================================= ===========================
kind                shape                                             source
=================== ================================================= ===========================
anthropic-key       ``sk-ant-`` and 6 or more token characters        gsme (not in detect-secrets)
openai-key          ``sk-...T3BlbkFJ...``                             OpenAIDetector
aws-access-key      ``AKIA``/``ASIA``/``ABIA``/``ACCA``/``A3T.`` +16  AWSKeyDetector (key ids)
azure-storage-key   ``AccountKey=`` and 88 base64 characters          AzureStorageKeyDetector
github-token        ``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_`` + 36 GitHubTokenDetector
github-token        ``github_pat_`` and 20 or more                    gsme (fine-grained tokens)
gitlab-token        ``glpat-``, ``glrt-``, ``GR1348941``, ...         GitLabTokenDetector
google-api-key      ``AIza`` and 35                                   gsme
hugging-face-token  ``hf_`` and 30 or more                            gsme
jwt                 ``eyJ...`` header.payload.signature               JwtTokenDetector (signature
                                                                      kept in the match)
pypi-token          ``pypi-AgEIcHlwaS5vcmc...``                       PypiTokenDetector
sendgrid-key        ``SG.`` + 22 + ``.`` + 43                         SendGridDetector
slack-token         ``xoxb-1-2-abc``, a hooks.slack URL               SlackDetector (lowercase)
square-secret       ``sq0csp-`` and 43                                SquareOAuthDetector (no
                                                                      backslash)
stripe-key          ``sk_live_``/``rk_live_`` and 24                  StripeDetector
twilio-key          ``AC``/``SK`` and 32 lowercase or digits          TwilioKeyDetector
private-key         a ``-----BEGIN ... PRIVATE KEY-----`` block       PrivateKeyDetector's headers
                    through its END line, a PuTTY key file's lines    (the body kept in the match)
url-password        the password of ``scheme://user:password@``       BasicAuthDetector (no quote
                                                                      or backslash)
=================== ================================================= ===========================
"""

from __future__ import annotations

import base64
import json
import os
import re
import urllib.parse
from collections.abc import Mapping

__all__ = ["CREDENTIAL_NAME", "KEY_RULES", "MIN_SECRET_CHARS", "Redactor", "key_kind",
           "passed_secrets", "redact", "secrets_of"]

MIN_SECRET_CHARS = 8
"""A secret value shorter than this is not redacted by value (only by its shape)."""

CREDENTIAL_NAME = re.compile(
    r"(api|access|secret|private|auth)[_-]?key|key$|secret|password|passwd|credential|"
    r"bearer|(^|_)token$|^auth$|authorization", re.IGNORECASE)
"""A name (config key, environment variable) that looks like it holds a credential."""

_TOKEN = "[A-Za-z0-9_-]"
_BODY = r"(?:[A-Za-z0-9+/=:,.\s]|\\[nr]|-(?!----))*"  # a key file's lines (JSON-escaped too)
_GITLAB = r"[A-Za-z0-9_\-]{"
KEY_RULES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    # kind, regex, literals one of which every match holds (they make the fast pre-check)
    ("anthropic-key", rf"sk-ant-{_TOKEN}{{6,}}", ("sk-ant-",)),
    ("openai-key", r"sk-[A-Za-z0-9-_]*[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}", ("T3BlbkFJ",)),
    ("aws-access-key", r"(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}",
     ("A3T", "ABIA", "ACCA", "AKIA", "ASIA")),
    ("azure-storage-key", r"AccountKey=[a-zA-Z0-9+\/=]{88}", ("AccountKey=",)),
    ("github-token", r"(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9_]{36}",
     ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    ("github-token", r"github_pat_[A-Za-z0-9_]{20,}", ("github_pat_",)),
    ("gitlab-token", rf"(glpat|gldt|glft|glsoat|glrt)-{_GITLAB}20,50}}(?!\w)",
     ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-")),
    ("gitlab-token", rf"GR1348941{_GITLAB}20,50}}(?!\w)", ("GR1348941",)),
    ("gitlab-token", rf"glcbt-([0-9a-fA-F]{{2}}_)?{_GITLAB}20,50}}(?!\w)", ("glcbt-",)),
    ("gitlab-token", rf"glimt-{_GITLAB}25}}(?!\w)", ("glimt-",)),
    ("gitlab-token", rf"glptt-{_GITLAB}40}}(?!\w)", ("glptt-",)),
    ("gitlab-token", rf"glagent-{_GITLAB}50,1024}}(?!\w)", ("glagent-",)),
    ("gitlab-token", rf"gloas-{_GITLAB}64}}(?!\w)", ("gloas-",)),
    ("google-api-key", r"AIza[0-9A-Za-z_-]{35}", ("AIza",)),
    ("hugging-face-token", r"hf_[A-Za-z0-9]{30,}", ("hf_",)),
    ("jwt", r"eyJ[A-Za-z0-9-_=]+\.[A-Za-z0-9-_=]+\.?[A-Za-z0-9-_.+/=]*", ("eyJ",)),
    ("pypi-token", r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9-_]{70,}", ("pypi-AgE",)),
    ("pypi-token", r"pypi-AgENdGVzdC5weXBpLm9yZw[A-Za-z0-9-_]{70,}", ("pypi-AgE",)),
    ("sendgrid-key", r"SG\.[a-zA-Z0-9_-]{22}\.[a-zA-Z0-9_-]{43}", ("SG.",)),
    ("slack-token", r"xox(?:a|b|p|o|s|r)-(?:\d+-)+[a-z0-9]+",
     ("xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-")),
    ("slack-token", (r"https://hooks\.slack\.com/services/T[a-zA-Z0-9_]+/B[a-zA-Z0-9_]+"
                     r"/[a-zA-Z0-9_]+"), ("slack.com/services/T",)),
    ("square-secret", r"sq0csp-[0-9A-Za-z\-_]{43}", ("sq0csp-",)),
    ("stripe-key", r"(?:r|s)k_live_[0-9a-zA-Z]{24}", ("k_live_",)),
    ("twilio-key", r"AC[a-z0-9]{32}", ("AC",)),
    ("twilio-key", r"SK[a-z0-9]{32}", ("SK",)),
    ("private-key", (rf"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----{_BODY}"
                     r"(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)?"), ("PRIVATE KEY",)),
    ("private-key", rf"PuTTY-User-Key-File-2{_BODY}", ("PuTTY-User-Key-File-2",)),
    ("url-password", r"://[^:/?#\[\]@!$&'()*+,;=\s\"\\]+:([^:/?#\[\]@!$&'()*+,;=\s\"\\]+)@",
     ("@",)),
)
"""``(kind, regex, literals)`` of every key shape redacted (see the module docstring)."""

_IN_CONTEXT = "url-password"  # the one rule whose match keeps its context: only group 1 goes
_TAILED = tuple((kind, re.compile(rule if kind == _IN_CONTEXT else f"{rule}{_TOKEN}*"))
                for kind, rule, _ in KEY_RULES)
_KEYS = re.compile("|".join(f"(?:{rx.pattern})" for _, rx in _TAILED))
_LITERALS = frozenset(lit for *_, literals in KEY_RULES for lit in literals)
_COMMON = (" \t\nabcdefghijklmnopqrstuvwxyz.,:;'\"()", "0123456789", "-", "_", "/",
           "ITASPWHBLCEDMONRF")
"""Tiers of characters, commonest first (any other character is rarer than all of them)."""
_MEMO_CHARS, _MEMO_SIZE = 64, 4096  # short texts (labels, beacons) recur: their results are kept
_PLACES = 8  # places of a pre-check character looked at one by one before a plain search


def key_kind(text: str) -> str | None:
    """The kind of the first key-shaped string in ``text`` (a :data:`KEY_RULES` kind), or None.

    Examples
    --------
    >>> key_kind("export KEY=sk-ant-" + "x" * 20), key_kind("sk-ant")
    ('anthropic-key', None)
    """
    found = _KEYS.search(text)
    return None if found is None else _rule_at(found)[0]


class Redactor:
    """Replaces ``secrets`` (variable name → value) and key-shaped strings in a text.

    Compiled once. A text is first searched for the literals every secret (in each of its
    written forms) or key holds, each anchored on its rarest character, so ordinary text
    is skipped at about a nanosecond a character; a text holding some is searched with
    those rules alone (``benchmarks/bench_redact.py``). Values are held in memory only: a
    redactor is never stored or shown.

    Examples
    --------
    >>> hide = Redactor({"MY_TOKEN": "hunter2-but-longer"})
    >>> hide("token=hunter2-but-longer key=sk-ant-abcdef123")
    'token=[REDACTED:MY_TOKEN] key=[REDACTED:anthropic-key]'
    >>> hide.value({"note": ["sk-ant-abcdef123", 3]})
    {'note': ['[REDACTED:anthropic-key]', 3]}
    """

    def __init__(self, secrets: Mapping[str, str] | None = None):
        names: dict[str, str] = {}
        for name, value in (secrets or {}).items():
            if isinstance(value, str) and len(value) >= MIN_SECRET_CHARS:
                for form in _written_forms(value):
                    names.setdefault(form, name)
        self._names = names
        self._finders = _finders(_LITERALS | set(names))
        self._patterns: dict[frozenset, tuple] = {}  # literals found -> what can match
        self._memo: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"Redactor({len(set(self._names.values()))} secret(s))"

    def __call__(self, text: str) -> str:
        """``text`` with every secret and key-shaped string replaced."""
        if len(text) > _MEMO_CHARS:
            return self._redacted(text)
        done = self._memo.get(text)
        if done is None:
            if len(self._memo) >= _MEMO_SIZE:
                self._memo.clear()
            done = self._memo[text] = self._redacted(text)
        return done

    def value(self, value):
        """``value`` with every string in it redacted (dicts, lists and tuples walked)."""
        if isinstance(value, str):
            return self(value)
        if isinstance(value, Mapping):
            return {key: self.value(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.value(item) for item in value]
        return value

    def cut(self, text: str, limit: int, *, keep: str = "start") -> str:
        """``text`` redacted, then cut to at most ``limit`` characters: its start (``keep=
        "start"``) or its end (``"end"``). Redacting first leaves nothing of a secret or a key
        at the cut; a cut through a ``[REDACTED:NAME]`` shows only part of that mark.

        Examples
        --------
        >>> key = "sk-ant-api03-" + "x" * 40
        >>> Redactor().cut("auth failed for " + key + " at login", 20, keep="end")
        'hropic-key] at login'
        """
        if keep not in ("start", "end"):
            raise ValueError(f"keep must be 'start' or 'end', got {keep!r}")
        text = self(text)
        if len(text) <= limit:
            return text
        return text[:limit] if keep == "start" else text[len(text) - limit:]

    def find(self, text: str) -> str | None:
        """The NAME redaction would write for the first secret or key in ``text`` (a
        variable's name or a key kind), or None when it holds none.

        Examples
        --------
        >>> import base64
        >>> hide = Redactor({"DB_PASSWORD": "hunter2-but-longer"})
        >>> hide.find(base64.b64encode(b"hunter2-but-longer").decode()), hide.find("hunter2")
        ('DB_PASSWORD', None)
        """
        found = next(_leftmost(self._patterns_for(text), text), None)
        if found is None:
            return None
        return self._names.get(found.group()) or _rule_at(found)[0]

    def _redacted(self, text: str) -> str:
        pieces, done = [], 0
        for found in _leftmost(self._patterns_for(text), text):
            pieces += [text[done:found.start()], self._replace(found)]
            done = found.end()
        return "".join([*pieces, text[done:]]) if pieces else text

    def _patterns_for(self, text: str) -> tuple[re.Pattern, ...]:
        """The patterns of what can match in ``text`` (none: nothing can), from the literals
        the pre-check finds in it."""
        found: set[str] = set()
        for char, finder, literals in self._finders:
            if char not in text or (first := finder.search(text)) is None:
                continue
            left = list(literals)
            for count, place in enumerate(finder.finditer(text, first.start())):
                if count == _PLACES:  # a common literal: look for the others at once
                    found.update(literal for literal, _ in left if literal in text)
                    break
                where = place.start()  # the literals found around this character
                seen = [(lit, at) for lit, at in left
                        if where >= at and text.startswith(lit, where - at)]
                found.update(literal for literal, _ in seen)
                left = [pair for pair in left if pair not in seen]
                if not left:
                    break
        if not found:
            return ()
        key = frozenset(found)
        patterns = self._patterns.get(key)
        if patterns is None:
            if len(self._patterns) >= _MEMO_SIZE:
                self._patterns.clear()
            patterns = self._patterns[key] = self._patterns_of(key)
        return patterns

    def _patterns_of(self, found: frozenset) -> tuple[re.Pattern, ...]:
        """The secrets and key rules that can match in a text holding the literals
        ``found`` (a rule none of whose literals is in a text matches nowhere in it), in the
        order of the whole set: values (longest first), then :data:`KEY_RULES`."""
        values = sorted((form for form in self._names if form in found), key=len, reverse=True)
        rules = [rx for (_, rx), (*_, literals) in zip(_TAILED, KEY_RULES)
                 if found.intersection(literals)]
        return (re.compile("|".join(map(re.escape, values))),) * bool(values) + tuple(rules)

    def _replace(self, found: re.Match) -> str:
        name = self._names.get(found.group())
        if name is not None:
            return f"[REDACTED:{name}]"
        kind, rule = _rule_at(found)
        if kind != _IN_CONTEXT:
            return f"[REDACTED:{kind}]"
        start, end = (i - found.start() for i in rule.span(1))
        return f"{found.group()[:start]}[REDACTED:{kind}]{found.group()[end:]}"


def redact(text: str, secrets: Mapping[str, str] | None = None) -> str:
    """``text`` with ``secrets`` (name → value) and key-shaped strings replaced.

    For one text; to redact many with the same secrets, make one :class:`Redactor`.

    Examples
    --------
    >>> redact("Authorization: Bearer sk-ant-api03-abcdefgh")
    'Authorization: Bearer [REDACTED:anthropic-key]'
    """
    return (Redactor(secrets) if secrets else _PATTERNS_ONLY)(text)


def passed_secrets(pass_env, env: Mapping[str, str]) -> dict[str, str]:
    """The secrets of a process started with variables copied from this one (``pass_env``,
    names) and given values (``env``): those copied, as set now, and the values given under
    a name that looks like a credential (:data:`CREDENTIAL_NAME`).

    See Also
    --------
    Redactor : Replaces these values in what a run stores.

    Examples
    --------
    >>> import os
    >>> os.environ["GSME_DEMO_TOKEN"] = "tok-1234567890abcdef"
    >>> passed_secrets(["GSME_DEMO_TOKEN", "GSME_UNSET_VARIABLE"],
    ...                {"API_KEY": "k-0987654321fedcba", "LANG": "C"})
    {'API_KEY': 'k-0987654321fedcba', 'GSME_DEMO_TOKEN': 'tok-1234567890abcdef'}
    >>> del os.environ["GSME_DEMO_TOKEN"]
    """
    given = {name: value for name, value in env.items() if CREDENTIAL_NAME.search(name)}
    return {**given, **{name: os.environ[name] for name in pass_env if name in os.environ}}


def secrets_of(*holders) -> dict[str, str]:
    """The secrets (variable name → value) the agents and evolvers given hold, read now.

    Each holder's ``secrets()`` (:meth:`~gsme.agents.base.TaskAgent.secrets`,
    :meth:`~gsme.evolvers.base.Evolver.secrets`); None and objects without one hold none.

    See Also
    --------
    Redactor : Replaces these values in what a run stores.

    Examples
    --------
    >>> class Agent:
    ...     def secrets(self):
    ...         return {"MY_API_KEY": "abcdefghijklmnop"}
    >>> secrets_of(Agent(), None, object())
    {'MY_API_KEY': 'abcdefghijklmnop'}
    >>> redact("key=abcdefghijklmnop", secrets_of(Agent()))
    'key=[REDACTED:MY_API_KEY]'
    """
    found: dict[str, str] = {}
    for holder in holders:
        found.update(getattr(holder, "secrets", dict)())
    return found


def _leftmost(patterns: tuple[re.Pattern, ...], text: str):
    """The matches of ``patterns`` in ``text`` as one alternation of them finds them, from
    the left without overlap, the first pattern that matches at a place taking it. Each
    pattern is searched on its own: one that starts with a literal is found at the speed of
    a string search, which an alternation of several loses."""
    ahead = [pattern.search(text) for pattern in patterns]
    while True:
        first = None
        for found in ahead:
            if found is not None and (first is None or found.start() < first.start()):
                first = found
        if first is None:
            return
        yield first
        end = first.end()
        ahead = [found if found is None or found.start() >= end else pattern.search(text, end)
                 for pattern, found in zip(patterns, ahead)]


def _rule_at(found: re.Match) -> tuple[str, re.Match]:
    """The kind and own match of the key rule that made ``found`` (the first that matches
    where it starts: the combined pattern tries the rules in the same order)."""
    return next((kind, match) for kind, rule in _TAILED
                if (match := rule.match(found.string, found.start())) is not None)


def _finders(literals) -> tuple[tuple[str, re.Pattern, tuple[tuple[str, int], ...]], ...]:
    """``(character, regex, literals)`` triples finding ``literals``, each from its rarest
    character; ``literals`` are ``(literal, index of that character in it)`` pairs.

    Finding a character is fast (``char in text``) and so is a regex that starts with one;
    a text without any of the few characters literals start from is skipped at once. Of
    equally rare characters, one already searched for is taken (key rules' literals are
    placed first), so a secret's many encoded forms add few searches. The regex matches the
    character alone where one of its literals is found around it (the rest is looked at,
    not taken), so it finds every place of every literal.
    """
    by_char: dict[str, list[tuple[str, int]]] = {}
    for literal in sorted(set(literals), key=lambda lit: (lit not in _LITERALS, lit)):
        at = max(range(len(literal)),  # a character already searched for, if equally rare
                 key=lambda i: (_rarity(literal[i]), literal[i] in by_char, -i))
        by_char.setdefault(literal[at], []).append((literal, at))
    return tuple((char, re.compile(re.escape(char) + _guard(found) + "(?=" + "|".join(
        (f"(?<={re.escape(lit[:at + 1])})" if at else "") + re.escape(lit[at + 1:])
        for lit, at in found) + ")"), tuple(found)) for char, found in sorted(by_char.items()))


def _guard(found: list[tuple[str, int]]) -> str:
    """A one-character look behind the pivot that rejects most places at once (empty when a
    literal starts with its pivot)."""
    if not all(at for _, at in found):
        return ""
    before = "".join(sorted({re.escape(lit[at - 1]) for lit, at in found}))
    return f"(?<=[{before}].)"


def _rarity(char: str) -> int:
    """0 for the commonest characters of text, more for rarer ones (capitals: the most)."""
    return next((i for i, tier in enumerate(_COMMON) if char in tier), len(_COMMON))


def _written_forms(value: str) -> set[str]:
    """``value`` as written in text and in JSON text (escaped, ``/`` escaped or not), and
    encoded: URL-encoded (``%XX`` in either case, ``+`` for a space or not), hex (either
    case) and base64 (standard and URL-safe) at each of the three byte alignments, where
    only the characters that depend on the value alone are kept.

    Examples
    --------
    >>> sorted(f for f in _written_forms("ab/cd:ef") if f.isalnum())  # hex, then base64
    ['61622F63643A6566', '61622f63643a6566', 'FiL2NkOmVm', 'YWIvY2Q6ZW', 'hYi9jZDplZ']
    """
    escaped = json.dumps(value)[1:-1]
    raw = value.encode("utf-8")
    urls = {urllib.parse.quote(value, safe=""), urllib.parse.quote(value),
            urllib.parse.quote_plus(value, safe="")}
    encoded = {*urls, *(re.sub("%[0-9A-F]{2}", lambda m: m.group().lower(), u) for u in urls),
               raw.hex(), raw.hex().upper()}
    for skip in range(3):  # the value after `skip` bytes of a longer encoded text
        first, end = -(-8 * skip // 6), 8 * (skip + len(raw)) // 6
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            encoded.add(encode(bytes(skip) + raw).decode("ascii")[first:end])
    return {value, escaped, escaped.replace("/", "\\/"),
            json.dumps(value, ensure_ascii=False)[1:-1],
            *encoded, *(form.replace("/", "\\/") for form in encoded)}


_PATTERNS_ONLY = Redactor()
