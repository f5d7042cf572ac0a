from __future__ import annotations

import base64
import contextlib
import itertools
import json
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from elevenlabs.realtime_tts import text_chunker
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

LONG = (
    "The quick brown fox jumps over the lazy dog while the orchestra, tuning its instruments "
    "in the distance, prepares for a long evening of music that nobody will forget. "
)
EL_VOICE = "21m00Tcm4TlvDq8ikWAM"  # an ElevenLabs voice id: maps to the default voice


def _url(server_url: str, path: str, query: str = "output_format=pcm_24000") -> str:
    base = server_url.replace("http://", "ws://")
    return f"{base}/v1/text-to-speech/{path}?{query}"


@pytest.fixture
def multi(server_url: str) -> Iterator[ClientConnection]:
    url = _url(server_url, f"{EL_VOICE}/multi-stream-input", "output_format=pcm_16000")
    with connect(url, max_size=None) as connection:
        yield connection


def _send(ws: ClientConnection, **message: Any) -> None:
    ws.send(json.dumps(message))


def _recv(ws: ClientConnection, timeout: float = 30) -> dict[str, Any]:
    message = json.loads(ws.recv(timeout=timeout))
    assert isinstance(message, dict)
    return message


def _close_code(ws: ClientConnection) -> int | None:
    """Read until the server closes; its close code."""
    with pytest.raises(ConnectionClosed) as closed:
        while True:
            ws.recv(timeout=30)
    assert closed.value.rcvd is not None
    return closed.value.rcvd.code


@dataclass
class _PipecatReceiver:
    """Parses replies the way Pipecat's ElevenLabsTTSService does: ``isFinal`` first, then audio,
    then alignment turned into words by splitting characters on spaces, a word's time being its
    first character's start plus the sum of earlier chunks' last character ends."""

    audio: dict[str, bytearray] = field(default_factory=dict)
    words: dict[str, list[tuple[str, float]]] = field(default_factory=dict)
    finals: list[str] = field(default_factory=list)
    order: list[tuple[str, str]] = field(default_factory=list)  # (kind, context id)
    _clock: dict[str, float] = field(default_factory=dict)
    _partial: dict[str, tuple[str, float]] = field(default_factory=dict)

    def feed(self, message: dict[str, Any]) -> None:
        cid = message.get("contextId")
        assert isinstance(cid, str)
        if message.get("isFinal") is True:
            self.finals.append(cid)
            self.order.append(("final", cid))
            return
        if message.get("audio"):
            self.audio.setdefault(cid, bytearray()).extend(base64.b64decode(message["audio"]))
            self.order.append(("audio", cid))
        alignment = message.get("alignment") or message.get("normalizedAlignment")
        if alignment:
            self._align(cid, alignment)

    def _align(self, cid: str, alignment: dict[str, Any]) -> None:
        chars, starts = alignment["chars"], alignment["charStartTimesMs"]
        durations = alignment["charDurationsMs"]
        assert len(chars) == len(starts) == len(durations)
        clock = self._clock.get(cid, 0.0)
        word, word_start = self._partial.pop(cid, ("", 0.0))
        found = False
        for char, start in zip(chars, starts, strict=True):
            if char == " ":
                if word:
                    self.words.setdefault(cid, []).append((word, word_start))
                    found = True
                word = ""
            else:
                if not word:
                    word_start = clock + start / 1000.0
                word += char
        if word:
            self._partial[cid] = (word, word_start)
        if found:
            self._clock[cid] = clock + (starts[-1] + durations[-1]) / 1000.0


def _pipecat_turn(ws: ClientConnection, cid: str, sentences: list[str], speed: float) -> None:
    """What Pipecat sends for one bot turn: context init, text per sentence, flush at the end of
    the LLM response, then close_context so isFinal follows the last audio."""
    _send(ws, text=" ", context_id=cid, voice_settings={"speed": speed})
    for sentence in sentences:
        _send(ws, text=sentence, context_id=cid)
    _send(ws, text="", context_id=cid)  # Pipecat's keep-alive for an open context
    _send(ws, context_id=cid, flush=True)
    _send(ws, context_id=cid, close_context=True)


