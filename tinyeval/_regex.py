"""Bounding user regexes: a shape known to backtrack exponentially is refused; a pattern that can
backtrack runs in a worker process killed past its time budget (``re`` cannot be stopped).

>>> backtracking(re.compile(r"^(a+)+$"))[1], backtracking(re.compile(r"\\d+,(a++)+"))
('it nests an unbounded quantifier inside another, as in (a+)+', (True, None))
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import itertools
import json
import queue
import re
import sys
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:  # started on the first search that needs a time limit
    import subprocess

REGEX_TIMEOUT = 2.0
"""Seconds a user regex may take on one output before its check fails."""

# the parser and compiler behind re.compile (private: only the tree they build is read)
_parser: Any = importlib.import_module("re._parser")
_compiler: Any = importlib.import_module("re._compiler")
_c: Any = importlib.import_module("re._constants")
_UNBOUNDED = 1 << 16  # a {m,n} quantifier with n above this counts as unbounded
_REPEATS = (_c.MAX_REPEAT, _c.MIN_REPEAT)
_KEEPS = (_c.ATOMIC_GROUP, _c.POSSESSIVE_REPEAT)  # give nothing back
_SINGLE = (_c.LITERAL, _c.NOT_LITERAL, _c.IN, _c.ANY)  # the nodes that match one character
Item: TypeAlias = "tuple[Any, Any]"  # one node of a parsed pattern: (op, argument)
Starts: TypeAlias = "Callable[[list[Item]], set[int]]"  # the sample characters nodes match
_WORKER_SOURCE = """
import json, re, sys
for line in sys.stdin:
    pattern, flags, text = json.loads(line)
    found = re.search(pattern, text, flags)
    print(json.dumps(found and found.span()), flush=True)
