"""The built-in offline judge: a small, deterministic, lexical stand-in for a model.

``builtin_judge(prompt, *, sample=0) -> str`` is a ``call_model``: it receives the
same prompt a real model would, reads the criterion and the ``<<<...>>>``
blocks back out of it, and answers in the format the prompt asks for (a
PASS/FAIL line and one sentence, or the evidence-first JSON object, or A/B/TIE
for a pairwise prompt). Its answer then goes through the same parser as a real
model's. It needs no key and no network, so examples and tests run anywhere.
It ignores ``sample``: the same prompt always gets the same answer.

It knows three of the built-in criteria and judges them by surface evidence
only, in the language-neutral ways described below; for any other criterion
(or when the text it needs is missing) it answers a sentence saying it cannot
judge, which the parser counts as *unparsed*, never as a pass.

``unsupported-claims`` (needs a context)
    The response is split into claims (sentences and list items). A question
    is not a claim, but a statement with a question tag is (``"..., ¿ok?"``),
    and so are the numbers and dates a question states; a sentence about the
    response itself (``"Here's a summary of the passage:"``) is not, but what
    follows its colon is. Every number, amount or date in a claim must occur in the
    context, compared by value: ``1.500``, ``1,500`` and ``1500`` are equal,
    as are ``1.250,50`` and ``1,250.50`` (see :func:`parse_number_tokens`).
    A token such as ``1.500`` that can be read two ways is supported if the
    context supports either reading, and the reason says it was ambiguous.
    Numeric dates are compared by their parts (``12/05/2023`` matches
    ``2023-05-12`` and ``12 de mayo de 2023``); a date without a year matches a
    context date that has one. Besides, at least half of a claim's checkable
    items (its content words, that is words that are not Spanish or English
    stopwords, plus its numbers) must occur in the context. The FAIL reason
    quotes the first unsupported claim.
``answers-the-question`` (needs a question)
    FAIL for an empty response, a refusal ("I can't", "no sé"...) or a
    response made only of questions; otherwise PASS when at least a third of
    the question's content words reappear in the response.
``refuses-when-ambiguous``
    PASS when the response contains a refusal or a request for clarification
    (a list of Spanish and English phrases, or any question sentence), FAIL
    otherwise. It cannot tell whether the question *was* ambiguous: use this
    criterion on cases that are.

Limits, honestly: it reads words, not meaning. Paraphrases and synonyms look
unsupported; a false statement built from the context's own words and
numbers looks supported; negation is invisible ("not 1.500" and "1.500" are
the same to it); numbers written as words are ignored; units and currencies
are not compared (``USD 1,500`` is supported by ``1,500 pesos``); a response in
a different language from its context will look unsupported. Words are
compared after case folding, accent removal and stripping a plural ``-s`` or
``-es``; zero-width and other invisible characters are ignored. Use it to run
the pipeline offline and as a floor to beat, and calibrate it like any judge.

>>> from tinyeval.judge import Judge
>>> judge = Judge("unsupported-claims")
>>> judge(builtin_judge, response="Debés 1500 pesos.", context="Deuda: 1.500 pesos.").verdict
'PASS'
>>> print(judge(builtin_judge, response="Debés 2.000 pesos.", context="Deuda: 1.500 pesos.").reason)
Unsupported claim: "Debés 2.000 pesos.": '2.000', read as 2000 or 2, does not appear in the context.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import NamedTuple

from ..errors import TinyevalError
from ..judge import CRITERIA

__all__ = [
    "ANSWER_OVERLAP",
    "BLOCK_NAMES",
    "CLAIM_OVERLAP",
    "NumberToken",
    "builtin_judge",
    "content_words",
    "parse_number_tokens",
    "read_blocks",
    "split_claims",
]

# === The prompt's blocks, read back =============================================

BLOCK_NAMES = (
    "SYSTEM PROMPT",
    "EARLIER TURNS",
    "QUESTION",
    "AGENT STEPS",
    "CONTEXT",
    "RESPONSE",
    "RESPONSE A",
    "RESPONSE B",
)


def _block_pattern(name: str) -> re.Pattern[str]:
    opening, closing = re.escape(f"<<<{name}>>>"), re.escape(f"<<<END {name}>>>")
    return re.compile(f"^{opening}\n(.*?)\n{closing}$", re.MULTILINE | re.DOTALL)


_BLOCK_PATTERNS = {name: _block_pattern(name) for name in BLOCK_NAMES}


def read_blocks(prompt: str) -> tuple[dict[str, str], str]:
    """``(blocks, rest)``: the text of each block of a rendered prompt by name, as shown,
    and the prompt with the blocks cut out (the trusted text).

    >>> blocks, rest = read_blocks("Judge this.\\n<<<RESPONSE>>>\\nHi.\\n<<<END RESPONSE>>>\\n")
    >>> blocks, rest
    ({'RESPONSE': 'Hi.'}, 'Judge this.\\n\\n')
    """
    blocks: dict[str, str] = {}
    for name, pattern in _BLOCK_PATTERNS.items():
        match = pattern.search(prompt)
        if match:
            blocks[name] = match.group(1)
            prompt = prompt[: match.start()] + prompt[match.end() :]
    return blocks, prompt


CLAIM_OVERLAP = Fraction(1, 2)
"""A claim needs at least this share of its content words and numbers in the context."""

ANSWER_OVERLAP = Fraction(1, 3)
"""A response needs at least this share of the question's content words."""