def test_multi_stream_as_pipecat_drives_it(server_url: str) -> None:
    query = "model_id=eleven_turbo_v2_5&output_format=pcm_24000&auto_mode=true"
    url = _url(server_url, f"{EL_VOICE}/multi-stream-input", query)
    sentences = ["Hello there, my friend. ", "The weather is lovely today! ", "Shall we walk?"]
    with connect(url, max_size=16 * 1024 * 1024, additional_headers={"xi-api-key": "k"}) as ws:
        _send(ws, text="")  # keep-alive before any context exists
        cid = str(uuid.uuid4())
        _pipecat_turn(ws, cid, sentences, speed=1.1)
        _send(ws, close_socket=True)  # Pipecat's disconnect, right away
        receiver = _PipecatReceiver()
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                receiver.feed(_recv(ws))
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1000

    assert receiver.finals == [cid]
    assert receiver.order[-1] == ("final", cid)
    audio = receiver.audio[cid]
    assert len(audio) % 2 == 0 and len(audio) / 2 / 24000 > 2.0
    words = receiver.words[cid]
    # The last word completes too: its trailing space came with the alignment.
    assert [w for w, _ in words] == "".join(sentences).split()[: len(words)]
    assert len(words) >= len("".join(sentences).split()) - 1
    times = [t for _, t in words]
    assert times == sorted(times)
    assert times[-1] < len(audio) / 2 / 24000


def test_alignment_covers_the_text_and_fits_the_audio(multi: ClientConnection) -> None:
    text = " Good morning, everyone. The meeting starts at noon! "
    _send(multi, text=" ", context_id="a")
    _send(multi, text=text[1:], context_id="a", flush=True)
    _send(multi, context_id="a", close_context=True)
    chars = ""
    offset_ms = 0.0
    absolute: list[float] = []
    while True:
        message = _recv(multi)
        assert message["contextId"] == "a"
        if message.get("isFinal"):
            break
        assert message["isFinal"] is None
        duration_ms = len(base64.b64decode(message["audio"])) / 2 / 16
        if message["alignment"] is not None:
            assert message["normalizedAlignment"] == message["alignment"]
            alignment = message["alignment"]
            chars += "".join(alignment["chars"])
            starts = alignment["charStartTimesMs"]
            assert all(isinstance(s, int) and s >= 0 for s in starts)
            assert all(isinstance(d, int) and d >= 0 for d in alignment["charDurationsMs"])
            # Each character is sent with the chunk it starts in.
            assert all(s < duration_ms + 1 for s in starts) or duration_ms == 0
            absolute += [offset_ms + s for s in starts]
        offset_ms += duration_ms
    assert chars == text
    assert all(b >= a - 1 for a, b in itertools.pairwise(absolute))


def test_barge_in_close_context_stops_the_audio_at_once(multi: ClientConnection) -> None:
    _send(multi, text=" ", context_id="old")
    _send(multi, text=LONG * 3, context_id="old")  # not flushed: the reply is mid-stream
    first = _recv(multi)
    assert first["contextId"] == "old" and first["audio"]
    _send(multi, context_id="old", close_context=True)
    _send(multi, text=" ", context_id="new")
    _send(multi, text="A fresh answer. ", context_id="new", flush=True)
    _send(multi, context_id="new", close_context=True)
    seen: list[tuple[str, str]] = []
    old_audio_ms = len(base64.b64decode(first["audio"])) / 32
    while ("final", "new") not in seen:
        message = _recv(multi)
        kind = "final" if message.get("isFinal") else "audio"
        seen.append((kind, message["contextId"]))
        if kind == "audio" and message["contextId"] == "old":
            old_audio_ms += len(base64.b64decode(message["audio"])) / 32
    old_final = seen.index(("final", "old"))
    assert ("audio", "old") not in seen[old_final:]
    assert seen.index(("audio", "new")) > old_final
    assert seen.count(("final", "old")) == 1
    # Far less than the whole text was heard (it runs to tens of seconds).
    assert old_audio_ms < 15_000


def _flushed_reply_ms(ws: ClientConnection, cid: str, close: dict[str, Any]) -> float:
    """Send a long reply, flush it, take its first audio, then ``close`` it; the audio (ms at
    16 kHz) that came for it before its ``isFinal``."""
    _send(ws, text=" ", context_id=cid)
    _send(ws, text=LONG * 3, context_id=cid, flush=True)
    heard_ms = 0.0
    while not heard_ms:
        message = _recv(ws)
        heard_ms += len(base64.b64decode(message.get("audio") or "")) / 32
    _send(ws, context_id=cid, close_context=True, **close)
    while not (message := _recv(ws)).get("isFinal"):
        heard_ms += len(base64.b64decode(message.get("audio") or "")) / 32
    return heard_ms


def test_close_context_after_a_flush_finishes_unless_immediate(
    server_factory: Callable[..., contextlib.AbstractContextManager[str]],
) -> None:
    # A lead longer than the reply: its end is rendered at once, not paced as it would play
    # (the default 20 s held the finishing context 5 s here).
    with (
        server_factory(max_lead_s=600.0, workers=2) as url,
        connect(
            _url(url, f"{EL_VOICE}/multi-stream-input", "output_format=pcm_16000"), max_size=None
        ) as multi,
    ):
        # ElevenLabs' rule: a flushed context that is closed still speaks what was flushed...
        finished_ms = _flushed_reply_ms(multi, "finishes", {})
        # ...unless the client asks for the barge-in at once ("immediate": true, LiveKit's and
        # some SDKs' spelling), which stops the rendering with no more audio of it.
        stopped_ms = _flushed_reply_ms(multi, "stops", {"immediate": True})
    assert finished_ms > 20_000  # three times LONG: tens of seconds of speech
    assert stopped_ms < finished_ms / 3