"""
_LOCK = threading.Lock()
_WORKER: list[subprocess.Popen[str]] = []  # the one worker process, once started


def _nodes(part: Any, *, into_keeps: bool = False) -> Iterator[Item]:
    """Every node in part of a parsed pattern, depth first; in atomic parts with ``into_keeps``."""
    if isinstance(part, _parser.SubPattern):
        for op, argument in part:
            yield op, argument
            if into_keeps or op not in _KEEPS:
                yield from _nodes(argument, into_keeps=into_keeps)
    elif isinstance(part, list | tuple):  # a node's argument: SubPatterns among other values
        for item in part:
            yield from _nodes(item, into_keeps=into_keeps)


def _has_unbounded(sequence: Any) -> bool:
    return any(op in _REPEATS and argument[1] > _UNBOUNDED for op, argument in _nodes(sequence))


def _first_items(sequence: Any) -> list[Item] | None:
    """The nodes the first character a sequence matches comes from; None when unknown."""
    items: list[Item] = []
    for op, argument in sequence:
        if op in _SINGLE:
            return [*items, (op, argument)]
        if op is _c.SUBPATTERN or op is _c.ATOMIC_GROUP:
            inner = _first_items(argument[3] if op is _c.SUBPATTERN else argument)
            return None if inner is None else items + inner
        if op in _REPEATS or op is _c.POSSESSIVE_REPEAT or op is _c.BRANCH:
            for alternative in argument[1] if op is _c.BRANCH else [argument[2]]:
                inner = _first_items(alternative)
                if inner is None:
                    return None
                items += inner
            if op is _c.BRANCH or argument[0] > 0:  # (an empty alternative is not followed)
                return items
        elif op is not _c.AT:
            return None  # a back-reference, a lookaround, a conditional: not followed
    return items


def _char_items(sequence: Any) -> list[Item]:
    return [node for node in _nodes(sequence, into_keeps=True) if node[0] in _SINGLE]


def _codes_in(sequence: Any) -> Iterator[int]:
    """Every literal code point and range end in a parsed pattern (samples of its alphabet)."""
    for op, argument in _char_items(sequence):
        for kind, value in argument if op is _c.IN else [(op, argument)]:
            if kind is _c.LITERAL or kind is _c.NOT_LITERAL:
                yield value
            elif kind is _c.RANGE:
                yield from value


def _ambiguous_branch(sequence: Any, starts: Starts) -> bool:
    for op, argument in _nodes(sequence):
        if op is _c.BRANCH:
            alternatives = [(list(alt), _first_items(alt)) for alt in argument[1]]
            for (one, first), (other, second) in itertools.combinations(alternatives, 2):
                # (a|a) is ambiguous; an empty or unknown start is not claimed to be
                if one == other or (first and second and starts(first) & starts(second)):
                    return True
    return False


def _flatten(sequence: Any) -> Iterator[Item]:
    for op, argument in sequence:
        if op is _c.SUBPATTERN:
            yield from _flatten(argument[3])
        else:
            yield op, argument


def _mandatory_items(sequence: Any) -> Iterator[Item]:
    for op, argument in _flatten(sequence):
        if op in _SINGLE:
            yield op, argument
        elif op is _c.MAX_REPEAT and argument[0] >= 1 and argument[1] <= _UNBOUNDED:
            yield from _mandatory_items(argument[2])


def _separated(body: Any, starts: Starts) -> bool:
    """Whether each pass of a repeated body must match a character its inner unbounded
    quantifiers cannot, as the comma in ``(\\d+,)*``: then there is one way to match."""
    items = list(_flatten(body))
    inner: list[Item] = []
    for op, argument in items:
        if op in _REPEATS and argument[1] > _UNBOUNDED:
            inner += _char_items(argument[2])
        elif op is _c.BRANCH and _has_unbounded(argument):
            if len(items) > 1 or not all(_separated(alt, starts) for alt in argument[1]):
                return False
        elif op not in _KEEPS and _has_unbounded(argument):
            return False  # an unbounded quantifier deeper in: not analysed
    return not inner or any(
        not starts([item]) & starts([other]) for item in _mandatory_items(items) for other in inner
    )


def _exponential_shape(sequence: Any, starts: Starts) -> str | None:
    for op, argument in _nodes(sequence):
        if op in _REPEATS and argument[1] > _UNBOUNDED:
            body = argument[2]
            if _has_unbounded(body) and not _separated(body, starts):
                return "it nests an unbounded quantifier inside another, as in (a+)+"
            if _ambiguous_branch(body, starts):
                return (
                    "it repeats, without bound, alternatives that can match the same"
                    " text, as in (a|a)* or (ab|a.)*"
                )
    return None


def backtracking(compiled: re.Pattern[str]) -> tuple[bool, str | None]:
    """Whether ``compiled`` can backtrack (is not linear), and why it may take exponential time."""
    parsed = _parser.parse(compiled.pattern, compiled.flags & ~re.UNICODE)
    if not _has_unbounded(parsed):
        return False, None
    samples = sorted({*range(128), 0xA0, 0xE9, 0x0661, 0x4E2D, *_codes_in(parsed)})

    def starts(items: list[Item]) -> set[int]:
        found: set[int] = set()
        for item in items:  # each node compiled alone, under the pattern's flags
            one = _compiler.compile(_parser.SubPattern(parsed.state, [item]))
            found.update(code for code in samples if one.match(chr(code)))
        return found

    return True, _exponential_shape(parsed, starts)


@atexit.register
def _stop_worker() -> None:
    while _WORKER:
        process = _WORKER.pop()
        process.kill()
        process.communicate()  # waits, and closes its pipes


def _search_in_worker(
    compiled: re.Pattern[str], text: str, timeout: float
) -> tuple[int, int] | str | None:
    """The worker's ``(start, end)`` or None, or why it was stopped; OSError if none can start."""
    import subprocess

    if not _WORKER or _WORKER[0].poll() is not None:
        _stop_worker()
        _WORKER.append(
            subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _WORKER_SOURCE],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                encoding="utf-8",
                errors="surrogatepass",
            )
        )
    stdin, stdout = _WORKER[0].stdin, _WORKER[0].stdout
    assert stdin is not None and stdout is not None
    request = json.dumps([compiled.pattern, compiled.flags, text]) + "\n"
    replies: queue.SimpleQueue[Any] = queue.SimpleQueue()

    def exchange() -> None:  # in a thread: the worker may never answer
        try:
            stdin.write(request)
            stdin.flush()
            replies.put(json.loads(stdout.readline()))  # "" (it stopped) is no JSON
        except (OSError, ValueError):
            replies.put("the regex worker stopped")

    threading.Thread(target=exchange, daemon=True).start()
    try:
        found = replies.get(timeout=timeout)
    except queue.Empty:
        found = f"no result within {timeout:g} s"
    if isinstance(found, str):
        _stop_worker()
        return (
            f"regex stopped on an output of {len(text):,} characters: {found};"
            " the pattern backtracks too much on it"
        )
    return None if found is None else (found[0], found[1])


def bounded_search(
    compiled: re.Pattern[str], backtracks: bool, output: str, timeout: float
) -> tuple[int, int] | str | None:
    """``(start, end)``, None, or why the worker running a pattern that backtracks stopped it."""
    if backtracks:  # without an interpreter to start a worker with (OSError): in-process, unbounded
        with contextlib.suppress(OSError), _LOCK:
            return _search_in_worker(compiled, output, timeout)
    found = compiled.search(output)
    return None if found is None else found.span()