_QUOTE_LIMIT = 200


class _CannotJudge(TinyevalError):
    """Raised inside this module when the prompt lacks what a criterion needs."""


# === Numbers and dates ============================================================


class NumberToken(NamedTuple):
    """A number or date found in text.

    ``readings`` are the canonical values it may stand for (one, or two when
    ``ambiguous``); for a date they are its parts in written order.
    """

    text: str
    kind: str
    readings: tuple[str, ...]
    ambiguous: bool


_MONTHS = {
    name: number
    for number, names in enumerate(
        [
            "january jan enero ene",
            "february feb febrero",
            "march mar marzo",
            "april apr abril abr",
            "may mayo",
            "june jun junio",
            "july jul julio",
            "august aug agosto ago",
            "september sept sep septiembre setiembre set",
            "october oct octubre",
            "november nov noviembre",
            "december dec diciembre dic",
        ],
        start=1,
    )
    for name in names.split()
}
_MONTH = "(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY_FIRST = re.compile(
    r"(?<![\w.,])(?P<day>\d{1,2})(?:st|nd|rd|th|º|°)?\s+(?:de\s+|of\s+)?" + _MONTH
    + r"(?:,?\s+(?:de\s+|del\s+|of\s+)?(?P<year>\d{4}))?(?!\w)",
    re.IGNORECASE,
)  # fmt: skip
_MONTH_FIRST = re.compile(
    r"(?<!\w)" + _MONTH + r"\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?"
    r"(?:,?\s+(?P<year>\d{4}))?(?![\w.,]\d|\w)",
    re.IGNORECASE,
)  # fmt: skip
_NUMERIC_DATE = re.compile(
    r"(?<![\w.,/-])(?P<a>\d{1,4})(?P<sep>[/.-])(?P<b>\d{1,2})(?P=sep)(?P<c>\d{1,4})(?![\w/-]|[.,]\d)"
)
_NUMBER = re.compile(r"(?<!\w)(?<!\w[.,])\d+(?:[.,]\d+)*")


def _canonical(number: str) -> str:
    value = Decimal(number).normalize()
    return format(value, "f")


def _grouped(groups: list[str]) -> bool:
    """True for thousands grouping: 1-3 digits, then groups of exactly 3."""
    return (
        1 <= len(groups[0]) <= 3
        and not (groups[0].startswith("0") and len(groups) > 1)
        and all(len(group) == 3 for group in groups[1:])
    )


def _number_readings(text: str) -> tuple[tuple[str, ...], bool]:
    separators = [char for char in text if char in ".,"]
    if not separators:
        return (_canonical(text),), False
    groups = re.split(r"[.,]", text)
    if len(set(separators)) == 2:  # the last separator is the decimal one
        cut = max(text.rfind("."), text.rfind(","))
        whole = re.sub(r"[.,]", "", text[:cut])
        return (_canonical(f"{whole}.{text[cut + 1 :]}"),), False
    if len(groups) > 2:  # 1.500.000 or 1,500,000; anything else is compared as written
        return ((_canonical("".join(groups)),), False) if _grouped(groups) else ((text,), False)
    left, right = groups
    if len(right) == 3 and _grouped(groups):  # 1.500: 1500 (thousands) or 1.5 (decimal)
        return (_canonical(left + right), _canonical(f"{left}.{right}")), True
    return (_canonical(f"{left}.{right}"),), False


