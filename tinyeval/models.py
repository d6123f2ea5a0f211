"""Models: the ``call_model`` contract, the adapters :func:`resolve` builds from a spec
(``builtin``, ``openai:MODEL``, ``anthropic:MODEL``, ``cmd:COMMAND``, ``py:MODULE:FUNCTION``),
retries. Keys come only from the environment and are scrubbed from every message and reply."""

from __future__ import annotations

import abc
import contextlib
import functools
import inspect
import json
import math
import os
import re
import shlex
import shutil
import signal
import threading
import time
import urllib.parse
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from . import __version__, _extra, _formats, _http
from ._http import MAX_RESPONSE_BYTES, _backoff_delay, scrub
from .errors import InputError, TinyevalError, is_number, plural, shorten

if TYPE_CHECKING:  # asyncio is imported on the first awaitable: a sync run never pays for it
    import asyncio


CallModel = Callable[..., Any]
"""Any model: ``call_model(prompt, **keywords)`` returns a ``str`` or an awaitable of one."""

_T = TypeVar("_T")
_Object = Mapping[str, Any] | None  # a JSON object (a schema, settings), or none given
_MOST_TOKENS = 10**12  # a count past this (or not a whole number) leaves the usage unknown
_KEYWORDS = ("sample", "json_schema")  # what ask() passes a model that names them
_KEYWORDS_SEEN: weakref.WeakKeyDictionary[Any, frozenset[str]] = weakref.WeakKeyDictionary()
_LOOP: list[asyncio.AbstractEventLoop] = []  # tinyeval's one event loop, run in a daemon thread
_LOOP_LOCK = threading.Lock()
# the token counts a row's usage holds; cached_* were replayed from the cache, not paid
USAGE_KEYS = ("input_tokens", "output_tokens", "cached_input_tokens", "cached_output_tokens")
_JSON = {"Content-Type": "application/json", "Accept": "application/json"}
SPEC_FORMS = "builtin, openai:MODEL, anthropic:MODEL, cmd:COMMAND or py:MODULE:FUNCTION"
# what a cmd: model sees of the environment, besides LC_*, TINYEVAL_* and the names passed
_COMMAND_ENVIRONMENT = frozenset({"PATH", "HOME", "LANG", "TMPDIR", "SYSTEMROOT"})


class Reply(str):
    """A model's reply: the text, its ``usage``, the ``model`` reported, ``cached``, ``latency_ms``.

    >>> reply = Reply("PASS", usage={"input_tokens": 12, "output_tokens": 1})
    >>> reply == "PASS", reply.usage["output_tokens"], reply.cached
    (True, 1, False)
    """

    usage: dict[str, int] | None
    model: str | None
    cached: bool
    latency_ms: float | None

    def __new__(
        cls,
        text: str,
        *,
        usage: _Object = None,
        model: str | None = None,
        cached: bool = False,
        latency_ms: float | None = None,
    ) -> Reply:
        self = super().__new__(cls, text)
        counts = dict(usage) if isinstance(usage, Mapping) else {}
        plausible = all(type(n) is int and 0 <= n <= _MOST_TOKENS for n in counts.values())
        self.usage = counts if isinstance(usage, Mapping) and plausible else None
        self.model, self.cached, self.latency_ms = model, cached, latency_ms
        return self

    def __repr__(self) -> str:
        fields = f"usage={self.usage!r}, model={self.model!r}, cached={self.cached!r}"
        return f"Reply({str(self)!r}, {fields})"


