"""Bounding user regexes: the shapes known to backtrack exponentially are refused when a check
is built; a pattern with any unbounded quantifier runs in a worker process killed past its time
budget (a thread running ``re`` cannot be stopped).

>>> exponential_shape(re.compile(r"^(a+)+$")) is not None, can_backtrack(re.compile("abc"))
(True, False)
"""

from __future__ import annotations

import atexit
import importlib
import itertools
import json
import queue
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import suppress
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # started on the first search that needs a time limit
    import subprocess

REGEX_TIMEOUT = 2.0
"""Seconds a user regex may take on one output before its check fails."""

# the parser behind re.compile (private: only the tree it builds is read)
_sre_parser: Any = importlib.import_module("re._parser")
_sre_constants: Any = importlib.import_module("re._constants")

_UNBOUNDED = 1 << 16  # a {m,n} quantifier with n above this counts as unbounded
_REPEATS = (_sre_constants.MAX_REPEAT, _sre_constants.MIN_REPEAT)
_KEEPS = (_sre_constants.ATOMIC_GROUP, _sre_constants.POSSESSIVE_REPEAT)  # give nothing back


def _walk_subpatterns(value: Any) -> Iterator[Any]:
    """Every nested parsed sub-sequence inside one node's argument."""
    if isinstance(value, _sre_parser.SubPattern):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _walk_subpatterns(item)


def _has_unbounded(sequence: Any) -> bool:
    """Whether a parsed sequence holds a backtracking unbounded quantifier."""
    for op, argument in sequence:
        if op in _REPEATS and argument[1] > _UNBOUNDED:
            return True
        if op in _KEEPS:
            continue
        if any(_has_unbounded(sub) for sub in _walk_subpatterns(argument)):
            return True
    return False


_SINGLE = ("LITERAL", "NOT_LITERAL", "IN", "ANY")


def _first_items(sequence: Any) -> list[tuple[Any, Any]] | None:
    """What the first character a sequence matches can be; None when unknown."""
    items: list[tuple[Any, Any]] = []
    for op, argument in sequence:
        if op is _sre_constants.AT:
            continue
        if str(op) in _SINGLE:
            return [*items, (op, argument)]
        if op in (_sre_constants.SUBPATTERN, _sre_constants.ATOMIC_GROUP):
            inner = _first_items(argument[3] if op is _sre_constants.SUBPATTERN else argument)
            return None if inner is None else items + inner
        if op in _REPEATS or op is _sre_constants.POSSESSIVE_REPEAT:
            inner = _first_items(argument[2])
            if inner is None:
                return None
            items += inner
            if argument[0] > 0:
                return items
            continue
        if op is _sre_constants.BRANCH:
            for alternative in argument[1]:
                inner = _first_items(alternative)
                if inner is None:
                    return None
                items += inner
            return items  # an empty alternative is ignored: a slight under-estimate
        return None  # a back-reference, a lookaround, a conditional: not followed
    return items


_CATEGORY_TESTS = {  # CATEGORY_DIGIT: \d, CATEGORY_NOT_DIGIT: \D, ...
    f"CATEGORY_{negated}{name}": re.compile("\\" + (letter.upper() if negated else letter))
    for name, letter in (("DIGIT", "d"), ("SPACE", "s"), ("WORD", "w"))
    for negated in ("", "NOT_")
}


def _in_class(items: Any, code: int) -> bool:
    negate = found = False
    for op, argument in items:
        if op is _sre_constants.NEGATE:
            negate = True
        elif op is _sre_constants.LITERAL:
            found = found or argument == code
        elif op is _sre_constants.RANGE:
            found = found or argument[0] <= code <= argument[1]
        elif op is _sre_constants.CATEGORY:
            test = _CATEGORY_TESTS.get(str(argument))
            found = found or test is None or test.match(chr(code)) is not None
        else:
            found = True  # a class item not modelled here: assume it may match
    return found != negate


def _may_start_with(item: tuple[Any, Any], code: int) -> bool:
    op, argument = item
    if op is _sre_constants.IN:
        return _in_class(argument, code)
    if op is _sre_constants.LITERAL or op is _sre_constants.NOT_LITERAL:
        return (argument == code) is (op is _sre_constants.LITERAL)
    return True  # ANY


