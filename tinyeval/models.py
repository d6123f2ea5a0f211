"""Models: the ``call_model`` contract, the adapters :func:`resolve` builds from a spec
(``builtin``, ``openai:MODEL``, ``anthropic:MODEL``, ``cmd:COMMAND``, ``py:MODULE:FUNCTION``),
retries. Keys come only from the environment and are scrubbed from every message and reply.
"""

from __future__ import annotations

import _thread
import abc
import contextlib
import functools
import importlib
import inspect
import json
import math
import os
import re
import sys
import threading
import time
import urllib.parse
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from . import _extra
from ._http import (
    MAX_RESPONSE_BYTES,
    _backoff_delay,
    _Failure,
    _host_port,
    _Poster,
    _public_url,
    scrub,
)
from .errors import InputError, TinyevalError, plural, shorten

if TYPE_CHECKING:  # asyncio is imported on the first awaitable: a sync run never pays for it
    import asyncio


CallModel = Callable[..., Any]
"""Any model: ``call_model(prompt, **keywords)`` returns a ``str`` or an awaitable of one."""

_T = TypeVar("_T")


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
        usage: Mapping[str, Any] | None = None,
        model: str | None = None,
        cached: bool = False,
        latency_ms: float | None = None,
    ) -> Reply:
        self = super().__new__(cls, text)
        self.usage = _believable(usage)
        self.model = model
        self.cached = cached
        self.latency_ms = latency_ms
        return self

    def __repr__(self) -> str:
        return (
            f"Reply({str(self)!r}, usage={self.usage!r}, model={self.model!r}, "
            f"cached={self.cached!r})"
        )


_MOST_TOKENS = 10**12  # a count past this (or not a whole number) leaves the usage unknown


def _believable(usage: Any) -> dict[str, int] | None:
    """Token counts as a server gave them, or None when any is not a plausible whole number."""
    if not isinstance(usage, Mapping):
        return None
    counts = dict(usage)
    plausible = (type(n) is int and 0 <= n <= _MOST_TOKENS for n in counts.values())
    return counts if all(plausible) else None


