"""The app factory: builds the services in the lifespan and mounts every transport."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request, WebSocket
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles

from voxflow.config import ServerSettings
from voxflow.connection.gateway import Gateway
from voxflow.engines.router import EngineRouter
from voxflow.runtime.slack import PRESSURE_BOUNDS
from voxflow.server.logs import RequestIdMiddleware
from voxflow.server.metrics import ServerMetrics
from voxflow.server.pacing import StartPacer
from voxflow.server.security import AccessPolicy, SecurityMiddleware
from voxflow.server.services import Services, refuse_voice_sources
from voxflow.transports.cartesia.routes import mount_cartesia
from voxflow.transports.deepgram.routes import mount_deepgram
from voxflow.transports.elevenlabs import models as elevenlabs_models
from voxflow.transports.elevenlabs.errors import http_error as elevenlabs_error
from voxflow.transports.elevenlabs.http import elevenlabs_voice_fields
from voxflow.transports.elevenlabs.routes import mount_elevenlabs
from voxflow.transports.languages import SpokenLanguage, spoken_languages
from voxflow.transports.native.prefetch import prefetch
from voxflow.transports.native.websocket import serve_native
from voxflow.transports.openai import http as openai_http
from voxflow.transports.openai import models as openai_models
from voxflow.transports.openai.errors import openai_error
from voxflow.transports.openai.routes import mount_openai_models
from voxflow.transports.wyoming.framing import FrameLimits
from voxflow.transports.wyoming.server import start_wyoming_server
from voxflow.version import __version__

log = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).parent / "static"


def _services(request: Request | WebSocket) -> Services:
    services: Services | None = getattr(request.app.state, "services", None)
    if services is None:
        raise RuntimeError("the server is still starting")
    return services


def _gateway(request: Request | WebSocket) -> Gateway:
    gateway: Gateway | None = getattr(request.app.state, "gateway", None)
    if gateway is None:
        raise RuntimeError("the server is still starting")
    return gateway


def _refusing(gateway: Gateway | None) -> bool:
    """Whether a new stream would be refused now: the server is full, or draining."""
    if gateway is None:
        return False  # starting: the routes answer so, in their turn
    admission = gateway.admission
    return admission.draining or admission.saturated(time.monotonic())


def voice_languages(gateway: Gateway | None) -> tuple[SpokenLanguage, ...]:
    """The languages the server's voices speak, the default voice's first (none while the
    server starts)."""
    if gateway is None:
        return ()
    context = gateway.context
    voices = sorted(context.voices(), key=lambda voice: voice.name != context.default_voice)
    return spoken_languages(voices)


def wyoming_limits(settings: ServerSettings) -> FrameLimits:
    """The Wyoming listener's byte limits: the settings' ``wyoming_max_*``."""
    return FrameLimits(
        line=settings.wyoming_max_line_bytes,
        data=settings.wyoming_max_data_bytes,
        payload=settings.wyoming_max_payload_bytes,
    )


def create_app(settings: ServerSettings, engine: EngineRouter | None = None) -> FastAPI:
    """The ASGI app ``voxflow serve`` runs. ``engine``: one already built and loaded
    (``build_engine``), as an application that also speaks through ``LocalSpeaker`` holds, to
    serve its voices with the models it loaded rather than a second copy of them; None: the app
    builds its own from ``settings`` when it starts."""
    if engine is not None:
        refuse_voice_sources(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # Loading the voice takes a second of CPU: keep it off the event loop.
        services = await asyncio.to_thread(Services.build, settings, metrics, engine)
        gateway = services.gateway()
        wyoming = None
        admission_ticks = asyncio.create_task(services.tick_admission())
        try:
            if settings.wyoming_uri is not None:
                wyoming = await start_wyoming_server(
                    gateway, settings.wyoming_uri, wyoming_limits(settings)
                )
                log.info("serving Wyoming on %s (port %d)", settings.wyoming_uri, wyoming.port)
            app.state.services = services
            app.state.gateway = gateway

            # Called by ``server.draining`` on SIGTERM; Wyoming's connections drain with the rest.
            app.state.drain = services.drain
            yield
        finally:
            admission_ticks.cancel()
            app.state.drain = None
            app.state.gateway = None
            app.state.services = None
            if wyoming is not None:
                await wyoming.close()
            await asyncio.to_thread(services.shutdown)

    app = FastAPI(title="voxflow", version=__version__, lifespan=lifespan)

    def gateway_of() -> Gateway | None:
        # Set by the lifespan once the services are up; None while the server starts.
        gateway: Gateway | None = getattr(app.state, "gateway", None)
        return gateway

    # Made before the services: refusals by the connection limits and the access checks count
    # from the first connection (``app.state.metrics.count_rejected``).
    metrics = ServerMetrics(settings.max_quiet_s)
    app.state.metrics = metrics
    # Access control and request ids (issue 11), pure ASGI; the last added runs first, so the
    # request id is set before a refusal is logged or sent.
    app.add_middleware(
        SecurityMiddleware,
        policy=AccessPolicy.from_settings(settings),
        on_refused=metrics.count_rejected,
    )
    app.add_middleware(RequestIdMiddleware)
    # Outermost: a burst of new sessions and requests starts one per loop turn, so that it
    # cannot hold the loop in one piece; health checks and admitted streams go on in between
    # (server.pacing). A start the server will refuse skips the line: its refusal is cheap,
    # and comes at once however many starts and streams' audio are ahead of it.
    app.add_middleware(StartPacer, refusing=lambda: _refusing(gateway_of()))

    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")

    @app.get("/", include_in_schema=False)
    async def demo_page() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html", media_type="text/html")

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz")
    async def readyz(request: Request) -> JSONResponse:
        services = getattr(request.app.state, "services", None)
        if services is None:
            return JSONResponse({"status": "starting"}, status_code=503)
        admission = services.admission
        now = time.monotonic()  # the sessions' clock
        admission.learn(now)
        streams: dict[str, object] = {
            "active_streams": admission.active,
            "stream_limit": admission.limit,
        }
        if admission.capacity:
            streams["load"] = round(admission.load(now), 3)
            streams["capacity"] = round(admission.capacity, 3)
        learnt = admission.load_limit
        if learnt is not None:
            # The capacity is learnt: up to what, and the slack it was last judged by.
            streams["capacity_ceiling"] = learnt.settings.ceiling
            if learnt.last is not None:
                # (Past the histogram's last bound it is only known to be over it.)
                streams["pressure"] = min(learnt.last.pressure, PRESSURE_BOUNDS[-1])
        # A load balancer steers new work away from a replica that is full or leaving.
        if admission.draining:
            return JSONResponse({"status": "draining", **streams}, status_code=503)
        # ... but an orchestrator whose readiness takes a replica out of its service (Kubernetes)
        # asks with ?saturated=ok: with every replica full, none would be left to answer a new
        # call with its 429 and Retry-After, and kube-proxy would refuse the connection.
        saturated = admission.saturated(now)
        if saturated and request.query_params.get("saturated") != "ok":
            return JSONResponse({"status": "saturated", **streams}, status_code=503)
        warmup = services.warmup
        if warmup is not None and not warmup.finished:
            # --warm: a replica takes traffic once the phrases it was given are in its cache.
            return JSONResponse(
                {"status": "warming", "warm": warmup.progress(), **streams}, status_code=503
            )
        status = "saturated" if saturated else "ready"
        return JSONResponse({"status": status, "default_voice": services.default_voice, **streams})

    @app.get("/metrics")
    async def render_metrics(request: Request) -> Response:
        # The app's registry, so refusals before the services are up are counted too.
        return Response(
            request.app.state.metrics.render(),
            media_type="text/plain; version=0.0.4; charset=utf-8",
        )

    @app.get("/v1/voices")
    async def voices(request: Request) -> dict[str, Any]:
        services = _services(request)
        return {
            # One list serves both our clients and ElevenLabs' (whose GET /v1/voices has the
            # same path and a top-level "voices" list): each object carries both field sets.
            "voices": [
                {
                    "name": v.name,
                    "language": v.language,
                    "sample_rate": v.sample_rate,
                    "source": v.source,
                    "speakers": list(v.speakers),
                    "default": v.name == services.default_voice,
                    **elevenlabs_voice_fields(v, v.name == services.default_voice),
                }
                for v in services.registry.list()
            ]
        }

    # The body is read here rather than by FastAPI, so that a body that is not even JSON is
    # answered as OpenAI's error too (FastAPI's is a 422 of its own); the schema stays in the docs.
    speech_docs: dict[str, Any] = {
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": openai_http.SpeechRequest.model_json_schema()}
            },
        }
    }

    @app.post("/v1/audio/speech", openapi_extra=speech_docs)
    async def speech(request: Request) -> Response:
        body = openai_http.SpeechRequest.model_validate(await request.body())
        return await openai_http.speech(body, _gateway(request))

    @app.post("/v1/cache/prefetch")
    async def cache_prefetch(request: Request) -> Response:
        return await prefetch(await request.body(), _gateway(request))

    @app.websocket("/v1/stream")
    async def stream(websocket: WebSocket) -> None:
        await serve_native(websocket, _gateway(websocket))

    @app.get("/v1/models")
    async def models(request: Request) -> JSONResponse:
        # One path, two clients' shapes (as ``GET /v1/voices`` serves both in one): ElevenLabs'
        # SDK parses a bare array of its Model objects, OpenAI's an object with ``data``.
        gateway = gateway_of()
        elevenlabs = elevenlabs_models.from_elevenlabs(request.headers)
        if gateway is None:
            starting = "the server is still starting"
            error = (
                elevenlabs_error("service_unavailable", starting)
                if elevenlabs
                else openai_error("service_unavailable", starting)
            )
            return JSONResponse(error.body, status_code=error.status)
        languages = voice_languages(gateway)
        if elevenlabs:
            max_chars = gateway.context.max_message_chars
            return JSONResponse(elevenlabs_models.model_list(languages, max_chars))
        return JSONResponse(openai_models.model_list(languages))

    mount_openai_models(app, lambda: voice_languages(gateway_of()))
    # ElevenLabs-compatible HTTP + WebSocket endpoints (transports/elevenlabs/).
    mount_elevenlabs(app, gateway_of)
    mount_cartesia(app, gateway_of)
    mount_deepgram(app, gateway_of)

    return app
