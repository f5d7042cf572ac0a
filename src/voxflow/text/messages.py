"""Text that arrives as separate messages, joined the way its writer meant it.

Agent frameworks that aggregate an LLM's tokens into sentences send each sentence as its own
message and drop the space between them: Pipecat's ElevenLabs service sends ``"Sure thing!"``,
then ``"The table is booked."``. Joined as sent, ``"thing!The"`` is no sentence end to the
segmenter, and the phonemizer reads the punctuation aloud ("exclamation mark"). A space belongs
there: ``separate_sentences`` gives it back.

The rule is narrow, so that text streamed as LLM tokens (which carry their own spaces) never
changes: only where the text so far ends with a sentence end (``.``, ``!``, ``?`` or ``…`` after a
letter or a digit, then closing quotes or brackets) *and* the new message starts with a capital
letter (after opening quotes or brackets). ``"3." + "5"`` and ``"e.g." + "the"`` stay as sent.

Pure functions.
"""

from __future__ import annotations

import re

__all__ = ["separate_sentences"]

# A sentence end at the very end of the text: a word character, terminal punctuation, then
# closing quotes and brackets.
_ENDS_SENTENCE = re.compile(r"\w[.!?…]+[\"'”’)\]]*\Z")
# A sentence start at the very start of the message: opening quotes or brackets, a capital.
_STARTS_SENTENCE = re.compile(r"[\"'“‘(\[¿¡]*[^\W\d_]")


def separate_sentences(before: str, message: str) -> str:
    """``message`` as it should follow ``before``: with one space in front when ``before`` ends a
    sentence and ``message`` starts the next one with nothing between them (see the module
    docstring); otherwise unchanged."""
    if not before or not message:
        return message
    start = _STARTS_SENTENCE.match(message)
    if start is None or not start.group()[-1].isupper():
        return message
    if _ENDS_SENTENCE.search(before) is None:
        return message
    return " " + message