class ChatPrompt(str):
    """A conversation for the chat adapters: a ``str`` (its messages as JSON), ``system`` apart.

    >>> prompt = ChatPrompt([{"role": "system", "content": "Be brief."},
    ...                      {"role": "user", "content": "Hours?"}])
    >>> prompt.system, prompt.messages[-1]["content"]
    ('Be brief.', 'Hours?')
    """

    messages: tuple[dict[str, Any], ...]
    anthropic_messages: tuple[dict[str, Any], ...]
    system: str | None
    tools: tuple[dict[str, Any], ...]

    def __new__(
        cls,
        messages: Iterable[Mapping[str, Any]],
        *,
        anthropic_messages: Iterable[Mapping[str, Any]] | None = None,
        tools: Iterable[Mapping[str, Any]] = (),
    ) -> ChatPrompt:
        listed = tuple(dict(message) for message in messages)
        self = super().__new__(cls, json.dumps(listed, ensure_ascii=False))
        self.messages = listed
        systems = [m.get("content") for m in listed if m.get("role") == "system"]
        self.system = "\n\n".join(str(text) for text in systems if text) or None
        if anthropic_messages is None:
            anthropic_messages = [m for m in listed if m.get("role") != "system"]
        self.anthropic_messages = tuple(dict(message) for message in anthropic_messages)
        self.tools = tuple(dict(tool) for tool in tools)
        return self

    @classmethod
    def of(cls, conversation: Any, *, tools: Iterable[Mapping[str, Any]] = ()) -> ChatPrompt:
        """The prompt for anything with ``to_messages("openai"|"anthropic")``."""
        anthropic = conversation.to_messages("anthropic")
        return cls(conversation.to_messages("openai"), anthropic_messages=anthropic, tools=tools)


def accepted_keywords(call_model: CallModel) -> frozenset[str]:
    """Which of ``sample`` and ``json_schema`` ``call_model`` names as parameters.

    >>> sorted(accepted_keywords(lambda prompt, *, sample=0, json_schema=None: prompt))
    ['json_schema', 'sample']
    """
    try:  # remembered per callable while it lives: ask() looks on every call
        return _KEYWORDS_SEEN[call_model]
    except (TypeError, KeyError):
        pass
    try:
        parameters = inspect.signature(call_model).parameters
    except (TypeError, ValueError):  # builtins and C callables without a signature
        parameters = {}  # type: ignore[assignment]
    by_name = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    known = frozenset(n for n in _KEYWORDS if n in parameters and parameters[n].kind in by_name)
    with contextlib.suppress(TypeError):  # unhashable or not weakly referenceable: not kept
        _KEYWORDS_SEEN[call_model] = known
    return known


async def _awaited(awaitable: Awaitable[_T]) -> _T:
    return await awaitable


def run_awaitable(awaitable: Awaitable[_T]) -> _T:
    """Wait for ``awaitable`` on tinyeval's long-lived event loop and return its result.

    >>> async def reply():
    ...     return "PASS"
    >>> run_awaitable(reply())
    'PASS'
    """
    import asyncio

    with _LOOP_LOCK:
        if not _LOOP or _LOOP[0].is_closed():
            _LOOP[:] = [loop := asyncio.new_event_loop()]
            threading.Thread(target=loop.run_forever, name="tinyeval-asyncio", daemon=True).start()
        loop = _LOOP[0]
    try:
        inside = asyncio.get_running_loop() is loop
    except RuntimeError:
        inside = False
    if inside:  # awaited from a coroutine on our own loop: cannot block it
        raise RuntimeError("a model awaited from inside tinyeval's own event loop")
    coroutine = awaitable if inspect.iscoroutine(awaitable) else _awaited(awaitable)
    # a bare lock, released once the task is done, hands the result back (half the cost of a future)
    tasks: list[asyncio.Task[_T]] = []
    finished = threading.Lock()
    finished.acquire()

    def start() -> None:
        tasks.append(loop.create_task(coroutine))
        tasks[0].add_done_callback(lambda _: finished.release())

    loop.call_soon_threadsafe(start)
    try:
        finished.acquire()
    except BaseException:  # interrupted while waiting: the call is not to go on
        loop.call_soon_threadsafe(lambda: [task.cancel() for task in tasks])
        raise
    return tasks[0].result()


