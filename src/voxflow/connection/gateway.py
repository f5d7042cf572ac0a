"""What a transport's routes need of the server, and how they reach it while it starts.

The composition root (``voxflow.server``) builds one ``Gateway`` once its services are up and
hands the routes a ``GatewayAccess``: None until then (the routes answer "still starting").
Routes see drivers, admission and the runner's settings, never the services themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

from voxflow.connection.driver import SessionDriver
from voxflow.connection.protocol_context import ProtocolContext
from voxflow.connection.runner import RunnerSettings
from voxflow.session.admission import Admission
from voxflow.session.dictionaries import DictionaryStore
from voxflow.session.options import StartOptions

__all__ = ["Gateway", "GatewayAccess"]


@dataclass(frozen=True)
class Gateway:
    context: ProtocolContext
    # The server-wide admission: draining, and Deepgram's check at the handshake.
    admission: Admission
    runner_settings: RunnerSettings
    # A session and its driver for one connection of a protocol (by its metrics name), with at
    # most that many contexts open (None: the server's limit). On the event loop.
    new_driver: Callable[[str, int | None], SessionDriver]
    # A session and its driver for one HTTP request (rendered unpaced). On the event loop.
    new_request_driver: Callable[[str], SessionDriver]
    # Queue a text's engine requests as phrase cache prefetches: one future each. A refused
    # text raises its ``SessionError``.
    prefetch: Callable[[StartOptions, str], list[Future[str]]]
    # Pronunciation dictionaries by owner (transports.owner); None: the server keeps none.
    dictionaries: DictionaryStore | None = None


GatewayAccess = Callable[[], Gateway | None]
