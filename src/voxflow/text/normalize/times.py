"""Normalizer rules for clock times, time ranges and colon ratios.

Decisions (US English), each the way a person reads the time aloud:

* With a.m./p.m. (written ``am``, ``AM``, ``a.m.``, ``A.M.``, with or without a space, after
  "10", "10:30" or the British "10.30"), the hour (1 to 12) and its minutes, then the letters:
  "10am" -> "ten eigh m", "10:30 p.m." -> "ten thirty p m", "9:05 am" -> "nine oh five eigh m",
  "10:00 a.m." -> "ten eigh m" (no "o'clock" before a.m./p.m.). "12pm" and "12am" read as written,
  "twelve p m" and "twelve eigh m": which of noon and midnight the writer meant is theirs to say.
* The letter A is written "eigh" (``spell_letter``): espeak-ng reads a lone "a" or "A" before a
  word as the article ("ten a m" -> "ten uh em"), and "am"/"AM" as the word "am" ("ten am" ->
  "ten am"); "eigh m" is always "ay em". So "ten eigh m" is the spoken form, not a misspelling.
* Without a.m./p.m.: hours 1 to 12 on the hour read "o'clock" ("7:00" -> "seven o'clock",
  "12:00" -> "twelve o'clock"); 13 to 23 on the hour "hundred" ("14:00" -> "fourteen hundred");
  other minutes follow the hour ("14:30" -> "fourteen thirty", "08:15" -> "eight fifteen", "00:30"
  -> "zero thirty"), minutes 01 to 09 with "oh"; "00:00" and "24:00" are "midnight"; seconds add
  "and N seconds". A bare "10.30" stays a decimal number and "10" a number.
* "noon", "midnight" and "5 o'clock" are already words: the number rule reads the "5".
* A dash after a time, before a time, "noon" or "midnight", reads "to", spaced or not: "9am-5pm"
  and "9am - 5pm" -> "nine eigh m to five p m", "10:30 - 11:30" -> "ten thirty to eleven
  thirty", "10am-noon" -> "ten eigh m to noon". Between plain numbers the numeric range rule
  reads "9-5" as "nine to five" and leaves the spaced "9 - 5" alone (it may be a subtraction).
  "9 to 5" needs nothing.
* The period of "a.m." (or of "am.") is kept as the sentence's own where the text ends there or a
  capital follows ("at 3 p.m. Then" -> "... p m. Then"), the same cut ``voxflow.text.segment``
  makes there, so the voice ends the sentence where the segmenter did.
* Not times: "I am", "AM radio", "a.m." alone (no number before), "3 amps", "10 pmt".
* A colon between numbers whose right side is not two digits is a ratio or a score: "3:2" ->
  "three to two", "16:9" -> "sixteen to nine", "1:100" -> "one to one hundred" (espeak-ng would
  say "colon"). A chapter and verse ("Psalm 23:4") reads the same way, the lesser evil.
"""

from __future__ import annotations

import re

from voxflow.text.normalize.base import Context, Match, Piece, ends_sentence, is_right_edge, whole
from voxflow.text.normalize.datetime import spell_letter
from voxflow.text.normalize.numbers import cardinal, number

__all__ = ["ratio_rule", "time_range_rule", "time_rule"]

_TIME = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2}))?")
# The British "10.30pm": only with a.m./p.m. after it (else a decimal number).
_DOTTED_TIME = re.compile(r"(\d{1,2})\.(\d{2})")
_HOUR = re.compile(r"(\d{1,2})")
_MERIDIEM = re.compile(r"[ \u00a0]?([AaPp])(\.?)[Mm](\.?)")
# What follows a sentence's last word when the next sentence starts (the segmenter's cut).
_CAPITAL_AFTER = re.compile(r"[ \u00a0]+[\"'“‘(]?[A-Z]")
# A dash after a time: hyphen, en dash or em dash, spaced or not (the numeric range rule reads
# an unspaced dash before a number too, but not before "noon").
_DASH = re.compile(r"[ \u00a0]*[-–—][ \u00a0]*")
_NAMED_TIME = re.compile(r"(?:noon|midnight)\b", re.IGNORECASE)
_RATIO = re.compile(r"(\d{1,4}):(\d{1,4})")


def _meridiem(text: str, pos: int) -> tuple[Piece, ...] | None:
    """ "a.m."/"pm" after a time, as pieces (with the sentence's period kept when it was also
    the abbreviation's)."""
    found = _MERIDIEM.match(text, pos)
    if found is None:
        return None
    end = found.end()
    # "3 amps" and "3 pmt" are not times.
    if not is_right_edge(text, end) and text[end - 1] != ".":
        return None
    start = pos + (1 if text[pos] in " \u00a0" else 0)
    letter = found.group(1).lower()
    pieces = [Piece(f"{spell_letter(letter)} m", start, end)]
    if text[end - 1] == "." and (
        ends_sentence(text, end) or _CAPITAL_AFTER.match(text, end) is not None
    ):
        pieces.append(Piece(".", end - 1, end, attach=True))
    return tuple(pieces)


