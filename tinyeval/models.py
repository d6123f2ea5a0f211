"""Model adapters: one spec string picks the function that sends a prompt to a model.

``resolve(spec)`` returns a :class:`Model`, a callable
``model(prompt, *, sample=0, json_schema=None) -> Reply``. A :class:`Reply` is
a ``str`` (so any code that wants text can use it as text) that also carries
the token usage, the model name the server reported, whether it came from the
cache, and the latency.

======================  ==================================================
spec                    what it calls
======================  ==================================================
``builtin``             the offline baseline judge (no network, no key)
``openai:MODEL``        any OpenAI-compatible ``POST {base}/chat/completions``
``anthropic:MODEL``     the Anthropic Messages API ``POST {base}/v1/messages``
``cmd:COMMAND``         a command: the prompt on stdin, the reply on stdout
``py:MODULE:FUNCTION``  a Python function ``prompt -> str`` (async allowed)
======================  ==================================================

HTTP calls use :mod:`urllib.request` only. Keys come from the environment
(``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``) and never appear in a spec, a
reply, a cache row or an error message: every message is passed through
:func:`scrub` before it is raised, and so is the text of every reply (a server
that echoes the request's headers back cannot put a key into a result).

Bounds: ``timeout`` bounds each whole HTTP attempt (connecting, the headers
and the body), however slowly a server sends; a reply body over
``max_response_bytes`` (default 8 MiB) is refused before more of it is read;
a reply that is not valid text (not UTF-8, or a lone surrogate) is a
:class:`ModelCallError`. Keys are stripped of surrounding whitespace, a key
with a control character inside is refused, and :func:`scrub` removes a key in
every escaped form (raw, ``repr``, JSON, percent-encoded).

Retries: on HTTP 408, 409, 425, 429, any 5xx, connection errors and timeouts
the call is retried up to ``retries`` times with exponential backoff and full
jitter (a random wait between 0 and 1, 2, 4, 8 … seconds, at most 30), or
exactly the server's ``Retry-After`` when it sends one (capped at 60 s). Other
4xx answers are not retried: asking again would get the same answer. A 429
that says the account's quota or spend limit is used up is not retried either.
"""

from __future__ import annotations

import abc
import contextlib
import functools
import importlib
import json
import math
import os
import re
import sys
import time
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from ._http import (
    BACKOFF_BASE,  # noqa: F401 - re-exported: moved to transport.py
    BACKOFF_CAP,  # noqa: F401 - re-exported: moved to transport.py
    MAX_RESPONSE_BYTES,
    RETRY_AFTER_CAP,
    RETRYABLE_STATUSES,
    _backoff_delay,
    _Failure,
    _host_port,
    _public_url,
    _quota_exhausted,
    _read_body,
    _read_quietly,
    _TooLarge,
    _Watchdog,
    parse_retry_after,
)
from .calls import ChatPrompt, Reply, accepted_keywords, ask
from .errors import InputError, TinyevalError

__all__ = [
    "ANTHROPIC_DEFAULT_BASE",
    "OPENAI_DEFAULT_BASE",
    "Model",
    "ModelCallError",
    "ModelConfigError",
    "as_model",
    "parse_retry_after",
    "resolve",
    "scrub",
    "secret_values",
]

OPENAI_DEFAULT_BASE = "https://api.openai.com/v1"
ANTHROPIC_DEFAULT_BASE = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
ANTHROPIC_DEFAULT_MAX_TOKENS = 1024  # the Messages API requires max_tokens
SCHEMES = ("builtin", "openai", "anthropic", "cmd", "py")
# short names for functions of this package, resolved through the py: door like any other;
# the leading dot makes the import relative to the package, so a vendored copy finds its own
BUILTINS = {"builtin": ".judges.builtin:builtin_judge"}
SPEC_FORMS = "builtin, openai:MODEL, anthropic:MODEL, cmd:COMMAND or py:MODULE:FUNCTION"

# environment variables whose values are treated as secrets by scrub()
_SECRET_NAME_ENDINGS = ("KEY", "TOKEN", "SECRET", "PASSWORD")
_MIN_SECRET_LENGTH = 8

Sleep = Callable[[float], None]


class ModelConfigError(InputError):
    """A model spec or setting that cannot work: unknown scheme, missing key, bad option.

    >>> resolve("gpt-4o-mini")
    Traceback (most recent call last):
    ...
    tinyeval.models.ModelConfigError: unknown model spec 'gpt-4o-mini': expected builtin, \
openai:MODEL, anthropic:MODEL, cmd:COMMAND or py:MODULE:FUNCTION; for an OpenAI-compatible \
model write openai:gpt-4o-mini
    """


class ModelCallError(TinyevalError, RuntimeError):
    """A model call that failed, after the retries it was allowed.

    The message names the spec, what went wrong (HTTP status and the server's
    own short message, a timeout, an unreachable host, an exit code) and how
    many attempts were made. It never contains a key or a request header.

    >>> model = resolve("cmd:false")
    >>> model("hello")
    Traceback (most recent call last):
    ...
    tinyeval.models.ModelCallError: cmd:false: the command exited with code 1
    """


