"""Client for the native WebSocket protocol, and a model of a client's audio player."""

from voxflow.client.client import (
    AudioEvent,
    CancelledEvent,
    ContextRecorder,
    ContextResult,
    DoneEvent,
    DoneMetrics,
    ErrorEvent,
    Event,
    TimestampsEvent,
    VoxflowClient,
    VoxflowConnectionError,
    WordTimestamp,
    parse_event,
    speak,
    stream_url,
)
from voxflow.client.playout import PlayoutBuffer, PlayoutStats

__all__ = [
    "AudioEvent",
    "CancelledEvent",
    "ContextRecorder",
    "ContextResult",
    "DoneEvent",
    "DoneMetrics",
    "ErrorEvent",
    "Event",
    "PlayoutBuffer",
    "PlayoutStats",
    "TimestampsEvent",
    "VoxflowClient",
    "VoxflowConnectionError",
    "WordTimestamp",
    "parse_event",
    "speak",
    "stream_url",
]
