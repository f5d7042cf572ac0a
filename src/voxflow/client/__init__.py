"""Client for the native WebSocket protocol, and a model of a client's audio player."""

from voxflow.client.client import VoxflowClient, stream_url
from voxflow.client.errors import VoxflowConnectionError
from voxflow.client.messages import (
    AudioEvent,
    CancelledEvent,
    DoneEvent,
    DoneMetrics,
    ErrorEvent,
    Event,
    TimestampsEvent,
    WordTimestamp,
    parse_event,
)
from voxflow.client.playout import PlayoutBuffer, PlayoutStats
from voxflow.client.recorder import ContextRecorder, ContextResult, speak

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