class Model(abc.ABC):
    """A callable model: ``model(prompt, *, sample=0, json_schema=None) -> Reply``.

    Built by :func:`resolve` (from a spec) or :func:`as_model` (from any
    function). Attributes: ``spec`` (never contains a key), ``temperature``
    (None means the server's default), ``settings`` (the other non-secret
    settings that change replies, such as the base URL and ``max_tokens``;
    the cache keys on them) and ``supports_json_schema`` (whether a
    ``json_schema`` passed to a call is enforced; adapters that cannot
    enforce one ignore it, so the prompt must still ask for the format).

    ``sample`` numbers the independent samples of one prompt (votes): the
    cache keys on it, the OpenAI adapter sends it as ``seed`` and commands see
    it as ``TINYEVAL_SAMPLE``. At temperature 0 distinct samples are usually
    identical; use a temperature above 0 when votes should differ.

    >>> model = as_model(lambda prompt: prompt.upper(), spec="py:demo:upper")
    >>> model("pass"), model.spec
    (Reply('PASS', usage=None, model=None, cached=False), 'py:demo:upper')
    """

    supports_json_schema: bool = False

    def __init__(
        self,
        spec: str,
        *,
        temperature: float | None = 0.0,
        settings: Mapping[str, Any] | None = None,
    ) -> None:
        self.spec = spec
        self.temperature = temperature
        self.settings: dict[str, Any] = dict(settings or {})

    def __call__(
        self, prompt: str, *, sample: int = 0, json_schema: Mapping[str, Any] | None = None
    ) -> Reply:
        """Send ``prompt`` and return the reply (see the class docstring)."""
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a str, got {type(prompt).__name__}")
        if isinstance(sample, bool) or not isinstance(sample, int) or sample < 0:
            raise ModelConfigError(f"sample must be an integer >= 0, got {sample!r}")
        start = time.perf_counter()
        reply = _scrub_reply(self._call(prompt, sample, json_schema), self._secrets())
        if reply.latency_ms is None:
            reply.latency_ms = round((time.perf_counter() - start) * 1000.0, 3)
        return reply

    def _secrets(self) -> list[str]:
        """Secrets this model holds besides the environment's (an HTTP adapter's key)."""
        return []

    @abc.abstractmethod
    def _call(self, prompt: str, sample: int, json_schema: Mapping[str, Any] | None) -> Reply:
        """One call to the model (each adapter defines it)."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec!r} temperature={self.temperature!r}>"


# ---------------------------------------------------------------------------
# secrets


_ENVIRONMENT_SECRETS: list[Any] = [None, ()]  # the last environment seen, and its secrets


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of environment variables named like secrets (``*KEY``, ``*TOKEN`` …).

    Values shorter than 8 characters are ignored (too likely to occur in
    ordinary text). Longest first, so overlapping secrets are removed whole.

    >>> secret_values({"OPENAI_API_KEY": "sk-test-SECRET123", "HOME": "/home/me"})
    ['sk-test-SECRET123']
    """
    if environ is None:
        # The environment rarely changes during a run, and every reply is scrubbed: remember
        # the answer for the environment as it is (its raw entries compared, nothing decoded).
        raw = getattr(os.environ, "_data", None)
        snapshot = tuple(raw.items()) if isinstance(raw, dict) else None
        if snapshot is not None and snapshot == _ENVIRONMENT_SECRETS[0]:
            return list(_ENVIRONMENT_SECRETS[1])
        found = secret_values(dict(os.environ))
        if snapshot is not None:
            _ENVIRONMENT_SECRETS[:] = [snapshot, tuple(found)]
        return found
    env = environ
    values = set()
    for name, value in env.items():
        if not name.upper().endswith(_SECRET_NAME_ENDINGS):
            continue
        for form in (value, value.strip()):  # a key read from a file often ends in a newline
            if len(form) >= _MIN_SECRET_LENGTH:
                values.add(form)
    return sorted(values, key=len, reverse=True)


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """Remove every secret from ``text``: the ones given and those in the environment.

    Each secret is removed in every form it can take in an error message or an
    echoed request: as it is, without surrounding whitespace, and escaped as
    ``repr`` escapes it, as JSON escapes it and percent-encoded.

    >>> scrub("bad key sk-test-SECRET123", ["sk-test-SECRET123"])
    'bad key ***'
    >>> scrub("Invalid header value b'Bearer sk-test-SECRET123\\\\n'", ["sk-test-SECRET123\\n"])
    "Invalid header value b'Bearer ***'"
    """
    candidates = frozenset({s for s in secrets if s} | set(secret_values()))
    for form in _forms_longest_first(candidates):  # longest first: no half-removed key
        if form in text:
            text = text.replace(form, "***")
    return text


