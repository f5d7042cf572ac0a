"""The one place where a client's options are validated and its voice looked up.

Every protocol decodes its own wire fields (types, names, its own ranges such as ElevenLabs'
chunk schedule bounds) and then hands the values here: voice names, languages (against the
voice), output formats, normalization modes, voice settings and text lengths are checked once,
the same way for all of them, and a refusal is a ``SessionError`` with a code from
``voxflow.session.errors``. The session resolves a context's ``StartOptions`` with
``context_options`` when it opens one.

The values themselves are strict here too, whatever carried them: a number is a finite JSON
number (never a boolean, ``NaN`` or an infinity, ``finite_number``); a name (voice, speaker,
context id, output format) is short and printable (``check_name``); a text to speak is cleaned of
control characters and refused if it holds a lone surrogate (``clean_text``). A refusal's message
shows a client's value only in a bounded, escaped form (``shown``), so it is always safe to send
back as JSON and UTF-8.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from voxflow.audio.formats import OutputFormat, UnsupportedFormatError, parse_output_format
from voxflow.audio.seam_settings import SeamSettings
from voxflow.engines.base import VoiceInfo, VoiceNotFoundError, VoiceSettings
from voxflow.session.context import (
    DEFAULT_HURRY_MARGIN_S,
    DEFAULT_MAX_PIECE_CHARS,
    KOKORO_HURRY_MARGIN_S,
    ContextOptions,
)
from voxflow.session.errors import SessionError
from voxflow.text.chunking import ChunkingConfig, every_sentence
from voxflow.text.language import locale_matches, parse_locale, text_rules_of
from voxflow.text.lexicon import Lexicon
from voxflow.text.normalize.normalizer import NormalizationMode, Normalizer
from voxflow.text.ssml import SSML, SsmlDialect

__all__ = [
    "MAX_NAME_CHARS",
    "MAX_SEED",
    "SessionConfig",
    "StartOptions",
    "VoiceLookup",
    "check_language",
    "check_name",
    "check_pause",
    "check_speaker",
    "check_text",
    "check_volume",
    "clean_text",
    "context_options",
    "finite_number",
    "normalization_mode",
    "output_format",
    "resolve_voice",
    "shown",
    "text_format",
    "voice_settings",
]

VoiceLookup = Callable[[str], VoiceInfo]

MAX_SEED = 4_294_967_295  # a seed is an unsigned 32-bit integer, as ElevenLabs' is
# A name (voice, speaker, language, context id, output format) is echoed in replies and logs; no
# real one comes near this, and it bounds what a refusal's message repeats.
MAX_NAME_CHARS = 256
_SHOWN_CHARS = 60

# C0 controls except tab, line feed and carriage return; DEL; C1 controls. None is spoken, and
# NUL in particular ends a C string inside the phonemizer (the rest of the text would be lost).
_CONTROL_IN_TEXT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
# Every C0 and C1 control, tab and line breaks included: none belongs in a name.
_CONTROL_IN_NAME = re.compile("[\x00-\x1f\x7f-\x9f]")
# Half of a UTF-16 pair on its own (JSON's "\ud800"): not a character, and no UTF-8 encoder
# accepts it, so it can be neither spoken nor sent back.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class SessionConfig:
    default_voice: str
    default_format: str = "pcm_24000"
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)
    max_contexts: int = 16
    max_message_chars: int = 10_000
    max_buffered_chars: int = 50_000
    seams: SeamSettings = field(default_factory=SeamSettings)
    normalizer: Normalizer = field(default_factory=Normalizer)  # server-wide lexicon included
    max_piece_chars: int = DEFAULT_MAX_PIECE_CHARS  # spoken characters per engine call
    phrase_cache: bool = False  # the server has one: ``Session.prefetch`` may be used
    kokoro_slots: int = 2  # admission slots a Kokoro stream holds (``Admission``)
    kokoro_fallback_voice: str | None = None  # spoken instead when a Kokoro stream finds no room
    # How long before its listener would run out of audio a context cuts a lead from the text
    # that has arrived (``Context.hurry_at``): the lead's text stage and first window, and the
    # wait for a worker on a loaded machine.
    hurry_margin_s: float | None = DEFAULT_HURRY_MARGIN_S  # None: never
    # The same for a Kokoro voice, whose lead takes longer to its first audio (a text stage
    # and a window of about a core's real time each).
    kokoro_hurry_margin_s: float | None = KOKORO_HURRY_MARGIN_S
    kokoro_takeovers: bool = False


@dataclass(frozen=True)
class StartOptions:
    """What a client may set when it opens a context; ``None`` means the session default."""

    voice: str | None = None
    output_format: str | None = None
    settings: VoiceSettings = field(default_factory=VoiceSettings)
    chunk_length_schedule: tuple[int, ...] | None = None
    auto_mode: bool | None = None
    normalization: NormalizationMode = NormalizationMode.AUTO
    lexicon: Lexicon | None = None  # per-request entries, over the server-wide lexicon
    # Paced contexts keep a bounded lead over their listener's playback (a live stream); an
    # unpaced one renders as fast as the workers allow (a whole-text HTTP request).
    paced: bool = True
    markup: SsmlDialect | None = None  # None: the text is plain text, tags and all
    volume: float = 1.0  # a linear gain
    sentence_pause_ms: float | None = None  # None: the server's
    # The language the client says its text is in (``ja``, ``en-GB``): the voice must speak it
    # (``check_language``). None: the voice's own, whatever it is.
    language: str | None = None


def resolve_voice(
    voices: VoiceLookup,
    name: str | None,
    default: str,
    alias: Callable[[str], bool] | None = None,
    hint: str | None = None,
) -> VoiceInfo:
    """The voice ``name`` selects; no name selects ``default``.

    A name the server does not have selects ``default`` too when ``alias`` accepts it: clients
    written for another service carry that service's voice names (OpenAI's ``alloy``,
    ElevenLabs' 20-character ids), and they work unchanged. Anything else is ``unknown_voice``,
    its message ending with ``hint`` (which names the aliases a protocol accepts).
    """
    if not name:
        name = default
    check_name(name, "voice name", "unknown_voice")
    try:
        return voices(name)
    except VoiceNotFoundError as error:
        if alias is not None and alias(name):
            return voices(default)
        message = str(error) if hint is None else f"{error}; {hint}"
        raise SessionError("unknown_voice", message) from error


def check_language(voice: VoiceInfo, language: str | None) -> None:
    """Refuse a request whose ``language`` the voice does not speak: ``invalid_language`` for a
    value that is no language code, ``unsupported_language`` for one the voice does not speak
    (``ja`` with ``en_US``; ``en-GB`` with ``en_US``, while plain ``en`` matches both English
    voices: ``voxflow.text.language.locale_matches``). A voice never speaks another language's
    text well (its phonemizer, sentence marks and number readings are its language's), so the
    request is refused before anything of it is spoken rather than read out wrong."""
    if language is None:
        return
    check_name(language, "language", "invalid_language")
    try:
        parse_locale(language)
    except ValueError:
        # Shown bounded (``shown``), as every refused name is.
        raise SessionError(
            "invalid_language",
            f"language {shown(language)} is not a language code (write ja, en, en-US or en_GB)",
        ) from None
    if not locale_matches(language, voice.language):
        # A language code is short and plain (``parse_locale`` took it): shown as written.
        raise SessionError(
            "unsupported_language",
            f"voice {voice.name} speaks {voice.language or 'an unknown language'}, "
            f"not {language.strip()}",
        )


def check_speaker(voice: VoiceInfo, speaker_id: int | None) -> None:
    """Refuse a speaker the voice does not have (the engine would fail on every segment)."""
    if speaker_id is None:
        return
    if voice.num_speakers <= 1:
        if speaker_id != 0:
            raise SessionError(
                "unknown_speaker",
                f"voice {voice.name!r} has a single speaker; speaker_id must be 0 or absent",
            )
        return
    if not 0 <= speaker_id < voice.num_speakers:
        raise SessionError(
            "unknown_speaker",
            f"speaker_id {speaker_id} is out of range for voice {voice.name!r} "
            f"({voice.num_speakers} speakers)",
        )


def output_format(
    name: str, parse: Callable[[str], OutputFormat] = parse_output_format
) -> OutputFormat:
    """The output format ``name`` selects; ``parse`` reads a protocol's own names (OpenAI's)."""
    check_name(name, "output format", "unsupported_format")
    try:
        return parse(name)
    except UnsupportedFormatError as error:
        raise SessionError("unsupported_format", str(error)) from error


def normalization_mode(raw: str | None) -> NormalizationMode:
    """``apply_text_normalization``: ``auto``, ``on`` or ``off`` (any case); absent: ``auto``."""
    try:
        return NormalizationMode((raw or "auto").lower())
    except ValueError:
        raise SessionError(
            "invalid_normalization",
            f"apply_text_normalization must be auto, on or off, got {shown(raw)}",
        ) from None


def voice_settings(
    speed: float = 1.0,
    noise_scale: float | None = None,
    noise_w: float | None = None,
    seed: int | None = None,
    speaker_id: int | None = None,
) -> VoiceSettings:
    """``VoiceSettings`` with every value in range, or ``invalid_voice_settings``.

    The protocols hand over numbers they have type-checked (``finite_number``); this checks them
    again, so a caller that did not (the Python API) cannot pass NaN or a boolean either: NaN
    compares false with every bound and would otherwise reach the engine and the JSON replies.
    """
    for name, value in (("speed", speed), ("noise_scale", noise_scale), ("noise_w", noise_w)):
        if value is not None and (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise SessionError("invalid_voice_settings", f"{name} must be a finite number")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise SessionError("invalid_voice_settings", "seed must be an integer")
    if seed is not None and not 0 <= seed <= MAX_SEED:
        raise SessionError("invalid_voice_settings", f"seed must be between 0 and {MAX_SEED}")
    if speaker_id is not None and (isinstance(speaker_id, bool) or not isinstance(speaker_id, int)):
        raise SessionError("invalid_voice_settings", "speaker_id must be an integer")
    try:
        return VoiceSettings(
            speed=speed, noise_scale=noise_scale, noise_w=noise_w, seed=seed, speaker_id=speaker_id
        )
    except ValueError as error:
        raise SessionError("invalid_voice_settings", str(error)) from error


def check_text(text: str, max_chars: int) -> None:
    """Refuse one message's text over ``max_chars`` (a whole HTTP request's, too)."""
    if len(text) > max_chars:
        raise SessionError(
            "text_too_long",
            f"a text message may hold at most {max_chars} characters, got {len(text)}",
        )


def clean_text(text: str) -> str:
    """A client's text to speak, as every protocol hands it to the session.

    Control characters are *cleaned*, not refused: NUL and the other C0 controls except tab, line
    feed and carriage return, DEL and the C1 controls each become one space. They have no sound,
    text from an LLM or a copied document carries them now and then, and refusing would fail a
    live stream (an ElevenLabs WebSocket closes on any error) over something nobody hears. One
    space for one character keeps every character offset (word timings, alignments) pointing at
    the text the client sent, and keeps a word boundary where the control stood. Left in, NUL
    would end the text inside the phonemizer: the request would fail after its audio began.

    A lone UTF-16 surrogate (a JSON ``"\\ud800"`` with no pair) is *refused*
    (``invalid_message``): it is not a character at all, so there is nothing to clean it into
    that the client meant, and it could not be sent back in UTF-8 (alignments echo the text).
    """
    if _LONE_SURROGATE.search(text) is not None:
        raise SessionError(
            "invalid_message", "text holds a lone UTF-16 surrogate, which is not a character"
        )
    return _CONTROL_IN_TEXT.sub(" ", text)


def check_name(value: str, what: str, code: str) -> str:
    """``value`` if it can be a name (a voice, speaker, language, context id, output format):
    at most ``MAX_NAME_CHARS`` characters with no control character and no lone surrogate;
    otherwise ``SessionError(code)``. Names are refused rather than cleaned: a cleaned name would
    be a different name, and it is echoed back (a context id in every reply)."""
    if len(value) > MAX_NAME_CHARS:
        raise SessionError(code, f"{what} must be at most {MAX_NAME_CHARS} characters")
    if _CONTROL_IN_NAME.search(value) is not None or _LONE_SURROGATE.search(value) is not None:
        raise SessionError(
            code, f"{what} {shown(value)} holds control characters or lone surrogates"
        )
    return value


def finite_number(value: object, what: str, code: str = "invalid_message") -> float | None:
    """A JSON number as a finite float; ``None`` (absent) stays ``None``.

    A boolean is not a number here (Python's ``True`` is an ``int``), nor is a string; ``NaN``
    and the infinities are refused (the JSON decoders already refuse them on the wire; this holds
    for values from anywhere); an integer too large for a float is refused rather than raising
    ``OverflowError`` out of ``float()``. The caller checks the range.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SessionError(code, f"{what} must be a number, got {shown(value)}")
    try:
        number = float(value)
    except OverflowError:
        raise SessionError(code, f"{what} is out of range") from None
    if not math.isfinite(number):
        raise SessionError(code, f"{what} must be a finite number, got {shown(value)}")
    return number


def shown(value: object) -> str:
    """A client's value as a refusal's message may show it: a string, number or boolean as its
    ``repr`` (which escapes control characters and surrogates), cut to a few dozen characters;
    anything else by its kind alone (a nested list could be as deep as the recursion limit, or
    megabytes long)."""
    if isinstance(value, str):
        text = repr(value[: _SHOWN_CHARS + 1])  # the rest could be megabytes
    elif isinstance(value, bool | float) or value is None:
        text = repr(value)
    elif isinstance(value, int):
        # Python refuses to print integers of more than 4,300 digits.
        text = repr(value) if abs(value) < 10**_SHOWN_CHARS else "a very large integer"
    elif isinstance(value, list):
        return "a list"
    elif isinstance(value, dict):
        return "an object"
    else:
        return f"a {type(value).__name__}"
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."


def context_options(
    config: SessionConfig, options: StartOptions, voices: VoiceLookup
) -> ContextOptions:
    """What a new context runs with: its voice looked up and every option checked."""
    voice = resolve_voice(voices, options.voice, config.default_voice)
    check_language(voice, options.language)
    check_speaker(voice, options.settings.speaker_id)
    fmt = output_format(options.output_format or config.default_format)
    chunking = config.chunking
    try:
        if options.chunk_length_schedule is not None:
            chunking = replace(chunking, chunk_length_schedule=options.chunk_length_schedule)
        if options.auto_mode is not None:
            chunking = replace(chunking, auto_mode=options.auto_mode)
        chunking = _lead_for_decoder(chunking, fmt.decoder_read_s, options.settings.speed)
        if options.sentence_pause_ms is not None:
            chunking = every_sentence(chunking)
    except ValueError as error:
        raise SessionError("invalid_message", str(error)) from error
    language = text_rules_of(voice.language)
    return ContextOptions(
        voice=voice.name,
        output_format=fmt,
        settings=options.settings,
        chunking=chunking,
        source_rate=voice.sample_rate,
        seams=config.seams,
        normalizer=config.normalizer.for_language(language).with_lexicon(options.lexicon),
        normalization=options.normalization,
        max_piece_chars=config.max_piece_chars,
        hurry_margin_s=(
            config.kokoro_hurry_margin_s if voice.engine == "kokoro" else config.hurry_margin_s
        ),
        takeovers=voice.engine != "kokoro" or config.kokoro_takeovers,
        markup=options.markup,
        language=language,
        volume=check_volume(options.volume),
        sentence_pause_ms=check_pause(options.sentence_pause_ms),
    )


def text_format(raw: object) -> SsmlDialect | None:
    """How a context reads its text, from a protocol's ``text_format``: ``"text"`` (or none)
    plain text, ``"ssml"`` standard SSML; anything else is ``unsupported_text_format``."""
    if raw is None or raw == "text":
        return None
    if raw == "ssml":
        return SSML
    raise SessionError(
        "unsupported_text_format", f"text_format must be 'text' or 'ssml', got {shown(raw)}"
    )


MAX_VOLUME = 4.0
MAX_SENTENCE_PAUSE_MS = 5_000.0


def check_volume(volume: float) -> float:
    """A volume (a linear gain, 1.0 unchanged) from 0 to ``MAX_VOLUME``."""
    if isinstance(volume, bool) or not isinstance(volume, int | float):
        raise SessionError("invalid_voice_settings", "volume must be a number")
    if not 0.0 <= volume <= MAX_VOLUME:  # NaN fails too
        raise SessionError(
            "invalid_voice_settings", f"volume must be between 0 and {MAX_VOLUME:g}, got {volume}"
        )
    return float(volume)


def check_pause(pause_ms: float | None) -> float | None:
    """A pause after a sentence, in milliseconds, from 0 to ``MAX_SENTENCE_PAUSE_MS``."""
    if pause_ms is None:
        return None
    if isinstance(pause_ms, bool) or not isinstance(pause_ms, int | float):
        raise SessionError("invalid_voice_settings", "sentence_pause_ms must be a number")
    if not 0.0 <= pause_ms <= MAX_SENTENCE_PAUSE_MS:
        raise SessionError(
            "invalid_voice_settings",
            f"sentence_pause_ms must be between 0 and {MAX_SENTENCE_PAUSE_MS:g}, got {pause_ms}",
        )
    return float(pause_ms)


# English text as the bundled voice speaks it at speed 1: about 15 characters a second.
_SPOKEN_CHARS_PER_S = 15.0


def _lead_for_decoder(chunking: ChunkingConfig, read_s: float, speed: float) -> ChunkingConfig:
    """A lead long enough for the client's decoder to start on it alone.

    A client that decodes MP3 or AAC with FFmpeg reads 1.5 to 2.5 s of audio before it plays
    anything (``OutputFormat.decoder_read_s``); a lead shorter than that leaves it waiting for
    the rest of the sentence, which an LLM may not have written yet.
    """
    if chunking.lead_cost is None or read_s <= 0:
        return chunking
    low, high = chunking.lead_cost
    needed = int(read_s * _SPOKEN_CHARS_PER_S * speed) + 1
    return replace(chunking, lead_cost=(max(low, needed), max(high, needed + high - low)))