def test_sentences_sent_without_spaces_are_spoken_as_sentences(multi: ClientConnection) -> None:
    # Pipecat's ElevenLabsTTSService sends each aggregated sentence with no trailing space.
    _send(multi, text=" ", context_id="s")
    for sentence in ["Sure thing!", "The table is booked.", "See you at 3.", "50 or later?"]:
        _send(multi, text=sentence, context_id="s")
    _send(multi, context_id="s", flush=True)
    _send(multi, context_id="s", close_context=True)
    chars = ""
    while not (message := _recv(multi)).get("isFinal"):
        if message.get("alignment"):
            chars += "".join(message["alignment"]["chars"])
    # A space where a sentence ended and the next began; "3." + "50" is a number and stays one.
    assert chars == " Sure thing! The table is booked. See you at 3.50 or later? "


def _context_starts_ms(ws: ClientConnection, cid: str) -> tuple[list[int], float]:
    """The alignment start times of one context as sent, and its audio's length in ms."""
    _send(ws, text=" ", context_id=cid)
    _send(ws, text=LONG, context_id=cid, flush=True)
    _send(ws, context_id=cid, close_context=True)
    starts: list[int] = []
    audio_ms = 0.0
    while not (message := _recv(ws)).get("isFinal"):
        audio_ms += len(base64.b64decode(message.get("audio") or "")) / 32
        if message.get("alignment"):
            starts += message["alignment"]["charStartTimesMs"]
    return starts, audio_ms


def test_sync_alignment_times_count_from_the_context_start(server_url: str) -> None:
    # LiveKit's ElevenLabs plugin asks for sync_alignment=true and reads every start time as
    # the time from the start of the context; without it, times restart with every chunk.
    path = f"{EL_VOICE}/multi-stream-input"
    with connect(_url(server_url, path, "output_format=pcm_16000&sync_alignment=true")) as ws:
        synced, audio_ms = _context_starts_ms(ws, "a")
    with connect(_url(server_url, path, "output_format=pcm_16000")) as ws:
        per_chunk, _ = _context_starts_ms(ws, "a")
    assert synced == sorted(synced)
    assert audio_ms * 0.6 < synced[-1] <= audio_ms + 1  # whole ms
    # Per-chunk times go back to near zero at every chunk that starts a character.
    assert per_chunk != sorted(per_chunk) and max(per_chunk) < synced[-1]


def test_a_closed_context_id_can_be_reused_at_once(multi: ClientConnection) -> None:
    _send(multi, text=" ", context_id="x")
    _send(multi, text=LONG, context_id="x")
    assert _recv(multi)["contextId"] == "x"
    _send(multi, context_id="x", close_context=True)
    _send(multi, text=" Second try. ", context_id="x", voice_settings={"speed": 1.2})
    _send(multi, context_id="x", flush=True)
    _send(multi, context_id="x", close_context=True)
    finals = 0
    chars_after_first_final = ""
    while finals < 2:
        message = _recv(multi)
        if message.get("isFinal"):
            finals += 1
        elif finals == 1 and message["alignment"]:
            chars_after_first_final += "".join(message["alignment"]["chars"])
    assert chars_after_first_final == " Second try. "


def test_flush_keeps_the_context_open_and_close_socket_finishes_it(
    multi: ClientConnection,
) -> None:
    _send(multi, text=" ", context_id="c", generation_config={"chunk_length_schedule": [50, 290]})
    _send(multi, text="First part. ", context_id="c", flush=True)
    while not _recv(multi).get("audio"):
        pass
    _send(multi, text="Second part, after the flush. ", context_id="c", try_trigger_generation=True)
    _send(multi, text="", context_id="c", flush=True)  # flush with empty text
    _send(multi, close_socket=True)
    chars = ""
    kinds = []
    with pytest.raises(ConnectionClosed) as closed:
        while True:
            message = _recv(multi)
            kinds.append("final" if message.get("isFinal") else "audio")
            if message.get("alignment"):
                chars += "".join(message["alignment"]["chars"])
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1000
    assert kinds[-1] == "final" and kinds.count("final") == 1
    assert chars.endswith("Second part, after the flush. ")


def test_context_limit_answers_like_elevenlabs(multi: ClientConnection) -> None:
    for i in range(5):
        _send(multi, text=" ", context_id=f"c{i}")
    _send(multi, text=" ", context_id="c5")
    error = _recv(multi)
    assert error["error"] == "max_active_conversations"
    assert error["code"] == 1008
    assert "Maximum simultaneous contexts per WebSocket connection exceeded (5)" in error["message"]
    assert _close_code(multi) == 1008


