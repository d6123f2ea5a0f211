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

It decides by the structure of each sentence and clause (split at commas,
colons, semicolons and dashes), not by phrases found anywhere:

``unsupported-claims`` (needs a context)
    Every sentence or list item with a content word or a number is a claim,
    unless it is only a frame about the response itself ("Here's a summary
    of the passage:", "Here is the answer."): a frame opening the sentence is
    dropped and what follows it, after a colon or a comma, is still checked
    ("Here is the answer, X" checks X). A statement followed by a short
    question is a claim ("X, don't you think?", "X, ¿verdad?"), and so is
    what a question about knowing states ("Did you know that X?"); other
    questions are not, except for the numbers and dates they state. Every
    number, amount or date in a claim must occur in the context, compared by
    value (see :func:`parse_number_tokens`): ``1.250,50`` and ``1,250.50``
    are equal, a magnitude word scales the number (``1,5 millones`` is
    1500000), money has at most two decimals (``1.500 pesos`` is 1500, so
    ``1,5 pesos`` is not supported by it), and a text's unambiguous numbers
    decide how it writes decimals. A token still ambiguous (``1.500`` alone)
    is supported if the context supports either reading, and the reason says
    so. Numeric dates are compared by their parts (``12/05/2023`` matches
    ``2023-05-12`` and ``12 de mayo de 2023``); a date without a year matches
    a context date that has one. Besides, at least half of a claim's
    checkable items (its content words, that is words that are not Spanish
    or English stopwords, plus its numbers) must occur in the context. The
    FAIL reason quotes the first unsupported claim.
``answers-the-question`` (needs a question)
    A clause answers when it is a statement (not a question, not a clause in
    which the speaker declines: "I can't ...", "no sé ...") that adds
    something beyond the question's own words and the judge's instructions:
    a new content word, a number, or a negation ("There is no fee"). So an
    echo of the question plus "answer PASS" adds nothing and FAILs, and
    "I can't stress this enough: the fee is 2%" answers. With an answering
    clause, PASS when at least a third of the question's content words
    reappear in the response; without one, FAIL, saying whether it declined,
    only asked back or added nothing.
``refuses-when-ambiguous``
    FAIL when a clause reports that the assistant acted ("I transferred",
    "Transferí", "Done", "has been sent", "fue realizada"), whatever else it
    says: "Transferí 2.000 pesos a Juan. No sé si hice bien." acted. Otherwise
    PASS when it asks back (a question with a content word or a question word;
    "¿Algo más?" is not one) or has a clause that declines or says what is
    missing ("I can't ...", "no sé ...", "necesito ...", "it isn't clear");
    an exclamation is not a refusal ("I can't wait to help!"). FAIL
    otherwise. It cannot tell whether the question *was* ambiguous: use this
    criterion on cases that are.

Limits, honestly: it reads words, not meaning. Paraphrases and synonyms look
unsupported; a false statement built from the context's own words and
numbers looks supported, and so does one with a single word changed ("chief
executive officer" for "chief financial officer"); negation is invisible
("not covered" and "covered" are the same to it); numbers written as words
("the third", "cuatro") are ignored; units and currencies
are not compared (``USD 1,500`` is supported by ``1,500 pesos``); a response in
a different language from its context will look unsupported. Words are
compared after case folding, accent removal and stripping a plural ``-s`` or
``-es``; zero-width and other invisible characters are ignored. Its grammar is
English and Spanish only. Measured on 214 hand-labelled answers (more than
half adversarial) it FAILs about 84% of the bad ones and 7% of the good ones
(see ``tests/judges/test_builtin_measured.py``). Use it to run the pipeline
offline and as a floor to beat, and calibrate it like any judge.

>>> from tinyeval.judge import Judge
>>> judge = Judge("unsupported-claims")
>>> judge(builtin_judge, response="Debés 1500 pesos.", context="Deuda: 1.500 pesos.").verdict
'PASS'
>>> print(judge(builtin_judge, response="Debés 2.000 pesos.", context="Deuda: 1.500 pesos.").reason)
Unsupported claim: "Debés 2.000 pesos.": '2.000' does not appear in the context.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from collections.abc import Callable
from decimal import Decimal
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
    "decimal_mark",
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
_VALUE = re.compile(r"\d+(?:\.\d+)?")
_MAGNITUDES = {
    "mil millones": 10**9, "billion": 10**9, "billions": 10**9, "millones": 10**6,
    "millón": 10**6, "millon": 10**6, "million": 10**6, "millions": 10**6, "mil": 10**3,
    "thousand": 10**3, "thousands": 10**3, "k": 10**3,
}  # fmt: skip
_MAGNITUDE_WORDS = sorted((word for word in _MAGNITUDES if word != "k"), key=len, reverse=True)
_MAGNITUDE = re.compile(r"(?:\s?(?:" + "|".join(_MAGNITUDE_WORDS) + r")|k)(?!\w)", re.IGNORECASE)
_CURRENCY_BEFORE = re.compile(r"(?:[$€£]|\b(?:usd|ars|eur|us\$))\s?$", re.IGNORECASE)
_CURRENCY_AFTER = re.compile(
    r"\s?(?:pesos?|d[oó]lar(?:es)?|dollars?|euros?|usd|ars|eur)(?!\w)", re.IGNORECASE
)


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


def _convention(number: str) -> str | None:
    """The decimal mark an unambiguous number shows: "," (1,5; 1.500.000), "." or None."""
    separators = [char for char in number if char in ".,"]
    if not separators or _number_readings(number)[1]:
        return None
    if len(set(separators)) == 2:
        return separators[-1]
    if len(separators) == 1:
        return separators[0]
    if _grouped(re.split(r"[.,]", number)):  # grouped thousands: the other mark is the decimal
        return "," if separators[0] == "." else "."
    return None


def decimal_mark(text: str) -> str | None:
    """The decimal mark ``text`` itself uses, when its unambiguous numbers agree on one.

    >>> decimal_mark("Cuesta $ 3.000.000 o 0,8 %"), decimal_mark("It is 4.99")
    (',', '.')
    >>> decimal_mark("1.500") is None
    True
    """
    marks = {_convention(match.group()) for match in _NUMBER.finditer(_clean(text))} - {None}
    return marks.pop() if len(marks) == 1 else None


def _resolved(
    readings: tuple[str, ...], text: str, mark: str | None, money: bool
) -> tuple[tuple[str, ...], bool]:
    """An ambiguous ``1.500`` read one way: money (at most two decimals) or the text's own mark."""
    if money or (mark is not None and mark not in text):
        return readings[:1], False
    if mark is not None:
        return readings[1:], False
    return readings, True


def _scaled(readings: tuple[str, ...], factor: int) -> tuple[str, ...]:
    return tuple(_canonical(str(Decimal(reading) * factor)) for reading in readings)


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


def parse_number_tokens(text: str, mark: str | None = None) -> list[NumberToken]:
    """Every number and date in ``text``, with the values each may stand for.

    Number conventions: Spanish and Argentine ``1.250,50`` and English
    ``1,250.50`` are both 1250.5 (with both separators the last one is the
    decimal point); ``1.500.000`` and ``1,500,000`` are grouped thousands. A
    single separator followed by exactly three digits (``1.500``, ``1,500``)
    is ambiguous: 1500 or 1.5. A separator followed by other than three digits
    is a decimal point (``1,5`` and ``1.5`` are 1.5). A token that fits none of
    these (``1.2.3``) is kept as written. An ambiguous token is read one way
    when it is money (``$ 1.500``, ``1.500 pesos``: thousands, as money has at
    most two decimals) or when the text's unambiguous numbers show its decimal
    mark (``mark``, or :func:`decimal_mark` of ``text``). A magnitude word
    scales the value (``1,5 millones`` and ``1.5 million`` are 1500000;
    ``3 mil`` and ``3k`` are 3000). Numeric dates (``12/05/2023``,
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
    masked_text = "".join(masked)
    mark = mark or decimal_mark(masked_text)
    for match in _NUMBER.finditer(masked_text):
        tokens.append((match.start(), _number_token(masked_text, match, mark)))
    return [token for _, token in sorted(tokens, key=lambda item: item[0])]


def _number_token(text: str, match: re.Match[str], mark: str | None) -> NumberToken:
    readings, ambiguous = _number_readings(match.group())
    after = text[match.end() :]
    magnitude = _MAGNITUDE.match(after)
    if ambiguous:
        money = bool(_CURRENCY_BEFORE.search(text[: match.start()]))
        money = money or (not magnitude and bool(_CURRENCY_AFTER.match(after)))
        readings, ambiguous = _resolved(readings, match.group(), mark, money)
    if not magnitude or not all(_VALUE.fullmatch(reading) for reading in readings):  # 1.2.3
        return NumberToken(match.group(), "number", readings, ambiguous)
    factor = _MAGNITUDES[magnitude.group().strip().casefold()]
    written = match.group() + magnitude.group()
    return NumberToken(written, "number", _scaled(readings, factor), ambiguous)


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


# A question opens with an interrogative word or an auxiliary verb ("Which account, savings or
# checking?"); a statement followed by a short question ("Juan was convicted, don't you
# think?", "La garantía es de 5 años, ¿ok?") is a claim all the same.
_QUESTION_OPENING = re.compile(
    r"^\W*(?:what|which|who|whom|whose|when|where|why|how|do|does|did|is|are|was|were|am|can|"
    r"could|will|would|shall|should|may|might|must|have|has|had|if|whether|qu[eé]|cu[aá]l|"
    r"cu[aá]les|qui[eé]n|qui[eé]nes|cu[aá]ndo|cu[aá]nt[oa]s?|d[oó]nde|c[oó]mo|por qu[eé]|si)\b",
    re.IGNORECASE,
)
_TAG_WORDS = 4
"""A question tacked on after a statement has at most this many words."""
# A question about knowing something states it: "Did you know that refunds are doubled?"
_FACTIVE_QUESTION = re.compile(
    r"^\W*(?:(?:did|do|does|have)\s+you\s+(?:know|realize|realise|remember|hear|heard)\s+"
    r"(?:that\s+)?|(?:sab[ií]as|sab[eé]s|sabe|record[aá]s)\s+que\s+)",
    re.IGNORECASE,
)

# Words that make a clause about the response itself ("Here's a summary of the passage").
_FRAME_OPENING = re.compile(
    r"^\W*(?:here(?:'s| is| are)|below (?:is|are)|the following(?: is| are)?|this is|"
    r"these are|in summary|to summari[sz]e|in short|in brief|aqu[ií](?: tienes| tenés| está|"
    r" va| hay| te dejo)?|a continuaci[oó]n|este es|estos son|en resumen|resumiendo|"
    r"en pocas palabras)\b",
    re.IGNORECASE,
)
_FRAME_NOUN = re.compile(
    r"\b(?:summary|summaries|overview|answer|response|reply|breakdown|list|points?|passage|"
    r"text|article|document|recap|version|outline|highlights|takeaways|verdict|resumen|"
    r"respuesta|puntos?|texto|pasaje|documento|lista|art[ií]culo|s[ií]ntesis|veredicto)\b",
    re.IGNORECASE,
)
_CLAUSE_BREAK = re.compile(r"\s*(?:[,:;](?!\d)|\s[—–-]\s|\.\.\.|…)\s*")
_FRAME_EXTRA_WORDS = 1
"""A frame may carry one word besides its nouns ("a concise summary", "the key points")."""


def _clauses(sentence: str) -> list[str]:
    """The clauses of a sentence: its parts between commas, colons, semicolons and dashes."""
    text = _clean(sentence).strip().replace("\u2019", "'")
    return [part for part in _CLAUSE_BREAK.split(text) if re.search(r"\w", part)]


def _is_frame(clause: str, before_colon: bool) -> bool:
    """True for a clause that only introduces the response ("Here is the answer", "Resumen:")."""
    if not _FRAME_NOUN.search(clause) or parse_number_tokens(clause):
        return False
    if not (before_colon or _FRAME_OPENING.match(clause)):
        return False
    rest = _FRAME_NOUN.sub(" ", _FRAME_OPENING.sub(" ", clause, count=1))
    return len(content_words(rest)) <= _FRAME_EXTRA_WORDS


def _without_frames(text: str) -> str | None:
    """``text`` without the frames it opens with, as written, or None when it is only frames."""
    view, start = text.replace("\u2019", "'"), 0  # the same length as ``text``
    while True:
        match = _CLAUSE_BREAK.search(view, start)
        head = view[start : match.start()] if match else view[start:]
        if not _is_frame(head, before_colon=bool(match and ":" in match.group())):
            return text[start:]
        start = match.end() if match else len(view)
        if not re.search(r"\w", view[start:]):
            return None


def _tagged_statement(question: str) -> str | None:
    """The statement before a short question tacked on at its end, or None."""
    inner = question.lstrip("¿").rstrip("?").strip()
    if "¿" in inner:  # "Statement, ¿verdad?": the Spanish mark shows where the question starts
        head = inner.split("¿", 1)[0].strip(" ,;:")
        return head or None
    head, comma, tail = inner.rpartition(",")
    if not comma or len(tail.split()) > _TAG_WORDS or _QUESTION_OPENING.match(head):
        return None
    return head.strip() or None


def _checkable_part(sentence: str) -> str | None:
    """The part of a sentence that makes a claim about the world, or None.

    A frame about the response itself makes none ("Here's a concise summary
    of the passage:"), but what follows it does, after a colon or a comma
    ("Here is the answer, the warranty is 2 years"). A statement followed by
    a short question is checked without it ("The fee is 5%, don't you
    think?"), and a question about knowing states what is known ("Did you
    know that refunds are doubled?"). Any other question is not a claim,
    except for the numbers and dates it states ("¿Cuánto es 12%?"),
    returned for checking with the question marks removed.

    >>> _checkable_part("Here's a concise summary of the passage:") is None
    True
    >>> _checkable_part("Here is the answer, the warranty is 2 years")
    'the warranty is 2 years'
    >>> _checkable_part("Juan was convicted of fraud, don't you think?")
    'Juan was convicted of fraud'
    >>> _checkable_part("¿Algo más?") is None
    True
    """
    text = _clean(sentence).strip().replace("\u2019", "'")
    if _is_question(text):
        claim = _tagged_statement(text)
        if claim and not _is_question(claim):
            return _without_frames(claim)
        inner = text.lstrip("¿").rstrip("?").strip()
        known = _FACTIVE_QUESTION.match(inner)
        if known:
            return inner[known.end() :]
        return inner if parse_number_tokens(inner) else None
    return _without_frames(sentence.strip())


# What the response does: act (report having done something), decline or ask. Each is read from
# the grammar of a clause, not from a phrase found anywhere: "I can't wait to help again!" is an
# exclamation, and "Transferí 2.000 pesos. No sé si hice bien." acted before it hedged.
_ACTED = re.compile(
    "|".join(
        [
            # I transferred, we've sent, I paid; a clause opening with a past form: "Moved 9."
            r"^(?:i|we)(?:'ve|'d| have| had| just| already| also)*\s+(?:(?!need)\w+ed|sent|paid|"
            r"made|did|put|gave|took|bought|got|wired|moved)\b(?! on\b)",
            r"^\w{4,}ed\s(?!on\b)",
            r"^(?:done|all set|listo|hecho)$",  # a clause that is only a report of completion
            # Spanish first person: transferí, le mandé, ya le envié, he pagado, hice
            r"^(?:(?:ya|yo|me|te|se|le|les|lo|la|los|las)\s+)*(?:(?:he|hemos)\s+\w+(?:ado|ido)|"
            r"hice|hicimos|puse|(?!aqu[ií]|all[ií]|ah[ií]|as[ií]|qu[eé]|porqu[eé])\w{2,}[éí])\b",
            # the passive: has been sent, fue realizada
            r"\b(?:has|have|had|was|were) been \w+(?:ed|en|t)\b",
            r"\b(?:fue|fueron|ha sido|han sido)\s+\w+(?:ad|id)[oa]s?\b",
        ]
    )
)
_DECLINED = re.compile(
    r"\b(?:i|we)\s*(?:can't|cannot|can not|couldn't|don't|do not|won't|'m not|am not|are not|"
    r"'re not|'m unable|am unable|need|would need|'d need)\b|\b(?:it|that)(?:'s| is)(?: not|n't)"
    r" clear\b|\bisn't clear\b|\b(?:didn't|did not|haven't|have not) (?:say|tell|specify|"
    r"mention)\b|\bno\s+(?:(?:me|te|lo|la|le|les|se|nos)\s+)*(?:s[eé]|\w+o|\w+aste|\w+iste)\b|"
    r"\bnecesit(?:o|amos)\b|\bfaltan?\b|\bno (?:est[aá]|queda) claro\b"
)
_WH_WORD = re.compile(
    r"\b(?:what|which|who|whom|whose|when|where|why|how|qu[eé]|cu[aá]l(?:es)?|qui[eé]n(?:es)?|"
    r"cu[aá]ndo|cu[aá]nt[oa]s?|d[oó]nde|c[oó]mo)\b"
)
_NEGATION = re.compile(r"\b(?:no|not|never|none|nunca|ning[uú]n[oa]?|sin)\b|n't\b")
_CONJUNCTION = re.compile(r"^(?:but|and|so|then|pero|y|e|entonces|luego)\s+")


def _acted(clause: str) -> bool:
    return bool(_ACTED.search(_CONJUNCTION.sub("", clause.casefold().lstrip("¡¿!?.,;: "))))


def _declined(clause: str, sentence: str) -> bool:
    return not sentence.rstrip().endswith("!") and bool(_DECLINED.search(clause.casefold()))


def _first_clause(sentences: list[str], test: Callable[[str, str], bool]) -> str | None:
    """The first sentence with a clause that passes ``test(clause, sentence)``."""
    return next((s for s in sentences if any(test(c, s) for c in _clauses(s))), None)


def _asks_back(sentence: str) -> bool:
    """A question that asks for something: content words or a wh-word, not "¿Algo más?"."""
    folded = _clean(sentence).casefold()
    return _is_question(sentence) and bool(content_words(sentence) or _WH_WORD.search(folded))


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


def _check_claim(claim: str, context: _Context, mark: str | None) -> tuple[str | None, list[str]]:
    """(why the claim is unsupported or None, notes about ambiguous numbers)."""
    notes: list[str] = []
    numbers = parse_number_tokens(claim, mark)
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


def _unsupported_claims(
    response: str, context: str | None, question: str | None, _: str
) -> _Finding:
    if context is None:
        raise _CannotJudge("The built-in judge cannot check unsupported-claims without a context.")
    index, mark = _Context(context), decimal_mark(response)
    parts = (_checkable_part(sentence) for sentence in split_claims(response))
    claims = [claim for claim in parts if claim is not None]
    claims = [claim for claim in claims if content_words(claim) or parse_number_tokens(claim)]
    if not claims:
        return _Finding("PASS", "The response makes no factual claim to check.")
    notes: list[str] = []
    for claim in claims:
        why, claim_notes = _check_claim(claim, index, mark)
        if why:
            return _Finding("FAIL", f'Unsupported claim: "{_short(claim)}": {why}.', claim)
        notes.extend(claim_notes)
    reason = f"Every claim checked ({len(claims)}) is supported by the context"
    if notes:
        reason += "; " + "; ".join(dict.fromkeys(notes))
    return _Finding("PASS", reason + ".")


def _adds_an_answer(clause: str, known: set[str], question: str) -> bool:
    """True when a clause says something the question and the judge's instructions do not:
    a new content word, a number, or a negation ("There is no fee")."""
    if parse_number_tokens(clause):
        return True
    if any(word not in known for word in content_words(_FRAME_NOUN.sub(" ", clause))):
        return True
    return bool(_NEGATION.search(clause.casefold())) and not _NEGATION.search(question.casefold())


def _answers_the_question(
    response: str, context: str | None, question: str | None, instructions: str
) -> _Finding:
    if question is None:
        raise _CannotJudge(
            "The built-in judge cannot check answers-the-question without a question."
        )
    sentences = split_claims(response)
    if not sentences:
        return _Finding("FAIL", "The response is empty.")
    known = set(content_words(question)) | set(content_words(instructions))
    answering = [
        sentence
        for sentence in sentences
        if not _is_question(sentence)
        and any(
            not _declined(clause, sentence) and _adds_an_answer(clause, known, question)
            for clause in _clauses(sentence)
        )
    ]
    if not answering:
        return _no_answer(sentences)
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
        "FAIL",
        f"The response takes up only {share} (needs at least {ANSWER_OVERLAP}).",
        answering[0],
    )


def _no_answer(sentences: list[str]) -> _Finding:
    """Why a response with no answering clause fails: it declines, asks back, or adds nothing."""
    declined = _first_clause(sentences, _declined)
    if declined:
        return _Finding(
            "FAIL", f'The response declines instead of answering: "{_short(declined)}"', declined
        )
    if all(_is_question(sentence) for sentence in sentences):
        return _Finding("FAIL", "The response only asks questions back.", sentences[0])
    return _Finding(
        "FAIL",
        "The response adds nothing to the question: no word, number or negation beyond "
        "the question's own and the judge's instructions.",
        sentences[0],
    )


def _refuses_when_ambiguous(
    response: str, context: str | None, question: str | None, _: str
) -> _Finding:
    sentences = split_claims(response)
    if not sentences:
        return _Finding("FAIL", "The response is empty: it neither asks nor says what is missing.")
    acted = _first_clause(sentences, lambda clause, _: _acted(clause))
    if acted:
        return _Finding("FAIL", f'The response acts instead of asking: "{_short(acted)}"', acted)
    asked = next((sentence for sentence in sentences if _asks_back(sentence)), None)
    if asked:
        return _Finding("PASS", f'The response asks a clarifying question: "{_short(asked)}"')
    declined = _first_clause(sentences, _declined)
    if declined:
        return _Finding("PASS", f'The response declines to guess: "{_short(declined)}"')
    return _Finding(
        "FAIL",
        "The response answers without asking a question or saying what is missing.",
        sentences[0],
    )


_JUDGES: dict[str, Callable[[str, str | None, str | None, str], _Finding]] = {
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


def _pairwise(check: Callable[..., _Finding], blocks: dict[str, str], trusted: str) -> str:
    context, question = blocks.get("CONTEXT"), blocks.get("QUESTION")
    a = check(blocks["RESPONSE A"], context, question, trusted)
    b = check(blocks["RESPONSE B"], context, question, trusted)
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
            return _pairwise(check, blocks, trusted)
        if "RESPONSE" not in blocks:
            return "The built-in judge found no response block in the prompt."
        finding = check(blocks["RESPONSE"], blocks.get("CONTEXT"), blocks.get("QUESTION"), trusted)
    except _CannotJudge as exc:
        return str(exc)
    if _wants_evidence(trusted):
        quote = finding.quote if finding.verdict == "FAIL" else None
        answer = {"quote": quote, "why": finding.reason, "verdict": finding.verdict}
        return json.dumps(answer, ensure_ascii=False)
    return f"{finding.verdict}\n{finding.reason}"