def _codes_in(sequence: Any) -> Iterator[int]:
    """Every literal code point and range end in a parsed pattern (the overlap samples)."""
    for op, argument in _char_items(sequence):
        for kind, value in argument if op is _sre_constants.IN else [(op, argument)]:
            if kind in (_sre_constants.LITERAL, _sre_constants.NOT_LITERAL):
                yield value
            elif kind is _sre_constants.RANGE:
                yield from value


def _overlap(first: list[tuple[Any, Any]], second: list[tuple[Any, Any]], samples: Any) -> bool:
    return any(
        any(_may_start_with(a, code) for a in first)
        and any(_may_start_with(b, code) for b in second)
        for code in samples
    )


def _ambiguous_branch(sequence: Any, samples: Any) -> bool:
    """Whether a sequence holds alternatives that can start with the same character."""
    for op, argument in sequence:
        if op is _sre_constants.BRANCH:
            alternatives = [(list(alt), _first_items(alt)) for alt in argument[1]]
            for (one, first), (other, second) in itertools.combinations(alternatives, 2):
                if one == other:
                    return True  # the same alternative twice: (a|a)
                if first and second and _overlap(first, second, samples):
                    return True  # (an empty or unknown start is not claimed ambiguous)
        if op in _KEEPS:
            continue
        if any(_ambiguous_branch(sub, samples) for sub in _walk_subpatterns(argument)):
            return True
    return False


def _char_items(sequence: Any) -> list[tuple[Any, Any]]:
    """Every single-character item anywhere in a parsed sequence."""
    found: list[tuple[Any, Any]] = []
    for op, argument in sequence:
        if str(op) in _SINGLE:
            found.append((op, argument))
        for sub in _walk_subpatterns(argument):
            found += _char_items(sub)
    return found


def _mandatory_items(sequence: Any) -> list[tuple[Any, Any]]:
    """The single characters a sequence must match outside its unbounded quantifiers."""
    found: list[tuple[Any, Any]] = []
    for op, argument in sequence:
        if str(op) in _SINGLE:
            found.append((op, argument))
        elif op is _sre_constants.SUBPATTERN:
            found += _mandatory_items(argument[3])
        elif op is _sre_constants.MAX_REPEAT and argument[0] >= 1 and argument[1] <= _UNBOUNDED:
            found += _mandatory_items(argument[2])
    return found


def _flatten(sequence: Any) -> Iterator[tuple[Any, Any]]:
    for op, argument in sequence:
        if op is _sre_constants.SUBPATTERN:
            yield from _flatten(argument[3])
        else:
            yield op, argument


def _separated(body: Any, samples: Any) -> bool:
    """Whether each pass of a repeated body must match a character its inner
    unbounded quantifiers cannot, as the comma in ``(\\d+,)*``: then the
    passes cannot trade characters and there is one way to match."""
    items = list(_flatten(body))
    inner: list[tuple[Any, Any]] = []
    for op, argument in items:
        if op in _REPEATS and argument[1] > _UNBOUNDED:
            inner += _char_items(argument[2])
        elif op is _sre_constants.BRANCH and _has_unbounded([(op, argument)]):
            if len(items) > 1 or not all(_separated(alt, samples) for alt in argument[1]):
                return False
        elif _has_unbounded([(op, argument)]):
            return False  # an unbounded quantifier deeper in: not analysed
    if not inner:
        return True
    mandatory = _mandatory_items(items)
    return any(not _overlap([item], [other], samples) for item in mandatory for other in inner)


def _exponential_shape(sequence: Any, samples: Any) -> str | None:
    """Why a parsed pattern can backtrack exponentially, or None."""
    for op, argument in sequence:
        if op in _KEEPS:
            continue
        if op in _REPEATS and argument[1] > _UNBOUNDED:
            body = argument[2]
            if _has_unbounded(body) and not _separated(body, samples):
                return "it nests an unbounded quantifier inside another, as in (a+)+"
            if _ambiguous_branch(body, samples):
                return (
                    "it repeats, without bound, alternatives that can match the same"
                    " text, as in (a|a)* or (ab|a.)*"
                )
        for sub in _walk_subpatterns(argument):
            why = _exponential_shape(sub, samples)
            if why:
                return why
    return None