class ChatPrompt(str):
    """A conversation for a chat model: a ``str`` (its OpenAI-shaped messages as JSON) that
    the chat adapters send as messages, with ``system`` apart and the case's ``tools``.

    >>> prompt = ChatPrompt([{"role": "system", "content": "Be brief."},
    ...                      {"role": "user", "content": "Hours?"}])
    >>> str(prompt)
    '[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hours?"}]'
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
        return cls(
            conversation.to_messages("openai"),
            anthropic_messages=conversation.to_messages("anthropic"),
            tools=tools,
        )


_KEYWORDS = ("sample", "json_schema")
_KEYWORDS_SEEN: weakref.WeakKeyDictionary[Any, frozenset[str]] = weakref.WeakKeyDictionary()


def accepted_keywords(call_model: CallModel) -> frozenset[str]:
    """Which of ``sample`` and ``json_schema`` ``call_model`` names as parameters.

    >>> sorted(accepted_keywords(lambda prompt, *, sample=0, json_schema=None: prompt))
    ['json_schema', 'sample']
    """
    with contextlib.suppress(TypeError, KeyError):  # remembered per callable while it lives
        return _KEYWORDS_SEEN[call_model]
    try:
        parameters = inspect.signature(call_model).parameters
    except (TypeError, ValueError):  # builtins and C callables without a signature
        parameters = {}  # type: ignore[assignment]
    by_name = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    known = frozenset(n for n in _KEYWORDS if n in parameters and parameters[n].kind in by_name)
    with contextlib.suppress(TypeError):  # unhashable or not weakly referenceable: not kept
        _KEYWORDS_SEEN[call_model] = known
    return known


_LOOP: list[asyncio.AbstractEventLoop] = []  # tinyeval's one event loop, run in a daemon thread
_LOOP_LOCK = threading.Lock()


def _event_loop() -> asyncio.AbstractEventLoop:
    import asyncio

    with _LOOP_LOCK:
        if not _LOOP or _LOOP[0].is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="tinyeval-asyncio", daemon=True).start()
            _LOOP[:] = [loop]
        return _LOOP[0]


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

    loop = _event_loop()
    try:
        inside = asyncio.get_running_loop() is loop
    except RuntimeError:
        inside = False
    if inside:  # awaited from a coroutine on our own loop: cannot block it
        raise RuntimeError("a model awaited from inside tinyeval's own event loop")
    # A bare lock, released by the task's done-callback, hands the result back: half
    # the cost of run_coroutine_threadsafe's future, which each call paid twice over.
    finished = _thread.allocate_lock()
    finished.acquire()
    coroutine = awaitable if inspect.iscoroutine(awaitable) else _awaited(awaitable)
    tasks: list[asyncio.Task[_T]] = []

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


def ask(
    call_model: CallModel,
    prompt: str,
    *,
    sample: int = 0,
    json_schema: Mapping[str, Any] | None = None,
) -> str:
    """One reply from any model callable: ``sample`` and ``json_schema`` reach it only when it
    names them, an awaitable is awaited, anything but a string raises ``TypeError``.

    >>> ask(lambda prompt, *, sample=0: f"sample {sample}", "x", sample=2)
    'sample 2'
    """
    accepted = accepted_keywords(call_model)
    keywords: dict[str, Any] = {}
    if "sample" in accepted:
        keywords["sample"] = sample
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


# the token counts a row's usage holds; cached_* were replayed from the cache, not paid
USAGE_KEYS = ("input_tokens", "output_tokens", "cached_input_tokens", "cached_output_tokens")


def add_usage(total: dict[str, int], usage: Any, *, cached: bool = False) -> None:
    """Add one call's token counts to ``total``; with ``cached`` they count as ``cached_*``.

    >>> total = {}
    >>> add_usage(total, {"input_tokens": 10, "output_tokens": 2})
    >>> add_usage(total, {"input_tokens": 10, "output_tokens": 2}, cached=True)
    >>> total
    {'input_tokens': 10, 'output_tokens': 2, 'cached_input_tokens': 10, 'cached_output_tokens': 2}
    """
    if not isinstance(usage, Mapping):
        return
    for key in USAGE_KEYS:
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value:
            name = f"cached_{key}" if cached and not key.startswith("cached_") else key
            total[name] = total.get(name, 0) + value


def sum_usage(replies: Iterable[str]) -> dict[str, int] | None:
    """Token counts over replies (``cached_*`` for cache replays); None when none reported any.

    >>> sum_usage([Reply("a", usage={"input_tokens": 3, "output_tokens": 1}), "plain"])
    {'input_tokens': 3, 'output_tokens': 1}
    """
    total: dict[str, int] = {}
    seen = False
    for reply in replies:
        usage = getattr(reply, "usage", None)
        if isinstance(usage, Mapping):
            seen = True
            add_usage(total, usage, cached=getattr(reply, "cached", False) is True)
    return total if seen else None


def reported_model(replies: Iterable[str]) -> str | None:
    """The first model name a server reported among ``replies``, or None.

    >>> reported_model(["x", Reply("y", model="gpt-4o-mini-2024-07-18")])
    'gpt-4o-mini-2024-07-18'
    """
    for reply in replies:
        model = getattr(reply, "model", None)
        if isinstance(model, str) and model:
            return model
    return None


OPENAI_DEFAULT_BASE = "https://api.openai.com/v1"
ANTHROPIC_DEFAULT_BASE = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
ANTHROPIC_DEFAULT_MAX_TOKENS = 1024  # the Messages API requires max_tokens
SPEC_FORMS = "builtin, openai:MODEL, anthropic:MODEL, cmd:COMMAND or py:MODULE:FUNCTION"

Sleep = Callable[[float], None]


class ModelConfigError(InputError):
    """A model spec or setting that cannot work: unknown scheme, missing key, bad option."""


class ModelCallError(TinyevalError, RuntimeError):
    """A model call that failed after its retries (the message never holds a key)."""


class Model(abc.ABC):
    """A callable model: ``model(prompt, *, sample=0, json_schema=None) -> Reply``; its
    ``spec`` and ``settings`` (what else changes replies: the cache keys on them) hold no key.

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

    @abc.abstractmethod
    def _call(self, prompt: str, sample: int, json_schema: Mapping[str, Any] | None) -> Reply:
        """One call to the model."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec!r} temperature={self.temperature!r}>"


def _scrub_reply(reply: Reply, secrets: list[str]) -> Reply:
    """``reply`` with every secret removed from its text and model name (refused if not text)."""
    _refuse_invalid_text(str(reply), "the reply")
    model = getattr(reply, "model", None)
    if isinstance(model, str):
        _refuse_invalid_text(model, "the reported model name")
        model = scrub(model, secrets)
    return Reply(
        scrub(str(reply), secrets),
        usage=getattr(reply, "usage", None),
        model=model,
        cached=bool(getattr(reply, "cached", False)),
        latency_ms=getattr(reply, "latency_ms", None),
    )


def _key_from_environment(variable: str) -> str | None:
    """An API key from the environment, stripped; None when unset; refused unless ASCII text."""
    key = os.environ.get(variable, "").strip()
    if not key:
        return None
    for position, char in enumerate(key, start=1):
        if not " " <= char <= "~":
            control = ord(char) < 0x20 or ord(char) == 0x7F  # only these are named
            what = (
                f"a control character (U+{ord(char):04X})"
                if control
                else "a character that is not ASCII"
            )
            raise ModelConfigError(
                f"{variable} holds {what} at character {position}"
                " of the key; remove it (the key is not shown)"
            )
    return key


def _refuse_invalid_text(text: str, what: str) -> None:
    """A lone surrogate is not text: no file, row or report can hold it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ModelCallError(
            f"{what} is not valid text: a lone surrogate ({text[exc.start]!r})"
            f" at character {exc.start + 1:,}"
        ) from None


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
    pass_env: Iterable[str] = (),
) -> Model:
    """The :class:`Model` named by ``spec``; ``base_url`` overrides ``OPENAI_BASE_URL`` or
    ``ANTHROPIC_BASE_URL``, ``timeout`` bounds each HTTP attempt, ``temperature`` None leaves
    it to the server. A spec or setting that cannot work raises :class:`ModelConfigError`.

    >>> model = resolve("cmd:cat")
    >>> model("PASS: the amount is 1,250.50"), model.temperature
    (Reply('PASS: the amount is 1,250.50', usage=None, model=None, cached=False), 0.0)
    """
    if not isinstance(spec, str):
        raise ModelConfigError(f"a model spec must be a string, got {type(spec).__name__}")
    spec = spec.strip()
    _check_options(timeout, retries, temperature, max_tokens, max_response_bytes)
    if scrub(spec) != spec:  # a spec is recorded in results and caches
        raise ModelConfigError(
            "the model spec contains the value of a secret environment variable; "
            "pass keys through the environment only"
        )
    temperature = None if temperature is None else float(temperature)
    options = _Options(
        base_url, timeout, retries, temperature, max_tokens, sleep, max_response_bytes
    )._replace(pass_env=tuple(pass_env))
    if spec == "builtin":
        judge = _extra("model", "builtin", what="the built-in judge")
        return _FunctionModel(spec, judge, temperature=temperature, resolved=True)
    scheme, sep, rest = spec.partition(":")
    if not sep or scheme not in ("openai", "anthropic", "cmd", "py"):
        raise ModelConfigError(
            f"unknown model spec {spec!r}: expected {SPEC_FORMS}{_scheme_hint(spec)}"
        )
    if not rest.strip():
        raise ModelConfigError(f"model spec {spec!r} is incomplete: expected {SPEC_FORMS}")
    if scheme == "cmd":
        return _command_model(spec, rest.strip(), options)
    if scheme == "py":
        return _python_model(spec, rest.strip(), temperature)
    adapter = _OpenAIModel if scheme == "openai" else _AnthropicModel
    return adapter.open(spec, rest.strip(), options)


