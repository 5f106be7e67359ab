"""Text as a voice should say it on a shop's phone line: numbers, prices, times, dates and codes in words.

Piper (through espeak-ng) reads "€24.90" as "euro twenty four point nine zero", an order number as
"forty thousand one hundred and ten" and markdown stars aloud. The rules run in a fixed order because
the patterns overlap: dates and times before phone numbers, phone numbers and prices before codes, and
all of them before plain numbers.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

from num2words import num2words

_SAID_LIMIT = 10**15
_DIGIT_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
# Capitalised only: "may" is a verb far more often than a month.
_MONTH_BY_NAME = {**{m: m for m in _MONTHS}, **{m[:3]: m for m in _MONTHS}, "Sept": "September"}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTH_BY_NAME, key=len, reverse=True)) + r")\b"

# (singular, plural) by symbol; case matters ("W" is watts, "m" is metres).
_UNITS = {
    "mm": ("millimetre", "millimetres"),
    "cm": ("centimetre", "centimetres"),
    "m": ("metre", "metres"),
    "km": ("kilometre", "kilometres"),
    "kg": ("kilo", "kilos"),
    "g": ("gram", "grams"),
    "ml": ("millilitre", "millilitres"),
    "l": ("litre", "litres"),
    "W": ("watt", "watts"),
    "kW": ("kilowatt", "kilowatts"),
    "V": ("volt", "volts"),
    "mAh": ("milliamp hour", "milliamp hours"),
    "Wh": ("watt hour", "watt hours"),
    "h": ("hour", "hours"),
    "min": ("minute", "minutes"),
    "Hz": ("hertz", "hertz"),
    "kHz": ("kilohertz", "kilohertz"),
    "GB": ("gigabyte", "gigabytes"),
    "TB": ("terabyte", "terabytes"),
    "MB": ("megabyte", "megabytes"),
    "°C": ("degree", "degrees"),
}
# Whole currency unit, minor unit (both singular, plural).
_CURRENCIES = {
    "€": (("euro", "euros"), ("cent", "cents")),
    "eur": (("euro", "euros"), ("cent", "cents")),
    "euro": (("euro", "euros"), ("cent", "cents")),
    "euros": (("euro", "euros"), ("cent", "cents")),
    "$": (("dollar", "dollars"), ("cent", "cents")),
    "usd": (("dollar", "dollars"), ("cent", "cents")),
    "dollar": (("dollar", "dollars"), ("cent", "cents")),
    "dollars": (("dollar", "dollars"), ("cent", "cents")),
    "£": (("pound", "pounds"), ("penny", "pence")),
    "gbp": (("pound", "pounds"), ("penny", "pence")),
    "pound": (("pound", "pounds"), ("penny", "pence")),
    "pounds": (("pound", "pounds"), ("penny", "pence")),
}
_ABBREVIATIONS = (
    (r"\be\.g\.", "for example"),
    (r"\bi\.e\.", "that is"),
    (r"\betc\.", "et cetera"),
    (r"\bapprox\.", "approximately"),
    (r"\bincl\.", "including"),
    (r"\bexcl\.", "excluding"),
    (r"\bvs\.", "versus"),
    (r"\bMr\.", "Mister"),
    (r"\bMrs\.", "Missus"),
    (r"\bMs\.", "Miz"),
    (r"\bDr\.", "Doctor"),
    (r"\b(?:No|Nr|no|nr)\.\s*(?=\d)", "number "),
    (r"#\s*(?=\d)", "number "),
)
# A digit string after one of these words is a code, read digit by digit.
_CODE_WORDS = (
    r"(?:order|return|reference|ref|tracking|invoice|customer|account|booking|ticket|case|confirmation|code|pin|number)"
)

_AMOUNT = r"\d{1,3}(?:,\d{3})+(?:\.\d{1,2})?|\d+(?:[.,]\d{1,2})?"
_SYMBOL_PRICE = re.compile(rf"(?P<cur>€|\$|£|\b(?:EUR|USD|GBP)\b)\s?(?P<amount>{_AMOUNT})(?!\d)")
_WORD_PRICE = re.compile(
    rf"(?<![\d.,])(?P<amount>{_AMOUNT})\s?(?P<cur>€|\$|£|\b(?:EUR|USD|GBP|euros?|dollars?|pounds?)\b)"
    r"(?:\s(?P<minor>\d{2})\b(?![.,]\d|\s?%))?",
    re.IGNORECASE,
)
_ISO_DATE = re.compile(r"\b(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})\b")
_DAY_MONTH = re.compile(
    rf"\b(?P<the>[Tt]he\s+)?(?P<day>\d{{1,2}})(?:st|nd|rd|th)?(?:\s+of)?\s+{_MONTH}(?:\s+(?P<year>\d{{4}}))?\b"
)
_MONTH_DAY = re.compile(
    rf"\b{_MONTH}\.?\s+(?:the\s+)?(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(?P<year>\d{{4}})\b)?"
)
_HALF = r"\s?(?P<half>[ap])(?:m\b|\.m\.)"
_CLOCK = re.compile(rf"\b(?P<hour>[01]?\d|2[0-3]):(?P<minute>[0-5]\d)\b(?:{_HALF})?", re.IGNORECASE)
_HOUR = re.compile(rf"\b(?P<hour>1[0-2]|0?\d){_HALF}", re.IGNORECASE)
_SENTENCE_GOES_ON = re.compile(r"\s+[a-z0-9]")
_PHONE = re.compile(r"(?<![\w.,])(?:\+|\(?0)?\d[\d ()/-]{5,}\d(?![\w.,]\d)")
_CONTEXT_CODE = re.compile(
    rf"\b(?P<word>{_CODE_WORDS})(?P<gap>(?:\s+(?:number|no|nr|is|was))*[\s:#]+)(?P<code>\d{{4,}})\b", re.IGNORECASE
)
_SKU = re.compile(r"\b(?P<letters>[A-Z]{1,4})-?(?P<digits>\d{2,6})\b")
_LEADING_ZERO = re.compile(r"(?<![\d,.])\b0\d+\b(?![.,]\d)")
_QUANTITY = r"(?<![\d,.])(?P<number>(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)"
_PERCENT = re.compile(rf"{_QUANTITY}\s?%")
_UNIT = re.compile(
    rf"{_QUANTITY}\s?(?P<unit>" + "|".join(re.escape(u) for u in sorted(_UNITS, key=len, reverse=True)) + r")(?![\w°])"
)
_ORDINAL = re.compile(r"(?<!\d)(?P<number>\d+)(?:st|nd|rd|th)\b", re.IGNORECASE)
# Digits glued to letters ("4K", "MP3") are numbers too: no word boundary needed.
_DECIMAL = re.compile(r"(?<!\d)(?P<whole>\d+)\.(?P<fraction>\d+)")
_INTEGER = re.compile(r"(?<![\d,])\d{1,3}(?:,\d{3})+(?![\d,])|\d+")


def normalize_for_speech(text: str) -> str:
    """``text`` with everything a voice would misread spelled out in words."""
    for rule in _RULES:
        text = rule(text)
    return _tidy(text)


# --- markup --------------------------------------------------------------------------------------


def _strip_markup(text: str) -> str:
    text = re.sub(r"<[^>]+>", " ", text)  # HTML tags
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # [label](url) and images
    text = re.sub(r"https?://\S+|www\.\S+", " ", text)
    text = re.sub(r"^\s{0,3}(?:#{1,6}\s*|>\s*|(?:[-*+•]|\d+[.)])\s+)", "", text, flags=re.MULTILINE)
    text = re.sub(r"[*`~|<>]+|(?<!\w)_+|_+(?!\w)", " ", text)
    text = "".join(ch for ch in text if not _unspeakable(ch))
    # A line break is a pause the writer meant: keep it as a sentence end.
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    ended = [line if line[-1] in ".!?:;," else line + "." for line in lines[:-1]]
    return " ".join(ended + lines[-1:])


def _unspeakable(ch: str) -> bool:
    # Emoji and other pictographs, control characters (espeak-ng refuses NUL), joiners and variation selectors.
    if ch in "°\n\t":
        return False
    return unicodedata.category(ch) in ("So", "Cs", "Co", "Cn", "Cc", "Cf") or ch in "\ufe0e\ufe0f"


def _abbreviations(text: str) -> str:
    for pattern, words in _ABBREVIATIONS:
        text = re.sub(pattern, words, text)
    return text


# --- dates and times -----------------------------------------------------------------------------


def _dates(text: str) -> str:
    def iso(match: re.Match[str]) -> str:
        month, day = int(match["month"]), int(match["day"])
        if not (1 <= month <= 12 and 1 <= day <= 31):
            return match[0]
        return f"the {_ordinal(day)} of {_MONTHS[month - 1]} {_year(match['year'])}"

    def day_month(match: re.Match[str]) -> str:
        day = int(match["day"])
        if not 1 <= day <= 31:
            return match[0]
        said = f"{match['the'] or 'the '}{_ordinal(day)} of {_MONTH_BY_NAME[match['month']]}"
        return f"{said} {_year(match['year'])}" if match["year"] else said

    def month_day(match: re.Match[str]) -> str:
        day = int(match["day"])
        if not 1 <= day <= 31:
            return match[0]
        said = f"{_MONTH_BY_NAME[match['month']]} {_ordinal(day)}"
        return f"{said} {_year(match['year'])}" if match["year"] else said

    text = _ISO_DATE.sub(iso, text)
    text = _DAY_MONTH.sub(day_month, text)
    return _MONTH_DAY.sub(month_day, text)


def _times(text: str) -> str:
    def clock(match: re.Match[str]) -> str:
        return _with_full_stop(match, _clock(match))

    def hour(match: re.Match[str]) -> str:
        return _with_full_stop(match, f"{_cardinal(int(match['hour']))} {match['half'].lower()} m")

    return _HOUR.sub(hour, _CLOCK.sub(clock, text))


def _clock(match: re.Match[str]) -> str:
    hour, minute = int(match["hour"]), int(match["minute"])
    half = (match["half"] or "").lower()
    if not half and hour > 12:
        hour, half = hour - 12, "p"
    elif not half and hour == 0:
        hour, half = 12, "a"
    if minute == 0:
        said = _cardinal(hour) if half else f"{_cardinal(hour)} o'clock"
    elif minute < 10:
        said = f"{_cardinal(hour)} oh {_cardinal(minute)}"
    else:
        said = f"{_cardinal(hour)} {_cardinal(minute)}"
    return f"{said} {half} m" if half else said


def _with_full_stop(match: re.Match[str], said: str) -> str:
    # "at 9 a.m. Then" - the dot of "a.m." also ended the sentence.
    ends_sentence = match[0].endswith(".") and not _SENTENCE_GOES_ON.match(match.string, match.end())
    return said + "." if ends_sentence else said


# --- codes and phone numbers ---------------------------------------------------------------------


def _phone_numbers(text: str) -> str:
    def spell(match: re.Match[str]) -> str:
        found = match[0]
        if sum(ch.isdigit() for ch in found) < 7:
            return found
        groups = re.findall(r"\d+", found)
        # Groups are pauses, as people read phone numbers; digits spaced one by one are one group.
        said = (" " if all(len(g) == 1 for g in groups) else ", ").join(_digits(g) for g in groups)
        return f"plus {said}" if found.startswith("+") else said

    return _PHONE.sub(spell, text)


def _codes(text: str) -> str:
    text = _CONTEXT_CODE.sub(lambda m: f"{m['word']}{m['gap']}{_digits(m['code'])}", text)
    text = _SKU.sub(lambda m: f"{' '.join(m['letters'])} {_digits(m['digits'])}", text)
    return _LEADING_ZERO.sub(lambda m: _digits(m[0]), text)


# --- prices --------------------------------------------------------------------------------------


def _prices(text: str) -> str:
    def symbol_first(match: re.Match[str]) -> str:
        return _price(match["amount"], match["cur"], None)

    def amount_first(match: re.Match[str]) -> str:
        return _price(match["amount"], match["cur"], match["minor"])

    text = _SYMBOL_PRICE.sub(symbol_first, text)
    return _WORD_PRICE.sub(amount_first, text)


def _price(amount: str, currency: str, minor: str | None) -> str:
    (major_one, major_many), (minor_one, minor_many) = _CURRENCIES[currency.lower()]
    whole, cents = _split_amount(amount)
    if minor is not None:
        cents = int(minor)
    said = f"{_cardinal(whole)} {major_one if whole == 1 else major_many}"
    if not cents:
        return said
    if whole == 0:
        return f"{_cardinal(cents)} {minor_one if cents == 1 else minor_many}"
    # "twenty four euros ninety" as people say prices; "oh five" keeps 24.05 apart from 24.50.
    return f"{said} {'oh ' if cents < 10 else ''}{_cardinal(cents)}"


def _split_amount(amount: str) -> tuple[int, int]:
    # "1,299" is thousands; "24,90" is a European decimal comma.
    decimal = re.search(r"[.,](\d{1,2})$", amount)
    if decimal is None:
        return int(amount.replace(",", "")), 0
    whole = amount[: decimal.start()].replace(",", "")
    cents = decimal[1] if len(decimal[1]) == 2 else decimal[1] + "0"
    return int(whole), int(cents)


# --- numbers -------------------------------------------------------------------------------------


def _numbers(text: str) -> str:
    text = _PERCENT.sub(lambda m: f"{_decimal(m['number'])} percent", text)
    text = _UNIT.sub(_unit, text)
    # Spaces around the words: "4K" is "four K", not "fourK".
    text = _ORDINAL.sub(lambda m: f" {_ordinal(int(m['number']))} ", text)
    text = _DECIMAL.sub(lambda m: f" {_decimal(m[0])} ", text)
    return _INTEGER.sub(lambda m: f" {_cardinal(int(m[0].replace(',', '')))} ", text)


def _unit(match: re.Match[str]) -> str:
    one, many = _UNITS[match["unit"]]
    number = match["number"]
    return f"{_decimal(number)} {one if number == '1' else many}"


def _symbols(text: str) -> str:
    text = text.replace("&", " and ").replace("@", " at ").replace("+", " plus ").replace("/", " ").replace("#", " ")
    return text.replace("…", "...").replace("–", ", ").replace("—", ", ")


def _tidy(text: str) -> str:
    text = re.sub(r"\s+", " ", text)
    text = re.sub(r"\s+([.,!?;:)\]])", r"\1", re.sub(r"([(\[])\s+", r"\1", text))
    text = re.sub(r"([.!?])(?:\s*[.,;:])+", r"\1", text)  # ". ." left where markup was
    return text.strip(" ,;:")


# --- words ---------------------------------------------------------------------------------------


def _cardinal(number: int) -> str:
    # Past a trillion nobody says the number (and num2words gives up): read the digits.
    return _plain(num2words(number)) if number < _SAID_LIMIT else _digits(str(number))


def _ordinal(number: int) -> str:
    return _plain(num2words(number, to="ordinal")) if number < _SAID_LIMIT else _digits(str(number))


def _year(year: str) -> str:
    return _plain(num2words(int(year), to="year"))


def _decimal(number: str) -> str:
    whole, _, fraction = number.replace(",", "").partition(".")
    said = _cardinal(int(whole))
    return f"{said} point {_digits(fraction)}" if fraction else said


def _digits(digits: str) -> str:
    return " ".join(_DIGIT_WORDS[int(d)] for d in digits)


def _plain(words: str) -> str:
    # num2words writes "twenty-four" and "one thousand, two hundred": hyphens and commas are pauses to a voice.
    return words.replace("-", " ").replace(",", "")


_RULES: tuple[Callable[[str], str], ...] = (
    _strip_markup,
    _abbreviations,
    _dates,
    _times,
    _phone_numbers,
    _prices,
    _codes,
    _numbers,
    _symbols,
)