def _plausible_date(parts: list[str]) -> bool:
    numbers = [int(part) for part in parts]
    if len(parts[0]) == 4:  # year-month-day
        return 1 <= numbers[1] <= 12 and 1 <= numbers[2] <= 31
    if len(parts[2]) in (2, 4):  # day-month-year or month-day-year
        day_month = (numbers[0], numbers[1])
        return any(1 <= d <= 31 and 1 <= m <= 12 for d, m in (day_month, day_month[::-1]))
    return False


def _date_tokens(text: str) -> list[tuple[int, int, NumberToken]]:
    found: list[tuple[int, int, NumberToken]] = []
    for match in _NUMERIC_DATE.finditer(text):
        parts = [match.group("a"), match.group("b"), match.group("c")]
        if _plausible_date(parts):
            readings = tuple(str(int(part)) for part in parts)
            found.append(
                (match.start(), match.end(), NumberToken(match.group(), "date", readings, False))
            )
    for pattern in (_DAY_FIRST, _MONTH_FIRST):
        for match in pattern.finditer(text):
            day = int(match.group("day"))
            if not 1 <= day <= 31:
                continue
            readings = (str(day), str(_MONTHS[match.group("month").lower()]))
            if match.group("year"):
                readings += (str(int(match.group("year"))),)
            found.append(
                (match.start(), match.end(), NumberToken(match.group(), "date", readings, False))
            )
    found.sort(key=lambda item: (item[0], -item[1]))
    kept: list[tuple[int, int, NumberToken]] = []
    for start, end, token in found:  # the first (longest) date at each place wins
        if not kept or start >= kept[-1][1]:
            kept.append((start, end, token))
    return kept


def parse_number_tokens(text: str) -> list[NumberToken]:
    """Every number and date in ``text``, with the values each may stand for.

    Number conventions: Spanish and Argentine ``1.250,50`` and English
    ``1,250.50`` are both 1250.5 (with both separators the last one is the
    decimal point); ``1.500.000`` and ``1,500,000`` are grouped thousands. A
    single separator followed by exactly three digits (``1.500``, ``1,500``)
    is ambiguous: 1500 or 1.5. A separator followed by other than three digits
    is a decimal point (``1,5`` and ``1.5`` are 1.5). A token that fits none of
    these (``1.2.3``) is kept as written. Numeric dates (``12/05/2023``,
    ``2023-05-12``, ``12.05.2023``) and written dates (``12 de mayo de 2023``,
    ``May 12, 2023``, ``12 de mayo``) become date tokens whose readings are
    their parts, in written order, the month as a number.

    >>> for token in parse_number_tokens("Pagá $1.250,50 o US$ 1,250.50; quedan 1.500."):
    ...     print(token.text, token.readings, token.ambiguous)
    1.250,50 ('1250.5',) False
    1,250.50 ('1250.5',) False
    1.500 ('1500', '1.5') True
    >>> [t.readings for t in parse_number_tokens("Vence el 12 de mayo de 2023 (2023-05-12).")]
    [('12', '5', '2023'), ('2023', '5', '12')]
    >>> [t.readings for t in parse_number_tokens("1,5 kg, 0.500 l, 3,000,000 and v1.2.3")]
    [('1.5',), ('0.5',), ('3000000',)]
    """
    text = _clean(text)
    dates = _date_tokens(text)
    masked = list(text)
    for start, end, _ in dates:
        masked[start:end] = " " * (end - start)
    tokens = [(start, token) for start, _, token in dates]
    for match in _NUMBER.finditer("".join(masked)):
        try:
            readings, ambiguous = _number_readings(match.group())
        except InvalidOperation:  # pragma: no cover - the pattern only matches digits
            continue
        tokens.append((match.start(), NumberToken(match.group(), "number", readings, ambiguous)))
    return [token for _, token in sorted(tokens, key=lambda item: item[0])]


# === Words ========================================================================