class _Options(NamedTuple):
    base_url: str | None
    timeout: float
    retries: int
    temperature: float | None
    max_tokens: int | None
    sleep: Sleep
    max_response_bytes: int
    pass_env: tuple[str, ...] = ()


_MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/@-]*")


def _scheme_hint(spec: str) -> str:
    if ":" in spec or not _MODEL_NAME.fullmatch(spec):
        return ""
    return f"; for an OpenAI-compatible model write openai:{spec}"


def _whole(value: Any, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _check_options(
    timeout: float, retries: int, temperature: float | None, max_tokens: int | None, limit: int
) -> None:
    checks = {
        "timeout must be a positive number of seconds": _number(timeout) and timeout > 0,
        "retries must be an integer >= 0": _whole(retries, 0),
        "temperature must be a number >= 0 or None": temperature is None
        or (_number(temperature) and temperature >= 0),
        "max_tokens must be an integer >= 1 or None": max_tokens is None or _whole(max_tokens, 1),
        "max_response_bytes must be an integer >= 1": _whole(limit, 1),
    }
    values = (timeout, retries, temperature, max_tokens, limit)
    for (problem, ok), value in zip(checks.items(), values, strict=True):
        if not ok:
            raise ModelConfigError(f"{problem}, got {value!r}")


class _FunctionModel(Model):
    """A Python function ``prompt -> str`` (sync or async)."""

    def __init__(
        self,
        spec: str,
        function: Callable[..., Any],
        *,
        temperature: float | None,
        resolved: bool = False,
    ) -> None:
        super().__init__(spec, temperature=temperature)
        self._function = function
        self.supports_json_schema = "json_schema" in accepted_keywords(function)
        self.resolved = resolved  # found by resolve(): another process can find it again

    def __reduce__(self) -> Any:
        if self.resolved:  # by name: the other process imports it as resolve() did here
            return (functools.partial(resolve, temperature=self.temperature), (self.spec,))
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
    """Wrap a function ``prompt -> str`` (sync or async) as a :class:`Model`; ``spec`` defaults
    to ``py:MODULE:QUALNAME``.

    >>> async def judge(prompt, *, sample=0):
    ...     return "PASS" if "1,250.50" in prompt else "FAIL"
    >>> as_model(judge, spec="py:mine:judge")("the amount is 1,250.50")
    Reply('PASS', usage=None, model=None, cached=False)
    """
    if isinstance(function, Model):
        return function
    if not callable(function):
        raise ModelConfigError(f"expected a callable model, got {type(function).__name__}")
    return _FunctionModel(spec or _py_name(function), function, temperature=temperature)


def _python_model(spec: str, target: str, temperature: float | None) -> Model:
    """The function ``MODULE:QUALNAME`` names (a MODULE starting with a dot is tinyeval's)."""
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
        raise ModelConfigError(
            scrub(f"{spec}: cannot import module {module_name!r} ({type(exc).__name__}: {exc})")
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
    return _FunctionModel(spec, function, temperature=temperature, resolved=True)


# what a cmd: model sees of the environment, besides LC_*, TINYEVAL_* and the names passed
_COMMAND_ENVIRONMENT = frozenset({"PATH", "HOME", "LANG", "TMPDIR", "SYSTEMROOT"})


class _CommandModel(Model):
    """A command run once per call: the prompt on stdin, the reply on stdout (bounded)."""

    def __init__(self, spec: str, argv: list[str], options: _Options) -> None:
        super().__init__(spec, temperature=options.temperature)
        self._argv = argv
        self._options = options

    def _environment(self, sample: int) -> dict[str, str]:
        keep = _COMMAND_ENVIRONMENT | set(self._options.pass_env)
        env = {
            name: value
            for name, value in os.environ.items()
            if name in keep or name.startswith(("LC_", "TINYEVAL_"))
        }
        env["TINYEVAL_SAMPLE"] = str(sample)
        if self.temperature is not None:
            env["TINYEVAL_TEMPERATURE"] = repr(self.temperature)
        return env

    def _call(self, prompt: str, sample: int, json_schema: Mapping[str, Any] | None) -> Reply:
        import subprocess

        timeout, limit = self._options.timeout, self._options.max_response_bytes
        try:
            process = subprocess.Popen(
                self._argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self._environment(sample),
                start_new_session=True,  # its children are stopped with it
            )
        except OSError as exc:
            raise ModelCallError(
                scrub(f"{self.spec}: cannot run {self._argv[0]!r}: {exc.strerror or exc}")
            ) from None
        out, err = _Drain(process, process.stdout, limit), _Drain(process, process.stderr, 2**16)
        threading.Thread(target=_feed, args=(process.stdin, prompt), daemon=True).start()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            raise ModelCallError(
                f"{self.spec}: no reply within {timeout:g} s (the command was stopped)"
            ) from None
        finally:
            _stop(process)
        if out.overflowed:
            raise ModelCallError(
                f"{self.spec}: the reply is longer than {limit:,} bytes (max_response_bytes);"
                " the command was stopped"
            )
        if process.returncode != 0:
            detail = _last_line(scrub(err.text(timeout)))
            message = f"{self.spec}: the command exited with code {process.returncode}"
            raise ModelCallError(scrub(f"{message}: {detail}" if detail else message))
        return Reply(out.text(timeout).removesuffix("\n"))


class _Drain(threading.Thread):
    """Reads a pipe to its end, keeping up to ``limit`` bytes; past it the command is stopped."""

    def __init__(self, process: Any, pipe: Any, limit: int) -> None:
        super().__init__(daemon=True)
        self.process, self.pipe, self.limit = process, pipe, limit
        self.chunks: list[bytes] = []
        self.overflowed = False
        self.start()

    def run(self) -> None:
        size = 0
        while chunk := self.pipe.read1(2**16):
            size += len(chunk)
            if size > self.limit:
                self.overflowed = True
                _stop(self.process)
                return
            self.chunks.append(chunk)

    def text(self, timeout: float) -> str:
        """What was read, decoded, newlines as in text mode (\\r\\n and \\r become \\n)."""
        self.join(timeout)
        text = b"".join(self.chunks).decode("utf-8", errors="replace")
        return text.replace("\r\n", "\n").replace("\r", "\n")


def _feed(stdin: Any, prompt: str) -> None:
    with contextlib.suppress(OSError), stdin:  # a command need not read its input
        stdin.write(prompt.encode("utf-8", errors="replace"))


def _stop(process: Any) -> None:
    """Stop a command and whatever it started (its session's process group)."""
    import signal

    with contextlib.suppress(OSError):
        if hasattr(os, "killpg"):
            os.killpg(process.pid, signal.SIGKILL)
        else:  # pragma: no cover - Windows
            process.kill()
    process.wait()


def _command_model(spec: str, command: str, options: _Options) -> Model:
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
    return _CommandModel(spec, argv, options)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


class _HTTPModel(_Poster, Model):
    """An HTTP adapter: POST JSON, retry, describe failures; each vendor gives its wire format."""

    key_optional = False  # True: a server other than the vendor's may need no key
    base_variable: str
    default_base: str
    path: str  # of the endpoint, after the base URL
    _auth_headers: Callable[[], dict[str, str]]
    _request_body: Callable[[str, int, Mapping[str, Any] | None], dict[str, Any]]  # batches too
    _reply: Callable[[Any], Reply]

    def __init__(self, spec: str, name: str, url: str, options: _Options) -> None:
        settings = {"url": _public_url(url), "max_tokens": options.max_tokens}
        super().__init__(spec, temperature=options.temperature, settings=settings)
        self.name = name
        self.options = options
        self.max_tokens = options.max_tokens
        self.timeout = options.timeout
        self.retries = options.retries
        self.max_response_bytes = options.max_response_bytes
        self._sleep = options.sleep
        self._url = url
        self._key = _key_from_environment(self.key_variable)  # in another process, read there

    @classmethod
    def open(cls, spec: str, name: str, options: _Options) -> _HTTPModel:
        """The adapter for ``name`` at the base URL given, in the environment, or the vendor's."""
        base = options.base_url or os.environ.get(cls.base_variable) or cls.default_base
        base = base.strip().rstrip("/")
        parts = urllib.parse.urlsplit(base)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ModelConfigError(
                scrub(
                    f"{spec}: the base URL must start with http:// or https:// and name a host, "
                    f"got {shorten(base, 80)!r}"
                )
            )
        path = cls.path.removeprefix("/v1") if base.endswith("/v1") else cls.path
        model = cls(spec, name, base + path, options)
        vendor = urllib.parse.urlsplit(cls.default_base).hostname
        if model._key is None and (not cls.key_optional or parts.hostname == vendor):
            hint = f" (or {cls.base_variable} pointing to a server that needs no key)"
            raise ModelConfigError(
                f"{spec} needs {cls.key_variable} in the environment"
                + (hint if cls.key_optional else "")
            )
        return model

    def _request_headers(self) -> dict[str, str]:
        from . import __version__

        return {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": f"tinyeval/{__version__}",
            **self._auth_headers(),
        }

    def __reduce__(self) -> tuple[Any, ...]:
        # sent to another process without its key or its sleep: the key is read there
        options = self.options._replace(sleep=time.sleep)
        return (type(self), (self.spec, self.name, self._url, options))

    def _secrets(self) -> list[str]:
        return [self._key] if self._key else []

    def _call(self, prompt: str, sample: int, json_schema: Mapping[str, Any] | None) -> Reply:
        return self._reply(self._post(self._request_body(prompt, sample, json_schema)))

    def _post(self, body: Mapping[str, Any]) -> Any:
        """POST ``body`` as JSON and return the decoded JSON reply, retrying."""
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        attempt = 1
        while isinstance(outcome := self._attempt(data), _Failure):
            if not outcome.retryable or attempt > self.retries:
                tries = plural(attempt, "attempt")
                raise ModelCallError(
                    scrub(f"{self.spec}: {outcome.problem} (after {tries})", self._secrets())
                )
            self._sleep(_backoff_delay(attempt, outcome.retry_after))
            attempt += 1
        return self._decode(outcome)

    def _decode(self, body: bytes) -> Any:
        server = f"{self.spec}: the server at {_host_port(self._url)} sent"
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ModelCallError(
                f"{server} a reply that is not UTF-8 text"
                f" (byte {body[exc.start]:#04x} at {exc.start:,})"
            ) from None
        try:
            return json.loads(text)
        except RecursionError:
            raise ModelCallError(f"{server} JSON nested too deeply") from None
        except ValueError:
            snippet = shorten(scrub(text.strip(), self._secrets()), 120)
            raise ModelCallError(
                scrub(f"{server} a reply that is not JSON: {snippet!r}", self._secrets())
            ) from None

    def _bad_shape(self, what: str) -> ModelCallError:
        where = _host_port(self._url)
        return ModelCallError(scrub(f"{self.spec}: unexpected reply from {where}: {what}"))

    def _reply_with(self, payload: Mapping[str, Any], text: str, names: tuple[str, str]) -> Reply:
        """A Reply with the usage (under the vendor's ``names``) and model the server reports."""
        usage: dict[str, Any] = payload["usage"] if isinstance(payload.get("usage"), dict) else {}
        counts = {"input_tokens": usage.get(names[0]), "output_tokens": usage.get(names[1])}
        reported = payload.get("model")
        return Reply(text, usage=counts, model=reported if isinstance(reported, str) else None)


def _chat(prompt: str) -> ChatPrompt:
    if isinstance(prompt, ChatPrompt):
        return prompt
    return ChatPrompt([{"role": "user", "content": prompt}])


class _OpenAIModel(_HTTPModel):
    """``POST {base}/chat/completions`` on any OpenAI-compatible server."""

    supports_json_schema = True
    key_variable = "OPENAI_API_KEY"
    base_variable = "OPENAI_BASE_URL"
    key_optional = True
    default_base = OPENAI_DEFAULT_BASE
    path = "/chat/completions"

    def _auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._key}"} if self._key else {}

    def _request_body(
        self, prompt: str, sample: int, json_schema: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        chat = _chat(prompt)
        body: dict[str, Any] = {"model": self.name, "messages": list(chat.messages), "seed": sample}
        if chat.tools:
            body["tools"] = list(chat.tools)
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
        return self._reply_with(payload, content, ("prompt_tokens", "completion_tokens"))


class _AnthropicModel(_HTTPModel):
    """``POST {base}/v1/messages``, the Anthropic Messages API."""

    key_variable = "ANTHROPIC_API_KEY"
    base_variable = "ANTHROPIC_BASE_URL"
    default_base = ANTHROPIC_DEFAULT_BASE
    path = "/v1/messages"

    def _auth_headers(self) -> dict[str, str]:
        return {"x-api-key": self._key or "", "anthropic-version": ANTHROPIC_VERSION}

    def _request_body(
        self, prompt: str, sample: int, json_schema: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        chat = _chat(prompt)
        body: dict[str, Any] = {
            "model": self.name,
            "max_tokens": self.max_tokens or ANTHROPIC_DEFAULT_MAX_TOKENS,
            "messages": list(chat.anthropic_messages),
        }
        if chat.system:
            body["system"] = chat.system
        if chat.tools:
            body["tools"] = [_anthropic_tool(tool) for tool in chat.tools]
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
        return self._reply_with(payload, "".join(texts), ("input_tokens", "output_tokens"))


def _anthropic_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    inner = tool.get("function")  # an OpenAI function definition as a Messages API tool
    function: Mapping[str, Any] = inner if isinstance(inner, Mapping) else tool
    return {
        "name": function.get("name"),
        "description": function.get("description", ""),
        "input_schema": function.get("parameters") or {"type": "object", "properties": {}},
    }