def ask(call_model: CallModel, prompt: str, *, sample: int = 0, json_schema: _Object = None) -> str:
    """One reply (a ``str``, awaited if need be) from a callable, given the keywords it names.

    >>> ask(lambda prompt, *, sample=0: f"sample {sample}", "x", sample=2)
    'sample 2'
    """
    accepted = accepted_keywords(call_model)
    keywords: dict[str, Any] = {"sample": sample} if "sample" in accepted else {}
    if json_schema is not None and "json_schema" in accepted:
        keywords["json_schema"] = json_schema
    reply = call_model(prompt, **keywords)
    if type(reply) is str:
        return reply
    if inspect.isawaitable(reply):
        reply = run_awaitable(reply)
    if not isinstance(reply, str):
        raise TypeError(f"call_model returned {type(reply).__name__}, expected str")
    return reply


def model_spec(call_model: Any) -> str | None:
    """A readable name for a model callable: its ``spec`` if it has one, else ``py:MODULE:NAME``.

    >>> def my_judge(prompt): return "PASS"
    >>> model_spec(my_judge)
    'py:tinyeval.models:my_judge'
    """
    if call_model is None:
        return None
    spec = getattr(call_model, "spec", None)
    return spec if isinstance(spec, str) else _py_name(call_model)


def _py_name(function: Any) -> str:
    module = getattr(function, "__module__", None) or "unknown"
    name = getattr(function, "__qualname__", None) or type(function).__qualname__
    return f"py:{module}:{name}"


def add_usage(total: dict[str, int], usage: Any, *, cached: bool = False) -> None:
    """Add one call's token counts to ``total``; with ``cached`` they count as ``cached_*``.

    >>> total = {}
    >>> add_usage(total, {"input_tokens": 10, "output_tokens": 2}, cached=True)
    >>> total
    {'cached_input_tokens': 10, 'cached_output_tokens': 2}
    """
    for key in USAGE_KEYS if isinstance(usage, Mapping) else ():
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value:
            name = f"cached_{key}" if cached and not key.startswith("cached_") else key
            total[name] = total.get(name, 0) + value


def usage_and_model(replies: Sequence[str]) -> dict[str, Any]:
    """The replies' summed ``usage`` (``cached_*`` for cache replays; None when none reported
    any) and the first ``model`` name a server reported (or None).

    >>> usage_and_model([Reply("a", usage={"input_tokens": 3}, model="gpt-4o-mini"), "plain"])
    {'usage': {'input_tokens': 3}, 'model': 'gpt-4o-mini'}
    """
    total: dict[str, int] = {}
    usages = [(getattr(reply, "usage", None), getattr(reply, "cached", False)) for reply in replies]
    for usage, cached in usages:
        add_usage(total, usage, cached=cached is True)
    models = (getattr(reply, "model", None) for reply in replies)
    return {
        "usage": total if any(isinstance(usage, Mapping) for usage, _ in usages) else None,
        "model": next((model for model in models if isinstance(model, str) and model), None),
    }


class ModelConfigError(InputError):
    """A model spec or setting that cannot work: unknown scheme, missing key, bad option."""


class ModelCallError(TinyevalError, RuntimeError):
    """A model call that failed after its retries (the message never holds a key)."""