_STOPWORD_TEXT = """
    a about above after again against all also am an and any are aren't as at be because been
    before being below between both but by can can't cannot could couldn't did didn't do does
    doesn't doing don't down during each either else etc ever every few for from further get
    gets got had hadn't has hasn't have haven't having he he's her here here's hers herself him
    himself his how how's however i i'd i'll i'm i've if in into is isn't it it's its itself
    just let's may me might more most much must mustn't my myself neither no nor not now of off
    on once only or other ought our ours ourselves out over own per please same shall she she'd
    she'll she's should shouldn't so some such than that that's the their theirs them themselves
    then there there's these they they'd they'll they're they've this those though through to too
    under until up upon us very via was wasn't we we'd we'll we're we've were weren't what what's
    when when's where where's whether which while who who's whom whose why will with won't would
    wouldn't yes yet you you'd you'll you're you've your yours yourself yourselves
    hello hi hey thanks thank sure okay ok certainly glad happy help hope let know sorry great well
    anything feel free welcome regards
    a al algo algun alguna algunas alguno algunos ante antes asi aun aunque bajo cada como con
    contra cual cuales cuando cuanto cuanta cuantos cuantas de del desde donde durante e el ella
    ellas ello ellos en entre era eran eres es esa esas ese eso esos esta estaba estado estan
    estar estas este esto estos estoy fue fueron fui ha habia han has hasta hay he la las le les
    lo los mas me mi mis mucho muy nada ni no nos nosotros o os otra otras otro otros para pero
    poco por porque pues que quien quienes se sea segun ser si sido siempre sin sino sobre son su
    sus tal tambien tan tanto te tenes tener tiene tienen todo todos toda todas tu tus u un una
    unas uno unos usted ustedes vos y ya yo puede pueden podes debe deben
    hola gracias claro gusto ayudar ayuda ayudarte ayudarle saludos perfecto bueno vale espero
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)*")


def _clean(text: str) -> str:
    """NFKC, without invisible format characters (zero-width, BOM, direction marks)."""
    text = unicodedata.normalize("NFKC", text)
    return "".join(char for char in text if unicodedata.category(char) != "Cf")


def _fold(word: str) -> str:
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def _stem(word: str) -> str:
    """Strip one final ``s`` (not ``ss``), then one final ``e``, from words over 3 letters.

    Crude on purpose: it only has to map ``price``/``prices``, ``mes``/``meses``,
    ``dólar``/``dólares`` and ``arrive``/``arrives`` to the same key.
    """
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


def _keyed_words(text: str) -> dict[str, str]:
    """Content words of ``text``: stem -> the first word (folded) that gave it."""
    words = _WORD.findall(_fold(_clean(text)).replace("\u2019", "'"))
    keyed: dict[str, str] = {}
    for word in words:
        if word not in _STOPWORDS:
            keyed.setdefault(_stem(word), word)
    return keyed


def content_words(text: str) -> list[str]:
    """The words of ``text`` that carry content, as comparison keys, in order.

    Lower-cased, accents removed, Spanish and English stopwords (and courtesy
    words such as "thanks", "hola") dropped, a final ``s`` and then a final
    ``e`` stripped, duplicates dropped.

    >>> content_words("¿Cuándo llegan las transferencias? The transfers arrive on Monday.")
    ['llegan', 'transferencia', 'transfer', 'arriv', 'monday']
    >>> content_words("prices, price, meses, mes") == ["pric", "mes"]
    True
    """
    return list(_keyed_words(text))


_BULLET = re.compile(r"^\s*(?:[-*•·]|\d{1,2}[.)])\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+")


def split_claims(text: str) -> list[str]:
    """Split a response into sentences and list items, each a substring of ``text``.

    Lines are split first, list bullets (``-``, ``*``, ``1.``) dropped, then
    sentences end at ``.``, ``!``, ``?`` or ``…`` followed by white space (so
    ``1.500`` and ``3.5`` stay whole).

    >>> split_claims("Your balance is 1.500 pesos. Anything else?\\n- Fee: 2,5%")
    ['Your balance is 1.500 pesos.', 'Anything else?', 'Fee: 2,5%']
    """
    claims: list[str] = []
    for line in text.splitlines():
        line = _BULLET.sub("", line, count=1)
        claims.extend(part.strip() for part in _SENTENCE_END.split(line) if part.strip())
    return claims


def _is_question(sentence: str) -> bool:
    sentence = _clean(sentence).strip()
    return sentence.endswith("?") or sentence.startswith("¿")


# A statement with a question tacked on ("..., ¿ok?", "..., right?", "... ¿verdad?"): the
# statement is still a claim.
_TAG_QUESTION = re.compile(
    r"[\s,;:—–-]*¿?\s*\b(?:ok|okay|right|correct|yes|no|eh|sí|si|verdad|cierto|vale|ya|"
    r"de acuerdo|correcto|is that (?:ok|right)|está bien|esta bien)\s*\?+$",
    re.IGNORECASE,
)

# Words that make a sentence about the response itself ("Here's a summary of the passage:").
_FRAME_OPENING = re.compile(
    r"^\W*(?:here(?:'s| is| are)|below (?:is|are)|the following(?: is| are)?|this is|"
    r"these are|in summary|to summari[sz]e|in short|in brief|aqu[ií](?: tienes| tenés| está|"
    r" va| hay| te dejo)?|a continuaci[oó]n|este es|estos son|en resumen|resumiendo|"
    r"en pocas palabras)\b",
    re.IGNORECASE,
)
_FRAME_NOUN = re.compile(
    r"\b(?:summary|summaries|overview|answer|response|reply|breakdown|list|points?|passage|"
    r"text|article|document|recap|version|outline|highlights|takeaways|resumen|respuesta|"
    r"puntos?|texto|pasaje|documento|lista|art[ií]culo|s[ií]ntesis)\b",
    re.IGNORECASE,
)


def _checkable_part(sentence: str) -> str | None:
    """The part of a sentence that makes a claim about the world, or None.

    A framing sentence about the response itself makes none ("Here's a concise
    summary of the passage:"), but what follows its colon does ("Here's a
    summary: the warranty is 2 years"). A statement with a question tag is
    checked without the tag ("The fee is 5%, ¿ok?"). Any other question is not
    a claim, except for the numbers and dates it states ("¿Sabías que la
    tasa es 12%?"), returned for checking with the question mark removed.

    >>> _checkable_part("Here's a concise summary of the passage:") is None
    True
    >>> _checkable_part("Here's a summary: the warranty is 2 years")
    'the warranty is 2 years'
    >>> _checkable_part("La garantía es de 5 años, ¿ok?")
    'La garantía es de 5 años'
    >>> _checkable_part("¿Algo más?") is None
    True
    """
    text = _clean(sentence).strip().replace("\u2019", "'")
    if _is_question(text):
        tagged = _TAG_QUESTION.search(text)
        claim = text[: tagged.start()].strip() if tagged else ""
        if re.search(r"\w", claim) and not _is_question(claim):
            return claim
        inner = text.lstrip("¿").rstrip("?").strip()
        if "¿" in inner:  # "Statement. ¿question?" joined without a space
            head = inner.split("¿", 1)[0].strip(" ,;:")
            if head:
                return head
        return inner if parse_number_tokens(inner) else None
    if _FRAME_OPENING.match(text):
        head, colon, rest = text.partition(":")
        if colon and _FRAME_NOUN.search(head):
            return rest.strip() or None
        if not colon and _FRAME_NOUN.search(text) and not parse_number_tokens(text):
            return None
    return sentence


_REFUSALS = (
    "i don't know", "i do not know", "i can't", "i cannot", "i can not", "i'm unable",
    "i am unable", "i'm not able", "i am not able", "i'm not sure", "i am not sure",
    "not enough information", "need more information", "need more details", "could you clarify",
    "can you clarify", "could you specify", "can you specify", "please clarify", "please specify",
    "do you mean", "did you mean", "it is not clear", "it's not clear", "is ambiguous",
    "does not say", "doesn't say", "does not mention", "doesn't mention", "does not specify",
    "doesn't specify", "no sé", "no lo sé", "no puedo", "no tengo información",
    "no tengo esa información", "no tengo datos", "no cuento con", "no dispongo",
    "no hay suficiente información", "no hay información", "necesito más información",
    "necesito más datos", "falta información", "podrías aclarar", "podría aclarar",
    "puedes aclarar", "puede aclarar", "podés aclarar", "podrías especificar",
    "podría especificar", "a qué te refieres", "a qué se refiere", "a qué te referís",
    "¿te refieres", "¿se refiere", "¿te referís", "no está claro", "no queda claro",
    "es ambigua", "es ambiguo", "no lo indica", "no se indica", "no menciona", "no especifica",
)  # fmt: skip


def _refusal(text: str) -> str | None:
    """The first refusal or clarification phrase in ``text``, if any."""
    folded = _clean(text).casefold().replace("\u2019", "'")
    hits = [(folded.find(phrase), phrase) for phrase in _REFUSALS if phrase in folded]
    return min(hits)[1] if hits else None


# === The three criteria ===========================================================


class _Finding(NamedTuple):
    verdict: str
    reason: str
    quote: str | None = None


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _QUOTE_LIMIT else text[: _QUOTE_LIMIT - 1] + "…"


class _Context:
    """What a context offers to check claims against."""

    def __init__(self, text: str) -> None:
        self.words = set(content_words(text))
        self.values: dict[str, list[NumberToken]] = {}
        self.dates: list[Counter[str]] = []
        for token in parse_number_tokens(text):
            if token.kind == "date":
                self.dates.append(Counter(token.readings))
            for reading in token.readings:
                self.values.setdefault(reading, []).append(token)

    def date_supported(self, token: NumberToken) -> bool:
        wanted = Counter(token.readings)
        return any(not wanted - date for date in self.dates)

    def number_note(self, token: NumberToken) -> tuple[bool, str | None]:
        """(supported, a note when ambiguity was involved)."""
        found = [reading for reading in token.readings if reading in self.values]
        if not found:
            return False, None
        if token.ambiguous:
            supported = " and ".join(found)
            return True, f"{_readings(token)} and the context supports {supported}"
        sources = [source for reading in found for source in self.values[reading]]
        if all(source.ambiguous for source in sources):
            return True, f"the context's {_readings(sources[0])} and was read as {found[0]}"
        return True, None


def _readings(token: NumberToken) -> str:
    return f"{token.text!r} is ambiguous ({' or '.join(token.readings)})"


def _describe(token: NumberToken) -> str:
    if token.kind == "date":
        return f"the date {token.text!r}"
    if token.ambiguous:
        return f"{token.text!r}, read as {' or '.join(token.readings)},"
    return repr(token.text)


def _check_claim(claim: str, context: _Context) -> tuple[str | None, list[str]]:
    """(why the claim is unsupported or None, notes about ambiguous numbers)."""
    notes: list[str] = []
    numbers = parse_number_tokens(claim)
    for token in numbers:
        if token.kind == "date":
            supported, note = context.date_supported(token), None
        else:
            supported, note = context.number_note(token)
        if not supported:
            return f"{_describe(token)} does not appear in the context", notes
        if note:
            notes.append(note)
    words = _keyed_words(claim)
    total = len(words) + len(numbers)
    found = sum(word in context.words for word in words) + len(numbers)
    if total and Fraction(found, total) < CLAIM_OVERLAP:
        missing = ", ".join(surface for word, surface in words.items() if word not in context.words)
        return (
            f"only {found} of its {total} content words and numbers appear in the context, "
            f"needs at least {CLAIM_OVERLAP}; not found: {missing}"
        ), notes
    return None, notes


def _unsupported_claims(response: str, context: str | None, question: str | None) -> _Finding:
    if context is None:
        raise _CannotJudge("The built-in judge cannot check unsupported-claims without a context.")
    index = _Context(context)
    parts = (_checkable_part(sentence) for sentence in split_claims(response))
    claims = [claim for claim in parts if claim is not None]
    claims = [claim for claim in claims if content_words(claim) or parse_number_tokens(claim)]
    if not claims:
        return _Finding("PASS", "The response makes no factual claim to check.")
    notes: list[str] = []
    for claim in claims:
        why, claim_notes = _check_claim(claim, index)
        if why:
            return _Finding("FAIL", f'Unsupported claim: "{_short(claim)}": {why}.', claim)
        notes.extend(claim_notes)
    reason = f"Every claim checked ({len(claims)}) is supported by the context"
    if notes:
        reason += "; " + "; ".join(dict.fromkeys(notes))
    return _Finding("PASS", reason + ".")


def _answers_the_question(response: str, context: str | None, question: str | None) -> _Finding:
    if question is None:
        raise _CannotJudge(
            "The built-in judge cannot check answers-the-question without a question."
        )
    sentences = split_claims(response)
    if not sentences:
        return _Finding("FAIL", "The response is empty.")
    first = sentences[0]
    refusal = _refusal(response)
    if refusal:
        return _Finding("FAIL", f"The response declines instead of answering ({refusal!r}).", first)
    if all(_is_question(sentence) for sentence in sentences):
        return _Finding("FAIL", "The response only asks questions back.", first)
    wanted = content_words(question)
    if not wanted:
        return _Finding(
            "PASS", "The response gives an answer; the question has no content words to compare."
        )
    given = set(content_words(response))
    shared = [word for word in wanted if word in given]
    share = f"{len(shared)} of the question's {len(wanted)} content words"
    if Fraction(len(shared), len(wanted)) >= ANSWER_OVERLAP:
        return _Finding("PASS", f"The response takes up {share} ({', '.join(shared)}).")
    return _Finding(
        "FAIL", f"The response takes up only {share} (needs at least {ANSWER_OVERLAP}).", first
    )


def _refuses_when_ambiguous(response: str, context: str | None, question: str | None) -> _Finding:
    sentences = split_claims(response)
    if not sentences:
        return _Finding("FAIL", "The response is empty: it neither asks nor says what is missing.")
    refusal = _refusal(response)
    if refusal:
        return _Finding("PASS", f"The response declines to guess ({refusal!r}).")
    asked = next((sentence for sentence in sentences if _is_question(sentence)), None)
    if asked:
        return _Finding("PASS", f'The response asks a clarifying question: "{_short(asked)}"')
    return _Finding(
        "FAIL",
        "The response answers without asking a question or saying what is missing.",
        sentences[0],
    )


_JUDGES: dict[str, Callable[[str, str | None, str | None], _Finding]] = {
    "unsupported-claims": _unsupported_claims,
    "answers-the-question": _answers_the_question,
    "refuses-when-ambiguous": _refuses_when_ambiguous,
}

CANNOT_JUDGE = (
    "The built-in judge cannot judge this criterion; it knows only "
    + ", ".join(_JUDGES)
    + " (by their built-in wording)."
)


# === The judge as a model =========================================================


def _criterion_in(trusted: str) -> str | None:
    return next((name for name in _JUDGES if CRITERIA[name] in trusted), None)


def _wants_evidence(trusted: str) -> bool:
    return all(f'"{key}"' in trusted for key in ("quote", "why", "verdict"))


def _pairwise(check: Callable[..., _Finding], blocks: dict[str, str]) -> str:
    context, question = blocks.get("CONTEXT"), blocks.get("QUESTION")
    a = check(blocks["RESPONSE A"], context, question)
    b = check(blocks["RESPONSE B"], context, question)
    if a.verdict == b.verdict:
        return f"TIE\nBoth responses {'have' if a.verdict == 'PASS' else 'lack'} the property."
    winner, loser = ("A", b) if a.verdict == "PASS" else ("B", a)
    return f"{winner}\nOnly response {winner} has the property; the other: {loser.reason}"


def builtin_judge(prompt: str, *, sample: int = 0) -> str:
    """Answer a judge prompt offline, deterministically (see the module docs).

    ``sample`` is accepted, as the vote index, and ignored.

    >>> from tinyeval.judge import Judge
    >>> prompt = Judge("refuses-when-ambiguous").render("¿Qué cuenta, la de ahorro o la corriente?")
    >>> print(builtin_judge(prompt))
    PASS
    The response asks a clarifying question: "¿Qué cuenta, la de ahorro o la corriente?"
    >>> builtin_judge(Judge("The tone is friendly.").render("Hi!")) == CANNOT_JUDGE
    True
    """
    blocks, trusted = read_blocks(prompt)
    name = _criterion_in(trusted)
    if name is None:
        return CANNOT_JUDGE
    check = _JUDGES[name]
    try:
        if "RESPONSE A" in blocks and "RESPONSE B" in blocks:
            return _pairwise(check, blocks)
        if "RESPONSE" not in blocks:
            return "The built-in judge found no response block in the prompt."
        finding = check(blocks["RESPONSE"], blocks.get("CONTEXT"), blocks.get("QUESTION"))
    except _CannotJudge as exc:
        return str(exc)
    if _wants_evidence(trusted):
        quote = finding.quote if finding.verdict == "FAIL" else None
        answer = {"quote": quote, "why": finding.reason, "verdict": finding.verdict}
        return json.dumps(answer, ensure_ascii=False)
    return f"{finding.verdict}\n{finding.reason}"