@functools.lru_cache(maxsize=32)
def _forms_longest_first(secrets: frozenset[str]) -> tuple[str, ...]:
    """Every escaped form of these secrets, longest first (computed once per set of secrets:
    a run scrubs every reply with the same few)."""
    forms: set[str] = set()
    for secret in secrets:
        forms.update(_escaped_forms(secret))
    return tuple(sorted(forms, key=len, reverse=True))


def _escaped_forms(secret: str) -> set[str]:
    """A secret as it may appear in text: raw, stripped, repr-, JSON- and percent-escaped."""
    forms = set()
    for value in {secret, secret.strip()}:
        if not value:
            continue
        forms.update(
            {
                value,
                repr(value)[1:-1],
                json.dumps(value)[1:-1],
                json.dumps(value, ensure_ascii=False)[1:-1],
                urllib.parse.quote(value, safe=""),
                urllib.parse.quote_plus(value, safe=""),
                urllib.parse.quote(value),
            }
        )
        with contextlib.suppress(UnicodeEncodeError):
            forms.add(repr(value.encode("utf-8"))[2:-1])
    return forms


def _scrub_reply(reply: Reply, secrets: Iterable[str] = ()) -> Reply:
    """``reply`` with every secret removed from its text and reported model name.

    A reply that holds no secret is returned as it is; otherwise a new
    :class:`Reply` keeps the usage, cache flag and latency of the old one.

    >>> echo = Reply("you sent Bearer sk-test-SECRET123", usage={"input_tokens": 3,
    ...              "output_tokens": 4})
    >>> clean = _scrub_reply(echo, ["sk-test-SECRET123"])
    >>> str(clean), clean.usage["output_tokens"]
    ('you sent Bearer ***', 4)
    >>> plain = Reply("PASS")
    >>> _scrub_reply(plain, ["sk-test-SECRET123"]) is plain
    True
    """
    secrets = list(secrets)
    _refuse_invalid_text(str(reply), "the reply")
    text = scrub(str(reply), secrets)
    model = getattr(reply, "model", None)
    if isinstance(model, str):
        _refuse_invalid_text(model, "the reported model name")
    reported = scrub(model, secrets) if isinstance(model, str) else model
    if text == str(reply) and reported == model and isinstance(reply, Reply):
        return reply
    return Reply(
        text,
        usage=getattr(reply, "usage", None),
        model=reported,
        cached=bool(getattr(reply, "cached", False)),
        latency_ms=getattr(reply, "latency_ms", None),
    )


def _key_from_environment(variable: str) -> str | None:
    """An API key from the environment, without surrounding whitespace; None when unset.

    A key read from a file often ends in a newline (``\\n``, or ``\\r\\n`` from a
    Windows ``.env``): that is stripped. A control character or a non-ASCII
    character inside the key cannot be sent in a header and is refused, with a
    message that never shows the key.

    >>> os.environ["TINYEVAL_DOCTEST_KEY"] = "sk-test-SECRET123\\r\\n"
    >>> _key_from_environment("TINYEVAL_DOCTEST_KEY")
    'sk-test-SECRET123'
    >>> os.environ["TINYEVAL_DOCTEST_KEY"] = "sk-test-\\x07SECRET123"
    >>> _key_from_environment("TINYEVAL_DOCTEST_KEY")
    Traceback (most recent call last):
    ...
    tinyeval.models.ModelConfigError: TINYEVAL_DOCTEST_KEY holds a control character (U+0007) ...
    >>> del os.environ["TINYEVAL_DOCTEST_KEY"]
    """
    key = os.environ.get(variable, "").strip()
    if not key:
        return None
    for position, char in enumerate(key, start=1):
        if ord(char) < 0x20 or ord(char) == 0x7F:
            raise ModelConfigError(
                f"{variable} holds a control character (U+{ord(char):04X}) at character"
                f" {position} of the key; remove it (the key is not shown)"
            )
        if ord(char) > 0x7E:
            raise ModelConfigError(
                f"{variable} holds a character that is not ASCII at character {position}"
                " of the key; an API key is ASCII (the key is not shown)"
            )
    return key