def test_closed_contexts_free_their_slots(multi: ClientConnection) -> None:
    for round_ in range(3):
        for i in range(5):
            _send(multi, text=" ", context_id=f"r{round_}-{i}")
            _send(multi, text="Hi. ", context_id=f"r{round_}-{i}")
        for i in range(5):
            _send(multi, context_id=f"r{round_}-{i}", close_context=True)  # barge-in: at once
    finals: set[str] = set()
    while len(finals) < 15:
        message = _recv(multi)
        assert "error" not in message
        if message.get("isFinal"):
            finals.add(message["contextId"])


def test_stream_input_as_the_official_sdk_sends_it(server_url: str) -> None:
    # The SDK's convert_realtime always connects with wss://; this is its message sequence.
    pieces = ["Hello, ", "this is ", "streamed input", ". It arrives ", "in pieces."]
    url = _url(server_url, "joe/stream-input", "model_id=x&output_format=pcm_22050")
    with connect(url, max_size=None) as ws:
        _send(
            ws,
            text=" ",
            try_trigger_generation=True,
            voice_settings=None,
            generation_config={"chunk_length_schedule": [50]},
        )
        sent = " "
        for chunk in text_chunker(iter(pieces)):
            _send(ws, text=chunk, try_trigger_generation=True)
            sent += chunk
        _send(ws, text="")
        audio = b""
        chars = ""
        messages = []
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                message = _recv(ws)
                messages.append(message)
                if message.get("audio"):
                    audio += base64.b64decode(message["audio"])
                if message.get("alignment"):
                    chars += "".join(message["alignment"]["chars"])
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1000
    assert messages[-1] == {"isFinal": True}
    assert all("contextId" not in m for m in messages)
    assert chars == sent
    assert len(audio) / 2 / 22050 > 1.5


def test_stream_input_with_no_text_just_ends(server_url: str) -> None:
    with connect(_url(server_url, "joe/stream-input")) as ws:
        _send(ws, text="")
        assert _recv(ws) == {"isFinal": True}
        assert _close_code(ws) == 1000


@pytest.mark.parametrize(
    ("path", "query", "messages", "error"),
    [
        ("joe/stream-input", "output_format=mp3_44100_999", [], "invalid_output_format"),
        ("nobody/stream-input", "output_format=pcm_16000", [], "voice_not_found"),
        (
            "joe/stream-input",
            "output_format=pcm_16000&language_code=ja",
            [],
            "unsupported_language",
        ),
        (
            "joe/multi-stream-input",
            "output_format=pcm_16000&language_code=japanese",
            [],
            "invalid_language",
        ),
        ("joe/multi-stream-input", "output_format=pcm_16000&inactivity_timeout=500", [], None),
        ("joe/stream-input", "output_format=pcm_16000", ["{nope"], "invalid_json"),
        (
            "joe/stream-input",
            "output_format=pcm_16000",
            [json.dumps({"text": " ", "generation_config": {"chunk_length_schedule": [10]}})],
            "invalid_chunk_length_schedule",
        ),
        (
            "joe/multi-stream-input",
            "output_format=pcm_16000",
            [json.dumps({"text": " ", "context_id": "a", "voice_settings": {"speed": 9}})],
            "invalid_voice_settings",
        ),
    ],
)
def test_errors_are_elevenlabs_shaped_and_close_the_socket(
    server_url: str, path: str, query: str, messages: list[str], error: str | None
) -> None:
    with connect(_url(server_url, path, query)) as ws:
        for raw in messages:
            ws.send(raw)
        reply = _recv(ws)
        assert set(reply) == {"message", "error", "code"}
        assert reply["error"] == (error or "invalid_request")
        assert reply["message"] and reply["code"] == 1008
        assert _close_code(ws) == 1008


def test_keep_alives_hold_the_connection_and_silence_closes_it(server_url: str) -> None:
    url = _url(server_url, "joe/multi-stream-input", "output_format=pcm_8000&inactivity_timeout=1")
    with connect(url) as ws:
        for _ in range(4):
            time.sleep(0.4)
            _send(ws, text="")
        # Still open after more than the timeout in total: the keep-alives counted.
        _send(ws, text=" ", context_id="k")
        _send(ws, text="Still here. ", context_id="k", flush=True)
        assert _recv(ws)["contextId"] == "k"
        # Then nothing more is sent: the server gives up, as ElevenLabs does.
        while True:
            message = _recv(ws)
            if "error" in message:
                break
        assert message["error"] == "input_timeout_exceeded"
        assert "1 seconds" in message["message"]
        assert _close_code(ws) == 1008
