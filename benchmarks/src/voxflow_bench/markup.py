"""``voxflow bench-markup``: what SSML and pronunciation dictionaries cost.

* *ttfa*: each corpus reply streamed as LLM tokens to a running server, as plain text and as SSML
  with a few tags (``tagged``: a ``<speak>``, an ``<emphasis>`` and a ``<sub>`` in the first
  sentence, a ``<break>`` after it, a ``<prosody>`` over the last sentence), the two in turn so
  that drift hits both alike; first audio from the first token. The tags' own tokens go out with
  the text token after them (``text_paced``), so that the text arrives at the same pace both
  ways: the figure is what the server's reading of the markup costs, not the time an LLM takes
  to write it. It is the ratio of the medians, and the median of each reply's own ratio.
* *dictionary*: the normalizer's time per segment (the corpus cut as the server cuts it), with a
  dictionary of ``entries`` words against none, each pass on fresh normalizers (no memo).
"""

from __future__ import annotations

import asyncio
import html
import re
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass

from voxflow import (
    AudioEvent,
    CancelledEvent,
    ChunkingConfig,
    DoneEvent,
    ErrorEvent,
    Lexicon,
    LexiconEntry,
    Normalizer,
    VoxflowClient,
    segment_text,
    stream_url,
)
from voxflow_bench.corpus import Reply
from voxflow_bench.tokens import llm_tokens

__all__ = [
    "DictionaryCost",
    "MarkupTtfa",
    "dictionary_cost",
    "dictionary_lexicon",
    "markup_ttfa",
    "tagged",
]

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"(?<![&\w])[A-Za-z]{3,}\b(?!;)")  # a word, never an entity's name


def tagged(text: str) -> str:
    """``text`` as SSML with a few tags, spoken the same but for a 200 ms break and a slightly
    slower last sentence."""
    sentences = _SENTENCE_END.split(html.escape(text, quote=False).strip())
    first = sentences[0]
    words = list(_WORD.finditer(first))
    if len(words) >= 2:
        a, b = words[0], words[-1]
        first = (
            f"{first[: a.start()]}<emphasis>{a.group()}</emphasis>{first[a.end() : b.start()]}"
            f'<sub alias="{b.group()}">{b.group()}</sub>{first[b.end() :]}'
        )
    parts = [first + '<break time="200ms"/>', *sentences[1:]]
    if len(parts) > 1:
        parts[-1] = f'<prosody rate="95%">{parts[-1]}</prosody>'
    return "<speak>" + " ".join(parts) + "</speak>"


@dataclass(frozen=True)
class MarkupTtfa:
    plain_ms: tuple[float, ...]
    tagged_ms: tuple[float, ...]

    @property
    def ratio_of_medians(self) -> float:
        return statistics.median(self.tagged_ms) / statistics.median(self.plain_ms)

    @property
    def median_ratio(self) -> float:
        return statistics.median(t / p for p, t in zip(self.plain_ms, self.tagged_ms, strict=True))

    def render(self) -> str:
        return (
            f"ttfa from the first token, {len(self.plain_ms)} replies: plain median "
            f"{statistics.median(self.plain_ms):.0f} ms, tagged median "
            f"{statistics.median(self.tagged_ms):.0f} ms; tagged / plain: "
            f"{self.ratio_of_medians:.3f} (medians), {self.median_ratio:.3f} (median of ratios)"
        )


def text_paced(tokens: Sequence[str]) -> list[str]:
    """``tokens`` with each token that holds no written text (a tag, or part of one) sent with
    the next one that does."""
    out: list[str] = []
    held = ""
    inside = False
    for token in tokens:
        text = False
        for char in token:
            if char == "<":
                inside = True
            elif char == ">":
                inside = False
            elif not inside and not char.isspace():
                text = True
        held += token
        if text:
            out.append(held)
            held = ""
    if held:
        out.append(held)
    return out