def _refuse_invalid_text(text: str, what: str) -> None:
    """A lone surrogate is not text: no file, row or report can hold it.

    >>> _refuse_invalid_text("ok \\ud800", "the reply")
    Traceback (most recent call last):
    ...
    tinyeval.models.ModelCallError: the reply is not valid text: a lone surrogate ... character 4
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ModelCallError(
            f"{what} is not valid text: a lone surrogate ({text[exc.start]!r})"
            f" at character {exc.start + 1:,}"
        ) from None


def _config_error(message: str, secrets: Iterable[str] = ()) -> ModelConfigError:
    return ModelConfigError(scrub(message, secrets))


# ---------------------------------------------------------------------------
# resolve


def resolve(
    spec: str,
    *,
    base_url: str | None = None,
    timeout: float = 60.0,
    retries: int = 4,
    temperature: float | None = 0.0,
    max_tokens: int | None = None,
    sleep: Sleep = time.sleep,
    max_response_bytes: int = MAX_RESPONSE_BYTES,
) -> Model:
    """The :class:`Model` named by ``spec`` (see the module docstring for the forms).

    ``base_url`` overrides the server (otherwise ``OPENAI_BASE_URL`` or
    ``ANTHROPIC_BASE_URL``, then the vendor's address). ``timeout`` is in
    seconds per attempt, and bounds the whole attempt (connecting, headers and
    body) however slowly the server sends; ``max_response_bytes`` is the largest
    reply body read (a larger one is refused); ``retries`` is how many times a failed HTTP call is
    tried again; ``temperature`` None leaves it to the server; ``sleep`` is
    the function that waits between attempts (tests pass a fake).

    Raises :class:`ModelConfigError` for an unknown scheme, an empty model
    name, a missing key (or one with a control character inside), an unknown
    command or an unimportable function.

    >>> model = resolve("cmd:cat")
    >>> model("PASS: the amount is 1,250.50"), model.temperature
    (Reply('PASS: the amount is 1,250.50', usage=None, model=None, cached=False), 0.0)
    """
    if not isinstance(spec, str):
        raise ModelConfigError(f"a model spec must be a string, got {type(spec).__name__}")
    spec = spec.strip()
    _check_options(timeout=timeout, retries=retries, temperature=temperature, max_tokens=max_tokens)
    _refuse_secret_in_spec(spec)
    if (
        isinstance(max_response_bytes, bool)
        or not isinstance(max_response_bytes, int)
        or max_response_bytes < 1
    ):
        raise ModelConfigError(
            f"max_response_bytes must be an integer >= 1, got {max_response_bytes!r}"
        )
    options = _Options(
        base_url, timeout, retries, temperature, max_tokens, sleep, max_response_bytes
    )
    if spec in BUILTINS:  # a short name for a py: target inside this package
        return _python_model(spec, BUILTINS[spec], options)
    scheme, sep, rest = spec.partition(":")
    factory = _SCHEME_FACTORIES.get(scheme) if sep else None
    if factory is None:
        raise ModelConfigError(
            f"unknown model spec {spec!r}: expected {SPEC_FORMS}{_scheme_hint(spec)}"
        )
    if not rest.strip():
        raise ModelConfigError(f"model spec {spec!r} is incomplete: expected {SPEC_FORMS}")
    return factory(spec, rest.strip(), options)


class _Options(NamedTuple):
    """What :func:`resolve` was asked for, handed to the adapter of the spec's scheme."""

    base_url: str | None
    timeout: float
    retries: int
    temperature: float | None
    max_tokens: int | None
    sleep: Sleep
    max_response_bytes: int = MAX_RESPONSE_BYTES


def _command_factory(spec: str, command: str, o: _Options) -> Model:
    return _command_model(spec, command, o.timeout, o.temperature)


def _python_factory(spec: str, target: str, o: _Options) -> Model:
    return _python_model(spec, target, o)


_MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/@-]*")


def _scheme_hint(spec: str) -> str:
    """For a bare model name (no scheme), how to write it as an OpenAI-compatible spec.

    >>> _scheme_hint("gpt-4o-mini")
    '; for an OpenAI-compatible model write openai:gpt-4o-mini'
    >>> _scheme_hint("foo:bar"), _scheme_hint("two words")
    ('', '')
    """
    if ":" in spec or not _MODEL_NAME.fullmatch(spec):
        return ""
    return f"; for an OpenAI-compatible model write openai:{spec}"


def _check_options(
    *, timeout: float, retries: int, temperature: float | None, max_tokens: int | None
) -> None:
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise ModelConfigError(f"timeout must be a number of seconds, got {timeout!r}")
    if not (math.isfinite(timeout) and timeout > 0):
        raise ModelConfigError(f"timeout must be a positive number of seconds, got {timeout!r}")
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ModelConfigError(f"retries must be an integer >= 0, got {retries!r}")
    if temperature is not None and (
        isinstance(temperature, bool)
        or not isinstance(temperature, int | float)
        or not math.isfinite(temperature)
        or temperature < 0
    ):
        raise ModelConfigError(f"temperature must be a number >= 0 or None, got {temperature!r}")
    if max_tokens is not None and (
        isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
    ):
        raise ModelConfigError(f"max_tokens must be an integer >= 1 or None, got {max_tokens!r}")


def _refuse_secret_in_spec(spec: str) -> None:
    """A spec is recorded in results and caches, so it must never hold a key."""
    if scrub(spec) != spec:
        raise ModelConfigError(
            "the model spec contains the value of a secret environment variable; "
            "pass keys through the environment only"
        )


def _float_or_none(value: float | None) -> float | None:
    return None if value is None else float(value)


# ---------------------------------------------------------------------------
# Python functions: builtin and py:MODULE:FUNCTION


