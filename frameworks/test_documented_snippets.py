"""Every integration snippet in README.md and docs/integrations.md runs as written.

A snippet is a ```python block that names the server as ``127.0.0.1:8000``. It runs with that
address replaced by the test server's, in a fresh namespace, with warnings as errors and the
frameworks' own warnings logged (``logs``) counted as failures: a deprecated argument fails it.
What it leaves behind decides the check:

* ``tts``, a Pipecat service: one reply goes through a Pipecat pipeline, as an agent sends it;
* ``tts``, a LiveKit TTS: one reply streamed through ``tts.stream()`` inside LiveKit's HTTP
  context (an agent job has one), in a ``StreamAdapter`` when it does not stream text (as an
  ``AgentSession`` wraps it);
* ``audio``, bytes: the snippet spoke by itself (an SDK call); they must be audible, 16-bit PCM
  at ``sample_rate`` (the snippet's, 24000 when it sets none) or a container that says so.
"""

from __future__ import annotations

import inspect
import re
import warnings
from pathlib import Path
from typing import Any

import livekit_harness as lk
import pytest
import voxflow_checks as checks
from livekit.agents import tts as lk_tts
from livekit.agents.utils import http_context
from pipecat.services.tts_service import TTSService
from pipecat_harness import PipecatAgent

with warnings.catch_warnings():
    # deepgram-sdk 7.17 probes websockets for a name it deprecated when its speak client is
    # first imported (lazily, from a snippet): imported here, once, so that happens now.
    warnings.simplefilter("ignore", DeprecationWarning)
    import deepgram.speak.v1.client  # noqa: F401

REPO = Path(__file__).resolve().parent.parent
DOCUMENTS = ("README.md", "docs/integrations.md")
ADDRESS = "127.0.0.1:8000"
_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def _snippets() -> list[tuple[str, str]]:
    found = []
    for name in DOCUMENTS:
        text = (REPO / name).read_text()
        for number, block in enumerate(_BLOCK.findall(text), 1):
            if ADDRESS in block:
                found.append((f"{name} #{number}", block))
    return found


SNIPPETS = _snippets()


def test_the_documents_have_snippets() -> None:
    # The integration guide names every framework it covers with a runnable snippet.
    names = " ".join(block for _, block in SNIPPETS)
    for needle in ("pipecat", "livekit", "openai", "elevenlabs", "cartesia", "deepgram"):
        assert needle in names, f"no snippet uses {needle}"


def _run(block: str, address: str) -> dict[str, Any]:
    code = compile(block.replace(ADDRESS, address), "<snippet>", "exec")
    namespace: dict[str, Any] = {"__name__": "snippet"}
    # On the main thread, as a script runs it: LiveKit registers its plugins at import and
    # refuses any other thread. A snippet that calls an SDK blocks the loop meanwhile, which
    # holds nothing else (the server is another process).
    exec(code, namespace)
    return namespace


@pytest.mark.parametrize(("where", "block"), SNIPPETS, ids=[w for w, _ in SNIPPETS])
async def test_snippet_runs_as_written(voxflow, logs, where: str, block: str) -> None:  # type: ignore[no-untyped-def]
    address = voxflow.http_url.removeprefix("http://")
    async with http_context.open():
        namespace = _run(block, address)
        tts = namespace.get("tts")
        if isinstance(tts, TTSService):
            async with PipecatAgent(tts) as agent:
                turn = await agent.finish(await agent.reply(checks.REPLY))
            await _close_sdk_client(tts)
            checks.assert_audible(turn.pcm, where)
        elif isinstance(tts, lk_tts.TTS):
            # An AgentSession wraps a TTS that does not stream text in a StreamAdapter.
            streaming = tts if tts.capabilities.streaming else lk_tts.StreamAdapter(tts=tts)
            try:
                turn = await lk.reply(streaming, checks.REPLY).finish()
            finally:
                if streaming is not tts:
                    await streaming.aclose()
                await tts.aclose()
            checks.assert_audible(turn.pcm, where)
        else:
            audio = namespace.get("audio")
            assert isinstance(audio, bytes), f"{where} leaves neither `tts` nor `audio` bytes"
            checks.assert_audible(_pcm(audio), where)
    logs.assert_clean(where)


async def _close_sdk_client(service: TTSService) -> None:
    """Pipecat's OpenAI service never closes the SDK client it makes (pipecat-ai 1.14): an
    agent leaks one per service for its process's life. Closed here, so that its
    ResourceWarning does not fail a later test."""
    client = getattr(service, "_client", None)
    close = getattr(client, "close", None)
    if close is not None and inspect.iscoroutinefunction(close):
        await close()


def _pcm(audio: bytes) -> bytes:
    """The samples of raw 16-bit PCM or of a WAV file."""
    if audio[:4] == b"RIFF":
        start = audio.find(b"data") + 8
        return audio[start:]
    return audio