def exponential_shape(compiled: re.Pattern[str]) -> str | None:
    """Why ``compiled`` can take exponential time, or None when no known shape is found.

    >>> exponential_shape(re.compile(r"(a++)+$")) is None  # possessive: no backtracking
    True
    """
    parsed = _sre_parser.parse(compiled.pattern, compiled.flags & ~re.UNICODE)
    samples = sorted({*range(128), 0xA0, 0xE9, 0x0661, 0x4E2D, *_codes_in(parsed)})
    return _exponential_shape(parsed, samples)


def can_backtrack(compiled: re.Pattern[str]) -> bool:
    """Whether ``compiled`` has an unbounded quantifier, so its time is not linear.

    >>> can_backtrack(re.compile(r"\\d{22}")), can_backtrack(re.compile(r"\\s+$"))
    (False, True)
    """
    return _has_unbounded(_sre_parser.parse(compiled.pattern, compiled.flags & ~re.UNICODE))


_WORKER_SOURCE = """
import json, re, sys
cache = {}
for line in sys.stdin:
    pattern, flags, text = json.loads(line)
    key = (pattern, flags)
    if key not in cache:
        cache.clear() if len(cache) > 256 else None
        cache[key] = re.compile(pattern, flags)
    found = cache[key].search(text)
    reply = None if found is None else [found.start(), found.end()]
    sys.stdout.write(json.dumps(reply) + "\\n")
    sys.stdout.flush()
"""


class _RegexWorker:
    """One process that runs searches; killed and replaced when one overruns."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[str] | None = None

    def _kill(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            process.kill()
            process.wait()
            for stream in (process.stdin, process.stdout):
                if stream is not None:
                    with suppress(OSError):
                        stream.close()

    def search(
        self, compiled: re.Pattern[str], text: str, timeout: float
    ) -> tuple[int, int] | None:
        """``(start, end)`` of the first match, None without one; TimeoutError past ``timeout``."""
        import subprocess

        request = json.dumps([compiled.pattern, compiled.flags, text]) + "\n"
        with self._lock:
            if self._process is None or self._process.poll() is not None:
                self._process = subprocess.Popen(
                    [sys.executable, "-I", "-S", "-c", _WORKER_SOURCE],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    text=True,
                    encoding="utf-8",
                    errors="surrogatepass",
                )
            stdin, stdout = self._process.stdin, self._process.stdout
            assert stdin is not None and stdout is not None
            replies: queue.SimpleQueue[str] = queue.SimpleQueue()

            def exchange() -> None:  # in a thread: the worker may never answer
                try:
                    stdin.write(request)
                    stdin.flush()
                    replies.put(stdout.readline())
                except (OSError, ValueError):
                    replies.put("")

            threading.Thread(target=exchange, daemon=True).start()
            try:
                reply = replies.get(timeout=timeout)
            except queue.Empty:
                self._kill()
                raise TimeoutError(f"no result within {timeout:g} s") from None
            if not reply:
                self._kill()
                raise TimeoutError("the regex worker stopped")
        found = json.loads(reply)
        return None if found is None else (found[0], found[1])


_WORKER = _RegexWorker()
atexit.register(_WORKER._kill)


def bounded_search(
    compiled: re.Pattern[str], backtracks: bool, output: str, timeout: float
) -> tuple[int, int] | str | None:
    """``(start, end)``, None, or why the search was stopped (a check detail); a pattern that
    can backtrack runs in the worker under ``timeout`` seconds.

    >>> bounded_search(re.compile("b+"), True, "abba", 2.0)
    (1, 3)
    """
    if backtracks:
        try:
            return _WORKER.search(compiled, output, timeout)
        except TimeoutError as error:
            return (
                f"regex stopped on an output of {len(output):,} characters: {error};"
                " the pattern backtracks too much on it"
            )
        except OSError:  # no interpreter to start a worker with: run in-process, unbounded
            pass
    found = compiled.search(output)
    return None if found is None else found.span()