class _FunctionModel(Model):
    """A Python function ``prompt -> str`` (sync or async) behind the Model interface,
    called by the one contract of :func:`tinyeval.calls.ask`."""

    def __init__(
        self, spec: str, function: Callable[..., Any], *, temperature: float | None
    ) -> None:
        super().__init__(spec, temperature=temperature)
        self._function = function
        self.supports_json_schema = "json_schema" in accepted_keywords(function)

    resolved = False  # True when resolve() found it by spec (py: or builtin)

    def __reduce__(self) -> Any:
        if self.resolved:  # by name: the other process imports it as resolve() did here
            return (_resolve_again, (self.spec, self.temperature))
        return super().__reduce__()

    def _call(self, prompt: str, sample: int, json_schema: Mapping[str, Any] | None) -> Reply:
        try:
            result = ask(self._function, prompt, sample=sample, json_schema=json_schema)
        except Exception as exc:
            raise ModelCallError(scrub(f"{self.spec}: {type(exc).__name__}: {exc}")) from exc
        return Reply(
            result,
            usage=getattr(result, "usage", None),
            model=getattr(result, "model", None),
        )


def as_model(
    function: Callable[..., Any], *, spec: str | None = None, temperature: float | None = None
) -> Model:
    """Wrap any function ``prompt -> str`` (sync or async) as a :class:`Model`.

    It receives ``sample=`` and ``json_schema=`` only if its signature accepts
    them. ``spec`` defaults to ``py:MODULE:QUALNAME``; pass one for lambdas,
    which all share the name ``<lambda>``. A :class:`Model` is returned as is.

    >>> async def judge(prompt, *, sample=0):
    ...     return "PASS" if "1,250.50" in prompt else "FAIL"
    >>> model = as_model(judge, spec="py:mine:judge")
    >>> model("the amount is 1,250.50")
    Reply('PASS', usage=None, model=None, cached=False)
    """
    if isinstance(function, Model):
        return function
    if not callable(function):
        raise ModelConfigError(f"expected a callable model, got {type(function).__name__}")
    if spec is None:
        module = getattr(function, "__module__", None) or "unknown"
        name = getattr(function, "__qualname__", None) or type(function).__qualname__
        spec = f"py:{module}:{name}"
    return _FunctionModel(spec, function, temperature=temperature)


def _python_model(spec: str, target: str, options: _Options) -> Model:
    """The function ``MODULE:QUALNAME`` names; a MODULE starting with a dot is in this package."""
    module_name, sep, attribute = target.partition(":")
    module_name, attribute = module_name.strip(), attribute.strip()
    if not sep or not module_name or not attribute:
        raise ModelConfigError(f"model spec {spec!r} is incomplete: expected py:MODULE:FUNCTION")
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)  # as ``python -m`` does
    try:
        module = importlib.import_module(module_name, __package__)
    except Exception as exc:
        raise _config_error(
            f"{spec}: cannot import module {module_name!r} ({type(exc).__name__}: {exc})"
        ) from exc
    function: Any = module
    for part in attribute.split("."):
        if not hasattr(function, part):
            raise ModelConfigError(f"{spec}: module {module_name!r} has no {attribute!r}")
        function = getattr(function, part)
    if not callable(function):
        raise ModelConfigError(
            f"{spec}: {attribute!r} is a {type(function).__name__}, not callable"
        )
    model = _FunctionModel(spec, function, temperature=_float_or_none(options.temperature))
    model.resolved = True  # it can be resolved again by its spec in another process
    return model


# ---------------------------------------------------------------------------
# cmd:COMMAND