async def _streamed_ttfa(
    client: VoxflowClient, context_id: str, text: str, ssml: bool, token_rate: float
) -> float:
    """First audio from the first token; the context is cancelled once it has come (the rest
    of its audio would only take time)."""
    await client.start(
        context_id, output_format="pcm_24000", seed=1, text_format="ssml" if ssml else None
    )
    begin = time.monotonic()
    first_token: float | None = None
    for i, token in enumerate(text_paced(llm_tokens(text))):
        delay = begin + i / token_rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        sent = await client.send_text(context_id, token)
        first_token = sent if first_token is None else first_token
    await client.end(context_id)
    assert first_token is not None
    ttfa: float | None = None
    async for event in client.events(context_id):
        if isinstance(event, ErrorEvent):
            raise RuntimeError(f"{context_id}: {event.code}: {event.message}")
        if isinstance(event, AudioEvent) and ttfa is None:
            ttfa = 1000.0 * (event.received_at - first_token)
            await client.cancel(context_id)
        if isinstance(event, DoneEvent | CancelledEvent):
            break
    if ttfa is None:
        raise RuntimeError(f"{context_id}: no audio")
    return ttfa


async def markup_ttfa(
    url: str, replies: Sequence[Reply], rounds: int = 2, token_rate: float = 50.0
) -> MarkupTtfa:
    """Each reply plain and tagged, ``rounds`` times each, in alternating order."""
    plain: list[float] = []
    marked: list[float] = []
    async with VoxflowClient.connect(stream_url(url)) as client:
        for round_ in range(rounds):
            for index, reply in enumerate(replies):
                order = (False, True) if (index + round_) % 2 == 0 else (True, False)
                for ssml in order:
                    cid = f"{'tagged' if ssml else 'plain'}-{round_}-{index}"
                    text = tagged(reply.text) if ssml else reply.text
                    ttfa = await _streamed_ttfa(client, cid, text, ssml, token_rate)
                    (marked if ssml else plain).append(ttfa)
    # Each reply's median over the rounds, plain and tagged.
    count = len(replies)
    return MarkupTtfa(
        tuple(statistics.median(plain[i::count]) for i in range(count)),
        tuple(statistics.median(marked[i::count]) for i in range(count)),
    )


def dictionary_lexicon(entries: int) -> Lexicon:
    """``entries`` made-up brand and drug names, half respelled, half given as phonemes."""
    return Lexicon(
        LexiconEntry(f"Brand{n}x", respelling=f"brand {n} ex")
        if n % 2
        else LexiconEntry(f"Drug{n}ol", phonemes="dɹˈʌɡɑːl")
        for n in range(entries)
    )


@dataclass(frozen=True)
class DictionaryCost:
    entries: int
    segments: int
    plain_ms: float  # median per segment
    with_dictionary_ms: float

    def render(self) -> str:
        added = self.with_dictionary_ms - self.plain_ms
        return (
            f"normalizer per segment ({self.segments} segments): {self.plain_ms:.3f} ms without "
            f"a dictionary, {self.with_dictionary_ms:.3f} ms with {self.entries} entries "
            f"(+{added:.3f} ms)"
        )


def dictionary_cost(
    replies: Sequence[Reply], entries: int = 100, passes: int = 9
) -> DictionaryCost:
    """The normalizer's median time per segment over ``passes`` passes, with and without a
    dictionary of ``entries`` words (its names put into some of the segments)."""
    segments = [
        segment.text for reply in replies for segment in segment_text(reply.text, ChunkingConfig())
    ]
    segments = [
        s + (f" Ask about Brand{i % entries}x." if i % 3 == 0 else "")
        for i, s in enumerate(segments)
    ]
    lexicon = dictionary_lexicon(entries)
    plain: list[float] = []
    with_lexicon: list[float] = []
    for _ in range(passes):
        for normalizer, times in ((Normalizer(), plain), (Normalizer(lexicon), with_lexicon)):
            start = time.perf_counter()
            for segment in segments:
                normalizer.normalize(segment)
            times.append(1000.0 * (time.perf_counter() - start) / len(segments))
    return DictionaryCost(
        entries, len(segments), statistics.median(plain), statistics.median(with_lexicon)
    )
