"""What a wire protocol needs of the server: its voices and the session's limits, nothing more.

The composition root builds one per server (``voxflow.server.services``); a test builds one from
a ``SessionConfig`` and a voice registry, with no workers and no model loaded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from voxflow.engines.base import VoiceInfo
from voxflow.session.options import SessionConfig

__all__ = ["ProtocolContext"]


@dataclass(frozen=True)
class ProtocolContext:
    # Raises ``VoiceNotFoundError`` for a name the server does not have.
    voice: Callable[[str], VoiceInfo]
    voices: Callable[[], Sequence[VoiceInfo]]
    default_voice: str
    max_message_chars: int  # one message's text
    max_contexts: int  # open contexts per connection
    max_segment_chars: int  # the segmenter's longest segment
    max_buffered_chars: int  # text a context may hold unspoken
    kokoro_slots: int  # admission slots a Kokoro stream holds

    @classmethod
    def of(
        cls,
        config: SessionConfig,
        voice: Callable[[str], VoiceInfo],
        voices: Callable[[], Sequence[VoiceInfo]],
    ) -> ProtocolContext:
        """The context of sessions made with ``config``, speaking ``voice``'s voices."""
        return cls(
            voice=voice,
            voices=voices,
            default_voice=config.default_voice,
            max_message_chars=config.max_message_chars,
            max_contexts=config.max_contexts,
            max_segment_chars=config.chunking.max_chars,
            max_buffered_chars=config.max_buffered_chars,
            kokoro_slots=config.kokoro_slots,
        )