class _CommandModel(Model):
    """A command run once per call: the prompt on stdin, the reply on stdout."""

    def __init__(
        self, spec: str, argv: list[str], *, timeout: float, temperature: float | None
    ) -> None:
        super().__init__(spec, temperature=temperature)
        self._argv = argv
        self._timeout = timeout

    def _call(self, prompt: str, sample: int, json_schema: Mapping[str, Any] | None) -> Reply:
        import subprocess

        env = dict(os.environ, TINYEVAL_SAMPLE=str(sample))
        if self.temperature is not None:
            env["TINYEVAL_TEMPERATURE"] = repr(self.temperature)
        try:
            done = subprocess.run(
                self._argv,
                input=prompt,
                capture_output=True,
                text=True,
                encoding="utf-8",
                errors="replace",
                timeout=self._timeout,
                env=env,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise ModelCallError(
                f"{self.spec}: no reply within {self._timeout:g} s (the command was stopped)"
            ) from None
        except OSError as exc:
            raise ModelCallError(
                scrub(f"{self.spec}: cannot run {self._argv[0]!r}: {exc.strerror or exc}")
            ) from None
        if done.returncode != 0:
            detail = _last_line(scrub(done.stderr))
            message = f"{self.spec}: the command exited with code {done.returncode}"
            raise ModelCallError(scrub(f"{message}: {detail}" if detail else message))
        return Reply(_strip_one_newline(done.stdout))


def _command_model(spec: str, command: str, timeout: float, temperature: float | None) -> Model:
    import shlex
    import shutil

    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise ModelConfigError(f"{spec}: cannot split the command ({exc})") from None
    if not argv:
        raise ModelConfigError(f"model spec {spec!r} is incomplete: expected cmd:COMMAND")
    if shutil.which(argv[0]) is None:
        raise ModelConfigError(f"{spec}: command {argv[0]!r} not found on PATH")
    return _CommandModel(spec, argv, timeout=timeout, temperature=_float_or_none(temperature))


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def _strip_one_newline(text: str) -> str:
    for ending in ("\r\n", "\n"):
        if text.endswith(ending):
            return text[: -len(ending)]
    return text


# ---------------------------------------------------------------------------
# HTTP


def _check_base_url(spec: str, base: str) -> str:
    base = base.strip().rstrip("/")
    parts = urllib.parse.urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise _config_error(
            f"{spec}: the base URL must start with http:// or https:// and name a host, "
            f"got {_shorten(base, 80)!r}"
        )
    return base


class _HTTPModel(Model):
    """Shared HTTP machinery: POST JSON, retry, and describe failures."""

    key_variable = ""

    def __init__(
        self,
        spec: str,
        name: str,
        *,
        url: str,
        headers: Mapping[str, str],
        key: str | None,
        timeout: float,
        retries: int,
        temperature: float | None,
        max_tokens: int | None,
        sleep: Sleep,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
    ) -> None:
        settings = {"url": _public_url(url), "max_tokens": max_tokens}
        super().__init__(spec, temperature=temperature, settings=settings)
        self.name = name
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.retries = retries
        self._url = url
        self._headers = dict(headers)
        self._key = key
        self._sleep = sleep
        self.max_response_bytes = max_response_bytes

    def __reduce__(self) -> tuple[Any, ...]:
        # sent to another process (a distributed executor) without its key: the receiving
        # side reads the key from its own environment, as resolve() does
        return (
            _rebuild_http,
            (type(self), self.spec, self.name, self._url, self.timeout, self.retries,
             self.temperature, self.max_tokens, self.max_response_bytes),
        )  # fmt: skip

    def _secrets(self) -> list[str]:
        return [self._key] if self._key else []

    def _call(self, prompt: str, sample: int, json_schema: Mapping[str, Any] | None) -> Reply:
        return self._reply(self._post(self._request_body(prompt, sample, json_schema)))

    @abc.abstractmethod
    def _request_body(
        self, prompt: str, sample: int, json_schema: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        """The JSON body of one call (each provider defines it; batches send the same body)."""

    @abc.abstractmethod
    def _reply(self, payload: Any) -> Reply:
        """The reply in the provider's decoded JSON answer (each provider defines it)."""

    def _post(self, body: Mapping[str, Any]) -> Any:
        """POST ``body`` as JSON and return the decoded JSON reply, retrying as documented."""
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        attempts = self.retries + 1
        for attempt in range(1, attempts + 1):
            outcome = self._attempt(data)
            if not isinstance(outcome, _Failure):
                return self._decode(outcome)
            if not outcome.retryable or attempt == attempts:
                tries = f"{attempt} attempt" + ("s" if attempt > 1 else "")
                raise ModelCallError(
                    scrub(f"{self.spec}: {outcome.problem} (after {tries})", self._secrets())
                )
            self._sleep(_backoff_delay(attempt, outcome.retry_after))
        raise AssertionError("unreachable")  # pragma: no cover

    def _attempt(self, data: bytes) -> bytes | _Failure:
        import http.client
        import urllib.error
        import urllib.request

        request = urllib.request.Request(self._url, data=data, headers=self._request_headers())
        watchdog = _Watchdog(self.timeout)
        try:
            with watchdog, watchdog.opener().open(request, timeout=self.timeout) as response:
                return _read_body(response, self.max_response_bytes, watchdog)
        except _TooLarge as exc:
            return _Failure(
                f"the reply from {_host_port(self._url)} is larger than "
                f"{exc.limit:,} bytes (max_response_bytes); it was not read further",
                retryable=False,
            )
        except urllib.error.HTTPError as exc:
            with exc:
                body = _read_quietly(exc)
            return self._http_failure(exc.code, exc.headers, body)
        except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
            if watchdog.fired:
                return self._network_failure(TimeoutError())
            reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
            return self._network_failure(reason)

    def _request_headers(self) -> dict[str, str]:
        from . import __version__

        return {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": f"tinyeval/{__version__}",
            **self._headers,
        }

    def _http_failure(self, status: int, headers: Any, body: bytes) -> _Failure:
        where = _host_port(self._url)
        message = _server_message(body, self._secrets()) or "(no message)"
        if status == 404:
            return _Failure(
                f"HTTP 404 from {where}: the server does not know the model {self.name!r} "
                f"(or {_public_url(self._url)} is not the right address): {message}",
                retryable=False,
            )
        if status in (401, 403):
            hint = f"; check {self.key_variable}" if self.key_variable else ""
            return _Failure(f"HTTP {status} from {where}: {message}{hint}", retryable=False)
        retryable = status in RETRYABLE_STATUSES or 500 <= status <= 599
        if status == 429 and _quota_exhausted(body):
            retryable = False
        retry_after = None
        if headers is not None:
            retry_after = parse_retry_after(headers.get("Retry-After"))
            if retry_after is None:  # OpenAI also sends the wait in milliseconds
                milliseconds = parse_retry_after(headers.get("retry-after-ms"), cap=math.inf)
                if milliseconds is not None:
                    retry_after = min(milliseconds / 1000.0, RETRY_AFTER_CAP)
        return _Failure(f"HTTP {status} from {where}: {message}", retryable, retry_after)

    def _network_failure(self, reason: object) -> _Failure:
        where = _host_port(self._url)
        if isinstance(reason, TimeoutError):
            return _Failure(f"no reply from {where} within {self.timeout:g} s", retryable=True)
        if isinstance(reason, OSError):
            detail = reason.strerror or str(reason) or type(reason).__name__
        else:
            detail = str(reason) or type(reason).__name__
        return _Failure(f"cannot reach {where} ({detail})", retryable=True)

    def _decode(self, body: bytes) -> Any:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ModelCallError(
                f"{self.spec}: the server at {_host_port(self._url)} sent a reply that is not "
                f"UTF-8 text (byte {body[exc.start]:#04x} at {exc.start:,})"
            ) from None
        try:
            return json.loads(text)
        except RecursionError:
            raise ModelCallError(
                f"{self.spec}: the server at {_host_port(self._url)} sent JSON nested too deeply"
            ) from None
        except ValueError:
            text = scrub(body.decode("utf-8", errors="replace").strip(), self._secrets())
            snippet = _shorten(text, 120)
            raise ModelCallError(
                scrub(
                    f"{self.spec}: the server at {_host_port(self._url)} sent a reply that is "
                    f"not JSON: {snippet!r}",
                    self._secrets(),
                )
            ) from None

    def _bad_shape(self, what: str) -> ModelCallError:
        where = _host_port(self._url)
        return ModelCallError(scrub(f"{self.spec}: unexpected reply from {where}: {what}"))


def _usage(input_tokens: Any, output_tokens: Any) -> dict[str, int] | None:
    counts = (input_tokens, output_tokens)
    if all(isinstance(n, int) and not isinstance(n, bool) for n in counts):
        return {"input_tokens": input_tokens, "output_tokens": output_tokens}
    return None


# ---- openai:MODEL


class _OpenAIModel(_HTTPModel):
    """``POST {base}/chat/completions`` on any OpenAI-compatible server."""

    supports_json_schema = True
    key_variable = "OPENAI_API_KEY"

    def _request_body(
        self, prompt: str, sample: int, json_schema: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        """The JSON body of one call (the batch module sends the same body)."""
        body: dict[str, Any] = {
            "model": self.name,
            "messages": (
                list(prompt.messages)
                if isinstance(prompt, ChatPrompt)
                else [{"role": "user", "content": prompt}]
            ),
            "seed": sample,
        }
        if isinstance(prompt, ChatPrompt) and prompt.tools:
            body["tools"] = list(prompt.tools)
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if json_schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "verdict", "schema": dict(json_schema)},
            }
        return body

    def _reply(self, payload: Any) -> Reply:
        choices = payload.get("choices") if isinstance(payload, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise self._bad_shape("no 'choices' in the reply")
        message = choices[0].get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):  # content parts
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        if not isinstance(content, str):
            finish = choices[0].get("finish_reason")
            raise self._bad_shape(f"the reply has no text (finish_reason={finish!r})")
        return _reply_from(payload, content, "prompt_tokens", "completion_tokens")


def _reply_from(payload: Mapping[str, Any], text: str, tokens_in: str, tokens_out: str) -> Reply:
    """A Reply with the usage and model name a server's JSON reports (under its own key names)."""
    usage: dict[str, Any] = payload["usage"] if isinstance(payload.get("usage"), dict) else {}
    reported = payload.get("model")
    return Reply(
        text,
        usage=_usage(usage.get(tokens_in), usage.get(tokens_out)),
        model=reported if isinstance(reported, str) else None,
    )


def _http_model(
    adapter: type[_HTTPModel],
    spec: str,
    name: str,
    o: _Options,
    *,
    url: str,
    headers: Mapping[str, str],
    key: str | None,
) -> Model:
    """An HTTP adapter for ``url``, with the settings :func:`resolve` was given."""
    return adapter(
        spec,
        name,
        url=url,
        headers=headers,
        key=key,
        timeout=o.timeout,
        retries=o.retries,
        temperature=_float_or_none(o.temperature),
        max_tokens=o.max_tokens,
        sleep=o.sleep,
        max_response_bytes=o.max_response_bytes,
    )


def _openai_factory(spec: str, name: str, o: _Options) -> Model:
    base = _check_base_url(
        spec, o.base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_DEFAULT_BASE
    )
    key = _key_from_environment("OPENAI_API_KEY")
    if key is None and urllib.parse.urlsplit(base).hostname == "api.openai.com":
        raise ModelConfigError(
            f"{spec} needs OPENAI_API_KEY in the environment "
            "(or OPENAI_BASE_URL pointing to a server that needs no key)"
        )
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return _http_model(
        _OpenAIModel, spec, name, o, url=f"{base}/chat/completions", headers=headers, key=key
    )


# ---- anthropic:MODEL


class _AnthropicModel(_HTTPModel):
    """``POST {base}/v1/messages``, the Anthropic Messages API."""

    key_variable = "ANTHROPIC_API_KEY"

    def _request_body(
        self, prompt: str, sample: int, json_schema: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        """The JSON body of one call (the batch module sends the same body)."""
        body: dict[str, Any] = {
            "model": self.name,
            "max_tokens": self.max_tokens or ANTHROPIC_DEFAULT_MAX_TOKENS,
            "messages": (
                list(prompt.anthropic_messages)
                if isinstance(prompt, ChatPrompt)
                else [{"role": "user", "content": prompt}]
            ),
        }
        if isinstance(prompt, ChatPrompt):
            if prompt.system:
                body["system"] = prompt.system
            if prompt.tools:
                body["tools"] = [_anthropic_tool(tool) for tool in prompt.tools]
        if self.temperature is not None:
            body["temperature"] = self.temperature
        return body

    def _reply(self, payload: Any) -> Reply:
        blocks = payload.get("content") if isinstance(payload, dict) else None
        if not isinstance(blocks, list):
            raise self._bad_shape("no 'content' in the reply")
        texts = [
            block["text"]
            for block in blocks
            if isinstance(block, dict)
            and block.get("type") == "text"
            and isinstance(block.get("text"), str)
        ]
        if not texts:
            stop = payload.get("stop_reason")
            raise self._bad_shape(f"the reply has no text block (stop_reason={stop!r})")
        return _reply_from(payload, "".join(texts), "input_tokens", "output_tokens")


def _anthropic_factory(spec: str, name: str, o: _Options) -> Model:
    base = _check_base_url(
        spec, o.base_url or os.environ.get("ANTHROPIC_BASE_URL") or ANTHROPIC_DEFAULT_BASE
    )
    key = _key_from_environment("ANTHROPIC_API_KEY")
    if key is None:
        raise ModelConfigError(f"{spec} needs ANTHROPIC_API_KEY in the environment")
    url = f"{base}/messages" if base.endswith("/v1") else f"{base}/v1/messages"
    headers = {"x-api-key": key, "anthropic-version": ANTHROPIC_VERSION}
    return _http_model(_AnthropicModel, spec, name, o, url=url, headers=headers, key=key)


# the adapter for each scheme of a spec (``builtin`` goes through ``py:``, see BUILTINS)
_SCHEME_FACTORIES: dict[str, Callable[[str, str, _Options], Model]] = {
    "openai": _openai_factory,
    "anthropic": _anthropic_factory,
    "cmd": _command_factory,
    "py": _python_factory,
}


def _anthropic_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    """An OpenAI function definition as the Messages API's tool (name, description, schema)."""
    inner = tool.get("function")
    function: Mapping[str, Any] = inner if isinstance(inner, Mapping) else tool
    return {
        "name": function.get("name"),
        "description": function.get("description", ""),
        "input_schema": function.get("parameters") or {"type": "object", "properties": {}},
    }


def _rebuild_http(
    cls: type[_HTTPModel],
    spec: str,
    name: str,
    url: str,
    timeout: float,
    retries: int,
    temperature: float | None,
    max_tokens: int | None,
    max_response_bytes: int,
) -> _HTTPModel:
    """An HTTP model unpickled in another process, its key read from that process's environment."""
    key = _key_from_environment(cls.key_variable) if cls.key_variable else None
    if cls.key_variable == "ANTHROPIC_API_KEY":
        headers = {"x-api-key": key or "", "anthropic-version": ANTHROPIC_VERSION}
    else:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
    return cls(
        spec, name, url=url, headers=headers, key=key, timeout=timeout, retries=retries,
        temperature=temperature, max_tokens=max_tokens, sleep=time.sleep,
        max_response_bytes=max_response_bytes,
    )  # fmt: skip


def _resolve_again(spec: str, temperature: float | None) -> Model:
    """A ``py:`` or ``builtin`` model unpickled in another process: resolved there by its spec."""
    return resolve(spec, temperature=temperature)


def _server_message(body: bytes, secrets: Iterable[str] = ()) -> str:
    """The server's own short explanation from an error body (JSON or text), scrubbed.

    Scrubbed before it is shortened, so a cut can never leave half a key behind.
    """
    text = body.decode("utf-8", errors="replace").strip()
    message = " ".join(text.split())
    try:
        payload = json.loads(text)
    except ValueError:
        payload = None
    if isinstance(payload, dict):
        error = payload.get("error", payload)
        if isinstance(error, dict):
            found = [
                error[k]
                for k in ("message", "detail", "type", "code")
                if isinstance(error.get(k), str) and error[k].strip()
            ]
            message = found[0].strip() if found else message
        elif isinstance(error, str) and error.strip():
            message = error.strip()
    return _shorten(scrub(message, secrets), 200)


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