def _minutes(hour_words: str, minute: int) -> str:
    if minute == 0:
        return hour_words
    if minute < 10:
        return f"{hour_words} oh {cardinal(minute)}"
    return f"{hour_words} {cardinal(minute)}"


def _seconds(second: str | None) -> str:
    if second is None or not int(second):
        return ""
    return f" and {cardinal(int(second))} second{'' if int(second) == 1 else 's'}"


def _with_meridiem(
    text: str, pos: int, end: int, hour: int, minute: int | None, second: str | None = None
) -> Match | None:
    """ "10:30 p.m.", "10.30pm", "10am" (``minute`` None: a bare hour): the hour and minutes,
    then the letters. Hour 0 only with minutes ("0:30 a.m.", as some clocks show it)."""
    lowest = 1 if minute is None else 0
    meridiem = _meridiem(text, end) if lowest <= hour <= 12 else None
    if meridiem is None:
        return None
    spoken = _minutes(cardinal(hour), minute or 0) + _seconds(second)
    return Match(pos, meridiem[-1].end, (Piece(spoken, pos, end), *meridiem), "time")


def _twenty_four_hour(text: str, pos: int, found: re.Match[str]) -> Match | None:
    hour, minute = int(found.group(1)), int(found.group(2))
    second = found.group(3)
    end = found.end()
    if not is_right_edge(text, end):
        return None
    if minute == 0 and hour in (0, 24):
        spoken = "midnight"
    elif minute == 0:
        spoken = f"{cardinal(hour)} o'clock" if 1 <= hour <= 12 else f"{cardinal(hour)} hundred"
    else:
        spoken = _minutes("zero" if hour == 0 else cardinal(hour), minute)
    return whole(spoken + _seconds(second), pos, end, "time")


def _starts_time(text: str, pos: int) -> bool:
    """Whether a clock time, "noon" or "midnight" begins at ``pos`` (a range's second end)."""
    if _NAMED_TIME.match(text, pos) is not None:
        return True
    return time_rule(Context(text, shouting=False), pos, None) is not None


def time_rule(ctx: Context, pos: int, prev: Match | None) -> Match | None:
    """Clock times: "3:30 p.m.", "14:05", "9:00", "3pm", "11 a.m.", "10.30pm"."""
    del prev
    text = ctx.text
    if pos > 0 and (text[pos - 1].isalnum() or text[pos - 1] in "_:."):
        return None
    found = _TIME.match(text, pos)
    if found is not None:
        hour, minute = int(found.group(1)), int(found.group(2))
        second = found.group(3)
        if hour > 24 or minute > 59 or (second is not None and int(second) > 59):
            return None
        return _with_meridiem(text, pos, found.end(), hour, minute, second) or _twenty_four_hour(
            text, pos, found
        )
    found = _DOTTED_TIME.match(text, pos)
    if found is not None:
        hour, minute = int(found.group(1)), int(found.group(2))
        if minute > 59:
            return None
        return _with_meridiem(text, pos, found.end(), hour, minute)
    found = _HOUR.match(text, pos)
    if found is None:
        return None
    return _with_meridiem(text, pos, found.end(), int(found.group(1)), None)


def time_range_rule(ctx: Context, pos: int, prev: Match | None) -> Match | None:
    """A dash between two clock times reads "to" ("10:30 - 11:30", "10am-noon")."""
    if prev is None or prev.end != pos or prev.kind != "time":
        return None
    text = ctx.text
    found = _DASH.match(text, pos)
    if found is None or not _starts_time(text, found.end()):
        return None
    return whole("to", pos, found.end(), "range:time")


def ratio_rule(ctx: Context, pos: int, prev: Match | None) -> Match | None:
    """A ratio or score written with a colon ("3:2", "16:9"), which is not a clock time."""
    del prev
    text = ctx.text
    if pos > 0 and (text[pos - 1].isalnum() or text[pos - 1] in "_:.,"):
        return None
    found = _RATIO.match(text, pos)
    if found is None or len(found.group(2)) == 2 or not is_right_edge(text, found.end()):
        return None
    if text.startswith(":", found.end()):
        return None  # "1:2:3" and the like: no reading is sure
    left, right = found.group(1), found.group(2)
    pieces = (
        Piece(number(left), pos, found.end(1)),
        Piece("to", found.end(1), found.start(2)),
        Piece(number(right), found.start(2), found.end()),
    )
    return Match(pos, found.end(), pieces, "ratio")
