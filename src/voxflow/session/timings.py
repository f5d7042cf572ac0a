"""Word timings: from the engine's words (spoken form, latent frames) to what a client reads
(written words, milliseconds on the context's audio timeline)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from voxflow.engines.base import Utterance, WordSpan
from voxflow.session.events import WordTiming
from voxflow.session.pieces import PieceText

__all__ = ["word_timings"]


def word_timings(
    utterance: Utterance,
    words: Sequence[WordSpan],
    text: PieceText,
    to_output: Callable[[int], int],
    sample_offset: int = 0,
    offset_ms: float = 0.0,
) -> list[WordTiming]:
    """Timings of ``words`` (of ``utterance``, which spoke ``text``) on the output timeline.

    ``to_output`` maps a sample position of the seam joiner's segment to an output sample (the
    joiner's ``SegmentMap.to_output``); ``sample_offset`` is the joiner position of the
    utterance's sample 0; ``offset_ms`` is added to every time (codec priming). Characters index
    the client's text. The engine's words are words of the spoken form; several of them can come
    from one written token ("$3.50" is five spoken words), and those become one timing for the
    token; a spoken word with no written counterpart is left out.
    """
    spf = utterance.samples_per_frame
    ms_per_sample = 1000.0 / utterance.sample_rate
    source = text.source_text
    timings: list[WordTiming] = []
    for w in words:
        src_start, src_end = text.normalized.to_source(
            text.spoken_start + w.char_start, text.spoken_start + w.char_end
        )
        if src_end <= src_start:
            continue  # an inserted spoken word with no written counterpart
        start_ms = offset_ms + ms_per_sample * to_output(w.start_frame * spf + sample_offset)
        end_ms = offset_ms + ms_per_sample * to_output(w.end_frame * spf + sample_offset)
        char_start = text.source_start + src_start
        char_end = text.source_start + src_end
        if timings and char_start < timings[-1].char_end:
            last = timings[-1]
            char_end = max(char_end, last.char_end)
            timings[-1] = WordTiming(
                word=source[last.char_start - text.source_start : char_end - text.source_start],
                start_ms=last.start_ms,
                end_ms=max(end_ms, last.end_ms),
                char_start=last.char_start,
                char_end=char_end,
            )
            continue
        timings.append(
            WordTiming(
                word=source[src_start:src_end],
                start_ms=start_ms,
                end_ms=end_ms,
                char_start=char_start,
                char_end=char_end,
            )
        )
    return timings