class Model(abc.ABC):
    """A callable model; its ``spec`` and ``settings`` (the cache keys on both) hold no key.

    >>> model = as_model(lambda prompt: prompt.upper(), spec="py:demo:upper")
    >>> model("pass"), model.spec
    (Reply('PASS', usage=None, model=None, cached=False), 'py:demo:upper')
    """

    supports_json_schema: bool = False

    def __init__(
        self, spec: str, *, temperature: float | None = 0.0, settings: _Object = None
    ) -> None:
        self.spec, self.temperature = spec, temperature
        self.settings: dict[str, Any] = dict(settings or {})

    def __call__(self, prompt: str, *, sample: int = 0, json_schema: _Object = None) -> Reply:
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a str, got {type(prompt).__name__}")
        if not _whole(sample, 0):
            raise ModelConfigError(f"sample must be an integer >= 0, got {sample!r}")
        start = time.perf_counter()
        reply = _scrub_reply(self._call(prompt, sample, json_schema), self._secrets())
        if reply.latency_ms is None:
            reply.latency_ms = round((time.perf_counter() - start) * 1000.0, 3)
        return reply

    def _secrets(self) -> list[str]:
        return []  # secrets besides the environment's (an HTTP adapter's key)

    def _fail(self, problem: str) -> ModelCallError:
        return ModelCallError(scrub(f"{self.spec}: {problem}", self._secrets()))

    @abc.abstractmethod
    def _call(self, prompt: str, sample: int, json_schema: _Object) -> Reply:
        """One call to the model."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec!r} temperature={self.temperature!r}>"


def _scrub_reply(reply: Reply, secrets: list[str]) -> Reply:
    model = getattr(reply, "model", None)
    named = model if isinstance(model, str) else ""
    for what, text in (("the reply", str(reply)), ("the reported model name", named)):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate: no file, row or report holds it
            raise ModelCallError(
                f"{what} is not valid text: a lone surrogate ({text[exc.start]!r})"
                f" at character {exc.start + 1:,}"
            ) from None
    return Reply(
        scrub(str(reply), secrets),
        usage=getattr(reply, "usage", None),
        model=scrub(named, secrets) if isinstance(model, str) else model,
        cached=bool(getattr(reply, "cached", False)),
        latency_ms=getattr(reply, "latency_ms", None),
    )


def _key_from_environment(variable: str) -> str | None:
    key = os.environ.get(variable, "").strip()
    for position, char in enumerate(key, start=1):
        if not (char.isascii() and char.isprintable()):
            control = f"a control character (U+{ord(char):04X})"
            what = control if char.isascii() else "a character that is not ASCII"
            raise ModelConfigError(
                f"{variable} holds {what} at character {position}"
                " of the key; remove it (the key is not shown)"
            )
    return key or None


def resolve(
    spec: str,
    *,
    base_url: str | None = None,
    timeout: float = 60.0,
    retries: int = 4,
    temperature: float | None = 0.0,
    max_tokens: int | None = None,
    sleep: Callable[[float], None] = time.sleep,
    max_response_bytes: int = MAX_RESPONSE_BYTES,
    pass_env: Iterable[str] = (),
) -> Model:
    """The :class:`Model` named by ``spec`` (``temperature`` None leaves it to the server).

    >>> model = resolve("cmd:cat")
    >>> model("PASS: the amount is 1,250.50"), model.temperature
    (Reply('PASS: the amount is 1,250.50', usage=None, model=None, cached=False), 0.0)
    """
    if not isinstance(spec, str):
        raise ModelConfigError(f"a model spec must be a string, got {type(spec).__name__}")
    spec = spec.strip()
    options = _Options(
        base_url, timeout, retries, temperature, max_tokens, sleep, max_response_bytes, ()
    ).checked(pass_env)
    if scrub(spec) != spec:  # a spec is recorded in results and caches
        raise ModelConfigError(
            "the model spec contains the value of a secret environment variable; "
            "pass keys through the environment only"
        )
    if spec == "builtin":
        judge = _extra("model", "builtin", what="the built-in judge")
        return _FunctionModel(spec, judge, temperature=options.temperature, resolved=True)
    scheme, sep, rest = spec.partition(":")
    rest = rest.strip()
    if not sep or scheme not in ("openai", "anthropic", "cmd", "py"):
        hint = ""
        if ":" not in spec and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._/@-]*", spec):
            hint = f"; for an OpenAI-compatible model write openai:{spec}"
        raise ModelConfigError(f"unknown model spec {spec!r}: expected {SPEC_FORMS}{hint}")
    if not rest:
        raise ModelConfigError(f"model spec {spec!r} is incomplete: expected {SPEC_FORMS}")
    if scheme == "cmd":
        return _CommandModel.open(spec, rest, options)
    if scheme == "py":
        function = _formats.python_target(spec, ModelConfigError)
        return _FunctionModel(spec, function, temperature=options.temperature, resolved=True)
    adapter = _OpenAIModel if scheme == "openai" else _AnthropicModel
    return adapter.open(spec, rest, options)


def _whole(value: Any, least: int) -> bool:
    return is_number(value) and isinstance(value, int) and value >= least


def _number(value: Any) -> bool:
    return is_number(value) and math.isfinite(value)


class _Options(NamedTuple):
    base_url: str | None
    timeout: float
    retries: int
    temperature: float | None
    max_tokens: int | None
    sleep: Callable[[float], None]
    max_response_bytes: int
    pass_env: tuple[str, ...]

    def checked(self, pass_env: Iterable[str]) -> _Options:
        rules = {
            "timeout must be a positive number of seconds": _number(self.timeout)
            and self.timeout > 0,
            "retries must be an integer >= 0": _whole(self.retries, 0),
            "temperature must be a number >= 0 or None": self.temperature is None
            or (_number(self.temperature) and self.temperature >= 0),
            "max_tokens must be an integer >= 1 or None": self.max_tokens is None
            or _whole(self.max_tokens, 1),
            "max_response_bytes must be an integer >= 1": _whole(self.max_response_bytes, 1),
        }
        for problem, ok in rules.items():
            if not ok:
                value = getattr(self, problem.split()[0])
                raise ModelConfigError(f"{problem}, got {value!r}")
        temperature = None if self.temperature is None else float(self.temperature)
        return self._replace(temperature=temperature, pass_env=tuple(pass_env))


class _FunctionModel(Model):
    def __init__(
        self, spec: str, function: CallModel, *, temperature: float | None, resolved: bool = False
    ) -> None:
        super().__init__(spec, temperature=temperature)
        self._function = function
        self.supports_json_schema = "json_schema" in accepted_keywords(function)
        self.resolved = resolved  # found by resolve(): another process can find it again

    def __reduce__(self) -> Any:
        if self.resolved:  # by name: the other process imports it as resolve() did here
            return (functools.partial(resolve, temperature=self.temperature), (self.spec,))
        return super().__reduce__()

    def _call(self, prompt: str, sample: int, json_schema: _Object) -> Reply:
        try:
            result = ask(self._function, prompt, sample=sample, json_schema=json_schema)
        except Exception as exc:
            raise self._fail(f"{type(exc).__name__}: {exc}") from exc
        usage, model = getattr(result, "usage", None), getattr(result, "model", None)
        return Reply(result, usage=usage, model=model)


def as_model(function: CallModel, *, spec: str | None = None) -> Model:
    """Wrap a function ``prompt -> str`` (sync or async) as a :class:`Model` named ``spec``.

    >>> async def judge(prompt, *, sample=0):
    ...     return "PASS" if "1,250.50" in prompt else "FAIL"
    >>> as_model(judge, spec="py:mine:judge")("the amount is 1,250.50")
    Reply('PASS', usage=None, model=None, cached=False)
    """
    if isinstance(function, Model):
        return function
    if not callable(function):
        raise ModelConfigError(f"expected a callable model, got {type(function).__name__}")
    return _FunctionModel(spec or _py_name(function), function, temperature=None)


class _CommandModel(Model):
    """A command run once per call: the prompt on stdin, the reply on stdout (bounded)."""

    def __init__(self, spec: str, argv: list[str], options: _Options) -> None:
        super().__init__(spec, temperature=options.temperature)
        self._argv, self._options = argv, options

    @classmethod
    def open(cls, spec: str, command: str, options: _Options) -> _CommandModel:
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise ModelConfigError(f"{spec}: cannot split the command ({exc})") from None
        if shutil.which(argv[0]) is None:
            raise ModelConfigError(f"{spec}: command {argv[0]!r} not found on PATH")
        return cls(spec, argv, options)

    def _call(self, prompt: str, sample: int, json_schema: _Object) -> Reply:
        import subprocess

        timeout, limit = self._options.timeout, self._options.max_response_bytes
        keep = _COMMAND_ENVIRONMENT | set(self._options.pass_env)
        env = {
            n: v for n, v in os.environ.items() if n in keep or n.startswith(("LC_", "TINYEVAL_"))
        }
        env["TINYEVAL_SAMPLE"] = str(sample)
        if self.temperature is not None:
            env["TINYEVAL_TEMPERATURE"] = repr(self.temperature)
        pipe = subprocess.PIPE
        try:
            process = subprocess.Popen(  # in a session of its own: its children are stopped with it
                self._argv, stdin=pipe, stdout=pipe, stderr=pipe, env=env, start_new_session=True
            )
        except OSError as exc:
            raise self._fail(f"cannot run {self._argv[0]!r}: {exc.strerror or exc}") from None
        out, err = _Drain(process, process.stdout, limit), _Drain(process, process.stderr, 2**16)
        threading.Thread(target=_feed, args=(process.stdin, prompt), daemon=True).start()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            raise self._fail(f"no reply within {timeout:g} s (the command was stopped)") from None
        finally:
            _stop(process)
        if out.overflowed:
            raise self._fail(f"the reply is {_too_large(limit)}; the command was stopped")
        if process.returncode != 0:
            lines = [line.strip() for line in scrub(err.text(timeout)).splitlines() if line.strip()]
            message = f"the command exited with code {process.returncode}"
            raise self._fail(f"{message}: {lines[-1][:300]}" if lines else message)
        return Reply(out.text(timeout).removesuffix("\n"))


def _too_large(limit: int) -> str:
    return f"larger than {limit:,} bytes (max_response_bytes)"


class _Drain(threading.Thread):
    def __init__(self, process: Any, pipe: Any, limit: int) -> None:
        super().__init__(daemon=True)
        self.process, self.pipe, self.limit = process, pipe, limit
        self.data, self.overflowed = b"", False
        self.start()

    def run(self) -> None:
        try:
            self.data = _http._read_capped(self.pipe.read1, self.limit)
        except _http._TooLarge:
            self.overflowed = True
            _stop(self.process)

    def text(self, timeout: float) -> str:
        """What was read, decoded, newlines as in text mode (\\r\\n and \\r become \\n)."""
        self.join(timeout)
        text = self.data.decode("utf-8", errors="replace")
        return text.replace("\r\n", "\n").replace("\r", "\n")


def _feed(stdin: Any, prompt: str) -> None:
    with contextlib.suppress(OSError), stdin:  # a command need not read its input
        stdin.write(prompt.encode("utf-8", errors="replace"))


def _stop(process: Any) -> None:
    with contextlib.suppress(OSError):
        if hasattr(os, "killpg"):
            os.killpg(process.pid, signal.SIGKILL)
        else:  # pragma: no cover - Windows
            process.kill()
    process.wait()


class _HTTPModel(Model):
    key_optional = False  # True: a server other than the vendor's may need no key
    key_variable: str
    base_variable: str
    default_base: str
    path: str  # of the endpoint, after the base URL
    usage_names: tuple[tuple[str, str], ...]  # (our name, the vendor's) of each token count
    _auth_headers: Callable[[], dict[str, str]]
    _body: Callable[[ChatPrompt, int, Any], dict[str, Any]]
    _text: Callable[[Any], str]

    def __init__(self, spec: str, name: str, url: str, options: _Options) -> None:
        settings = {"url": _http._public_url(url), "max_tokens": options.max_tokens}
        super().__init__(spec, temperature=options.temperature, settings=settings)
        self.name, self.options, self._url = name, options, url
        self._host = _http._host_port(url)  # said in messages: no user info, path or query
        self.timeout, self.retries = options.timeout, options.retries
        self.max_response_bytes = options.max_response_bytes
        self._key = _key_from_environment(self.key_variable)  # in another process, read there

    @classmethod
    def open(cls, spec: str, name: str, options: _Options) -> _HTTPModel:
        base = options.base_url or os.environ.get(cls.base_variable) or cls.default_base
        base = base.strip().rstrip("/")
        parts = urllib.parse.urlsplit(base)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            problem = f"{spec}: the base URL must start with http:// or https:// and name a host"
            raise ModelConfigError(scrub(f"{problem}, got {shorten(base, 80)!r}"))
        path = cls.path.removeprefix("/v1") if base.endswith("/v1") else cls.path
        model = cls(spec, name, base + path, options)
        vendor = urllib.parse.urlsplit(cls.default_base).hostname
        if model._key is None and (not cls.key_optional or parts.hostname == vendor):
            hint = f" (or {cls.base_variable} pointing to a server that needs no key)"
            hint = hint if cls.key_optional else ""
            raise ModelConfigError(f"{spec} needs {cls.key_variable} in the environment{hint}")
        return model

    def _request_headers(self) -> dict[str, str]:
        return {**_JSON, "User-Agent": f"tinyeval/{__version__}", **self._auth_headers()}

    def __reduce__(self) -> tuple[Any, ...]:
        # sent to another process without its key or its sleep: the key is read there
        options = self.options._replace(sleep=time.sleep)
        return (type(self), (self.spec, self.name, self._url, options))

    def _secrets(self) -> list[str]:
        return [self._key] if self._key else []

    def _call(self, prompt: str, sample: int, json_schema: _Object) -> Reply:
        return self._reply(self._post(self._request_body(prompt, sample, json_schema)))

    def _request_body(self, prompt: str, sample: int, json_schema: Any) -> dict[str, Any]:
        user = [{"role": "user", "content": prompt}]
        chat = prompt if isinstance(prompt, ChatPrompt) else ChatPrompt(user)
        body = self._body(chat, sample, json_schema)  # batches send it too
        return {name: value for name, value in body.items() if value is not None}

    def _post(self, body: Mapping[str, Any]) -> Any:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        attempt = 1
        while isinstance(outcome := self._attempt(data), _http._Failure):
            if not outcome.retryable or attempt > self.retries:
                raise self._fail(f"{outcome.problem} (after {plural(attempt, 'attempt')})")
            self.options.sleep(_backoff_delay(attempt, outcome.retry_after))
            attempt += 1
        try:
            return _formats._DECODER.decode(outcome.decode("utf-8"))  # a key given twice: refused
        except UnicodeDecodeError as exc:
            byte = f"byte {outcome[exc.start]:#04x} at {exc.start:,}"
            problem = f"a reply that is not UTF-8 text ({byte})"
        except RecursionError:
            problem = "JSON nested too deeply"
        except _formats._DuplicateKey as exc:  # which value counts would be a guess
            problem = f"a reply in which {exc}"
        except ValueError:
            snippet = shorten(scrub(outcome.decode("utf-8").strip(), self._secrets()), 120)
            problem = f"a reply that is not JSON: {snippet!r}"
        raise self._fail(f"the server at {self._host} sent {problem}")

    def _attempt(self, data: bytes) -> bytes | _http._Failure:
        import http.client
        import urllib.error
        import urllib.request

        request = urllib.request.Request(self._url, data=data, headers=self._request_headers())
        watchdog = _http._Watchdog(self.timeout)
        try:
            with watchdog, watchdog.opener().open(request, timeout=self.timeout) as response:
                return _http._read_body(response, self.max_response_bytes, watchdog)
        except _http._TooLarge:
            size = _too_large(self.max_response_bytes)
            said = f"the reply from {self._host} is {size}; it was not read further"
            return _http._Failure(said, retryable=False)
        except urllib.error.HTTPError as exc:
            body = b""
            with exc, contextlib.suppress(OSError, http.client.HTTPException):
                body = exc.read(_http._ERROR_BODY_BYTES)
            return self._http_failure(exc.code, exc.headers, body)
        except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
            reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
            return self._network_failure(TimeoutError() if watchdog.fired else reason)

    def _http_failure(self, status: int, headers: Any, body: bytes) -> _http._Failure:
        said = f"HTTP {status} from {self._host}: "
        message = _http._server_message(body, self._secrets()) or "(no message)"
        if status == 404:
            address = f"or {_http._public_url(self._url)} is not the right address"
            said += f"the server does not know the model {self.name!r} ({address}): "
            return _http._Failure(said + message, retryable=False)
        if status in (401, 403):
            return _http._Failure(f"{said}{message}; check {self.key_variable}", retryable=False)
        retryable = status in _http.RETRYABLE_STATUSES or 500 <= status <= 599
        retryable = retryable and not (status == 429 and _http._quota_exhausted(body))
        retry_after = None
        if headers is not None:
            retry_after = _http.parse_retry_after(headers.get("Retry-After"))
            milliseconds = _http.parse_retry_after(headers.get("retry-after-ms"), cap=math.inf)
            if retry_after is None and milliseconds is not None:  # OpenAI's, in milliseconds
                retry_after = min(milliseconds / 1000.0, _http.RETRY_AFTER_CAP)
        return _http._Failure(said + message, retryable, retry_after)

    def _network_failure(self, reason: object) -> _http._Failure:
        if isinstance(reason, TimeoutError):
            return _http._Failure(f"no reply from {self._host} within {self.timeout:g} s", True)
        strerror = reason.strerror if isinstance(reason, OSError) else None
        detail = strerror or str(reason) or type(reason).__name__
        return _http._Failure(f"cannot reach {self._host} ({detail})", retryable=True)

    def _reply(self, payload: Any) -> Reply:
        if not isinstance(payload, dict):
            payload = {}
        try:
            text = self._text(payload)
        except ValueError as exc:
            raise self._fail(f"unexpected reply from {self._host}: {exc}") from None
        usage = payload["usage"] if isinstance(payload.get("usage"), dict) else {}
        counts = {ours: usage.get(theirs) for ours, theirs in self.usage_names}
        reported = payload.get("model")
        return Reply(text, usage=counts, model=reported if isinstance(reported, str) else None)


class _OpenAIModel(_HTTPModel):
    supports_json_schema = True
    key_variable = "OPENAI_API_KEY"
    base_variable = "OPENAI_BASE_URL"
    key_optional = True
    default_base = "https://api.openai.com/v1"
    path = "/chat/completions"
    usage_names = (("input_tokens", "prompt_tokens"), ("output_tokens", "completion_tokens"))

    def _auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._key}"} if self._key else {}

    def _body(self, chat: ChatPrompt, sample: int, json_schema: Any) -> dict[str, Any]:
        schema = None if json_schema is None else {"name": "verdict", "schema": dict(json_schema)}
        return {
            "model": self.name,
            "messages": list(chat.messages),
            "seed": sample,
            "tools": list(chat.tools) or None,
            "temperature": self.temperature,
            "max_tokens": self.options.max_tokens,
            "response_format": schema and {"type": "json_schema", "json_schema": schema},
        }

    def _text(self, payload: dict[str, Any]) -> str:
        choices = payload.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise ValueError("no 'choices' in the reply")
        message = choices[0].get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):  # content parts
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        if not isinstance(content, str):
            finish = choices[0].get("finish_reason")
            raise ValueError(f"the reply has no text (finish_reason={finish!r})")
        return content


class _AnthropicModel(_HTTPModel):
    key_variable = "ANTHROPIC_API_KEY"
    base_variable = "ANTHROPIC_BASE_URL"
    default_base = "https://api.anthropic.com"
    path = "/v1/messages"
    usage_names = (("input_tokens", "input_tokens"), ("output_tokens", "output_tokens"))

    def _auth_headers(self) -> dict[str, str]:
        return {"x-api-key": self._key or "", "anthropic-version": "2023-06-01"}

    def _body(self, chat: ChatPrompt, sample: int, json_schema: Any) -> dict[str, Any]:
        return {
            "model": self.name,
            "max_tokens": self.options.max_tokens or 1024,  # the Messages API requires it
            "messages": list(chat.anthropic_messages),
            "system": chat.system,
            "tools": [_anthropic_tool(tool) for tool in chat.tools] or None,
            "temperature": self.temperature,
        }

    def _text(self, payload: dict[str, Any]) -> str:
        blocks = payload.get("content")
        if not isinstance(blocks, list):
            raise ValueError("no 'content' in the reply")
        found = [b.get("text") for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
        texts = [text for text in found if isinstance(text, str)]
        if not texts:
            stop = payload.get("stop_reason")
            raise ValueError(f"the reply has no text block (stop_reason={stop!r})")
        return "".join(texts)


def _anthropic_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    inner = tool.get("function")  # an OpenAI function definition as a Messages API tool
    function: Mapping[str, Any] = inner if isinstance(inner, Mapping) else tool
    return {
        "name": function.get("name"),
        "description": function.get("description", ""),
        "input_schema": function.get("parameters") or {"type": "object", "properties": {}},
    }
