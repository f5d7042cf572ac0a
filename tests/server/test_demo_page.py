"""The demo page (``GET /``) end to end in headless Chromium against a real server.

The page speaks through ``WS /v1/stream``, plays the audio with Web Audio and exposes what it did on
``window.voxflowDemo``; these tests drive it with Playwright and read those hooks.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from tests.support.owed_audio import REPLY, assert_rendered_as_it_came

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--autoplay-policy=no-user-gesture-required",
]

SHORT_TEXT = "Hello from the voxflow demo page."
LONG_TEXT = (
    "This is a much longer answer, streamed the way a language model writes it, one word at a "
    "time. It keeps going for a while, so that the listener has time to interrupt it in the "
    "middle of a sentence. When that happens, the page stops the audio at once and tells the "
    "server how much of it was actually heard, and the server answers with the text that was "
    "spoken up to that point, so the agent can cut its history there and nothing more."
)


# -- the server --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo_url(server_url: str) -> str:
    with urllib.request.urlopen(server_url + "/", timeout=5) as response:
        assert response.status == 200 and b"/static/app.js" in response.read()
    return server_url


# -- the browser -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.fail(
            f"Chromium is not installed at {CHROMIUM}: the demo page test needs it "
            "(`apt-get install -y chromium`; `make test` installs it)",
            pytrace=False,
        )
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(browser: Browser, demo_url: str) -> Iterator[Page]:
    with opened_page(browser, demo_url, viewport={"width": 1200, "height": 1000}) as page:
        yield page


# Phones as Chrome's device toolbar has them: CSS pixels, touch, a mobile viewport.
PHONES = {"360x740": (360, 740), "390x844": (390, 844)}


@pytest.fixture(params=sorted(PHONES))
def phone(request: pytest.FixtureRequest, browser: Browser, demo_url: str) -> Iterator[Page]:
    width, height = PHONES[request.param]
    with opened_page(
        browser,
        demo_url,
        viewport={"width": width, "height": height},
        is_mobile=True,
        has_touch=True,
        device_scale_factor=2,
    ) as page:
        yield page


@contextlib.contextmanager
def opened_page(browser: Browser, demo_url: str, **context_options: Any) -> Iterator[Page]:
    """The demo page, connected, in a fresh browser context; fails on any page error."""
    context = browser.new_context(**context_options)
    page = context.new_page()
    page_errors: list[str] = []
    page.on("pageerror", lambda error: page_errors.append(str(error)))
    page.on(
        "console",
        lambda message: page_errors.append(message.text) if message.type == "error" else None,
    )
    page.goto(demo_url + "/")
    wait_for(page, "window.voxflowDemo && voxflowDemo.state === 'idle'", "the page to connect")
    try:
        yield page
    finally:
        context.close()
    assert page_errors == [], page_errors


def wait_for(page: Page, expression: str, what: str, timeout_s: float = 10.0) -> None:
    """Poll ``expression`` in the page until it is truthy; on timeout, fail with the page state.

    Checked once an animation frame, after the page's own frame callback (as
    ``wait_for_function`` polls), but compiled by DevTools through ``evaluate``:
    ``wait_for_function`` evals its predicate inside the page, which the page's
    Content-Security-Policy forbids.
    """
    on_next_frame = (
        f"() => new Promise(resolve => requestAnimationFrame(() => resolve(!!({expression}))))"
    )
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(on_next_frame):
        if time.monotonic() < deadline:
            continue
        state = page.evaluate(
            "window.voxflowDemo ? JSON.stringify({state: voxflowDemo.state, "
            "connection: voxflowDemo.connection, stats: voxflowDemo.stats, "
            "totals: voxflowDemo.totals, errors: voxflowDemo.errors}) : 'no window.voxflowDemo'"
        )
        pytest.fail(f"timed out after {timeout_s} s waiting for {what}; page: {state}")


def demo(page: Page, expression: str = "voxflowDemo") -> Any:
    return json.loads(page.evaluate(f"JSON.stringify({expression})"))


def assert_both_ttfas_shown(page: Page, context_id: str) -> dict[str, Any]:
    """Both TTFA figures are shown, labelled; the one from its text is counted from the text
    message that brought the text to the first audio's ``text_end``. The page's stats."""
    wait_for(
        page,
        f"voxflowDemo.stats.contextId === '{context_id}' && voxflowDemo.stats.ttfaTextMs !== null"
        " && document.querySelector('#ttfa-text').textContent"
        " === Math.round(voxflowDemo.stats.ttfaTextMs) + ' ms'"
        " && document.querySelector('#ttfa').textContent"
        " === Math.round(voxflowDemo.stats.ttfaMs) + ' ms'",
        "both TTFA figures to be shown",
    )
    stats = demo(page, "voxflowDemo.stats")
    labels = page.text_content(".stats") or ""
    assert "TTFA from first token" in labels and "TTFA from its text" in labels, labels
    note = page.text_content(".ttfa-note") or ""
    assert "From first token" in note and "From its text" in note, note
    assert 0 < stats["ttfaTextMs"] <= stats["ttfaMs"], stats
    utterance = demo(page, f"voxflowDemo.debug.utterance('{context_id}')")
    ends = [0, *utterance["textEnds"]]
    index, covered = stats["ttfaTextIndex"], stats["ttfaTextChar"]
    assert ends[index] < covered <= ends[index + 1], (ends, index, covered)
    # The server's first segment was whole by then: at least the first word of it had arrived.
    assert utterance["words"][0]["char_end"] <= covered, (utterance["words"][0], covered)
    return stats


# -- the tests ---------------------------------------------------------------------------------


def test_speak_plays_the_audio_then_barge_in_stops_it(page: Page) -> None:
    voices = page.eval_on_selector_all("#voice option", "options => options.map(o => o.value)")
    assert "joe" in voices
    assert page.input_value("#voice") == "joe"

    # Speak: audio arrives and is scheduled on the AudioContext; TTFA is measured and shown.
    page.fill("#text", SHORT_TEXT)
    page.click("#speak")
    wait_for(
        page,
        "voxflowDemo.stats.contextId === 'u1' && voxflowDemo.stats.chunksReceived > 0"
        " && voxflowDemo.stats.chunksScheduled > 0 && voxflowDemo.stats.ttfaMs !== null",
        "the first audio to be scheduled",
    )
    assert page.evaluate("voxflowDemo.debug.audioState()") == "running"
    stats = demo(page, "voxflowDemo.stats")
    assert 0 < stats["ttfaMs"] < 5000
    # The display is refreshed on the page's own schedule: wait for it rather than race it.
    wait_for(
        page,
        "document.querySelector('#ttfa').textContent"
        " === Math.round(voxflowDemo.stats.ttfaMs) + ' ms'",
        "the TTFA display to show the measured TTFA",
    )
    # The whole text is one message: the text the first audio speaks was sent with the first.
    stats = assert_both_ttfas_shown(page, "u1")
    assert stats["ttfaTextIndex"] == 0 and stats["ttfaTextMs"] == stats["ttfaMs"]
    wait_for(page, "voxflowDemo.state === 'idle'", "the sentence to finish playing", 15)
    stats = demo(page, "voxflowDemo.stats")
    assert stats["chunksScheduled"] == stats["chunksReceived"] == stats["serverMetrics"]["chunks"]
    assert stats["activeSources"] == 0
    assert stats["playedMs"] == pytest.approx(stats["serverMetrics"]["audio_ms"], abs=5)
    # Gapless: each chunk starts where the previous one ended (barring underruns).
    chunks = [c for c in demo(page, "voxflowDemo.chunks") if c["contextId"] == "u1"]
    assert [c["seq"] for c in chunks] == list(range(len(chunks)))
    for before, after in itertools.pairwise(chunks):
        if not after["underrun"]:
            assert after["ctxStart"] == before["ctxEnd"]

    # A longer answer fed token by token like an LLM; barge in while it plays.
    page.check("#mode-llm")
    page.fill("#rate", "40")
    page.fill("#text", LONG_TEXT)
    page.click("#speak")
    wait_for(
        page,
        "voxflowDemo.stats.contextId === 'u2' && voxflowDemo.stats.chunksScheduled > 0"
        " && voxflowDemo.stats.playedMs > 900",
        "the long answer to play for a while",
    )
    assert page.evaluate("voxflowDemo.state") == "speaking"
    assert_both_ttfas_shown(page, "u2")
    page.click("#barge")
    wait_for(
        page,
        "voxflowDemo.stats.lastCancelled && voxflowDemo.stats.lastCancelled.contextId === 'u2'",
        "the cancelled reply",
    )
    cancelled = demo(page, "voxflowDemo.stats.lastCancelled")
    cancel = demo(page, "voxflowDemo.cancels")[-1]
    assert cancelled["source"] == "server"  # the context was still open: the server answered
    assert cancel["contextId"] == "u2" and cancel["playedMs"] > 900
    assert cancelled["playedMs"] == pytest.approx(cancel["playedMs"], abs=1)
    spoken = cancelled["spokenText"]
    assert spoken and LONG_TEXT.startswith(spoken), spoken
    assert page.is_visible("#cancelled")
    assert page.text_content("#spoken-text") == spoken

    # Playback stopped at once, and nothing of u2 is scheduled after the barge-in.
    page.wait_for_timeout(400)  # audio still in flight at the cancel arrives now, if any
    stats = demo(page, "voxflowDemo.stats")
    assert stats["activeSources"] == 0
    assert page.evaluate("voxflowDemo.state") == "idle"
    chunks = [c for c in demo(page, "voxflowDemo.chunks") if c["contextId"] == "u2"]
    assert chunks
    late = [c for c in chunks if c["arrival"] > cancel["sentAt"]]
    assert all(c["dropped"] and c["scheduledAt"] is None for c in late), late
    assert all(c["scheduledAt"] <= cancel["sentAt"] for c in chunks if not c["dropped"])
    assert page.text_content("#current-word") == ""


def test_errors_are_shown_and_the_page_reconnects(page: Page) -> None:
    page.evaluate(
        "voxflowDemo.debug.send({type: 'start', context_id: 'bad', voice: 'no-such-voice'})"
    )
    wait_for(page, "voxflowDemo.errors.length > 0", "the error to arrive")
    assert page.is_visible("#errors .error")
    assert "unknown_voice" in page.text_content("#errors")

    connects = page.evaluate("voxflowDemo.totals.connects")
    page.evaluate("voxflowDemo.debug.dropConnection()")
    wait_for(
        page,
        f"voxflowDemo.totals.connects === {connects + 1} && voxflowDemo.state === 'idle'",
        "the page to reconnect",
    )
    assert page.get_attribute("#conn", "data-state") == "open"
    assert page.is_enabled("#speak")


# What a phone user needs to reach: the text, every control, Speak and Barge in, the figures.
PHONE_CONTROLS = [
    "#text",
    "#voice",
    "#speed",
    "#mode-speak",
    "#mode-llm",
    "#rate",
    "#speak",
    "#barge",
    "#ttfa",
    ".log summary",
]


def assert_fits_the_screen(page: Page, selectors: list[str]) -> None:
    """No horizontal scrolling, and each of ``selectors`` is shown whole across the screen.

    A mobile browser widens its layout viewport to content wider than the screen (and zooms
    out), so ``innerWidth`` grows with the overflow: the screen's own width is the bound too.
    """
    screen = page.viewport_size
    assert screen is not None
    widths = demo(
        page,
        "{scroll: document.documentElement.scrollWidth, body: document.body.scrollWidth,"
        " inner: window.innerWidth}",
    )
    assert widths["inner"] == screen["width"], widths
    assert widths["scroll"] <= widths["inner"], widths
    assert widths["body"] <= widths["inner"], widths
    for selector in selectors:
        page.locator(selector).scroll_into_view_if_needed()
        assert page.is_visible(selector), selector
        box = page.locator(selector).bounding_box()
        assert box is not None and box["width"] > 0 and box["height"] > 0, (selector, box)
        assert box["x"] >= 0 and box["x"] + box["width"] <= screen["width"], (selector, box)


def test_the_page_fits_a_phone_with_the_log_open(phone: Page) -> None:
    page = phone
    assert_fits_the_screen(page, PHONE_CONTROLS)

    # Open the log, then fill it: an LLM answer sends a message a token, with long lines.
    page.tap(".log summary")
    assert page.evaluate("document.querySelector('details.log').open") is True
    page.tap("#mode-llm")
    page.fill("#rate", "80")
    page.fill("#text", LONG_TEXT)
    page.tap("#speak")
    wait_for(
        page,
        "voxflowDemo.stats.contextId === 'u1' && voxflowDemo.stats.chunksScheduled > 0"
        " && voxflowDemo.stats.playedMs > 300",
        "the answer to play on the phone",
    )
    assert page.evaluate("voxflowDemo.debug.audioState()") == "running"
    assert_both_ttfas_shown(page, "u1")
    assert_fits_the_screen(page, [*PHONE_CONTROLS, "#ttfa-text", "#log"])
    # The log scrolls inside its own box: taller than its box, which stays on the screen.
    log = demo(
        page,
        "(() => { const l = document.querySelector('#log');"
        " return {lines: l.children.length, scroll: l.scrollHeight, client: l.clientHeight,"
        " overflowY: getComputedStyle(l).overflowY}; })()",
    )
    assert log["lines"] > 20 and log["scroll"] > log["client"], log
    assert log["overflowY"] in ("auto", "scroll"), log

    # Barge in with a tap: the server's reply is shown, and the page still fits.
    page.tap("#barge")
    wait_for(
        page,
        "voxflowDemo.stats.lastCancelled && voxflowDemo.stats.lastCancelled.contextId === 'u1'",
        "the cancelled reply on the phone",
    )
    assert page.is_visible("#cancelled")
    assert_fits_the_screen(page, [*PHONE_CONTROLS, "#log", "#cancelled"])

    # Close the log again: still no horizontal scrolling.
    page.tap(".log summary")
    assert page.evaluate("document.querySelector('details.log').open") is False
    assert_fits_the_screen(page, PHONE_CONTROLS)


def test_a_barge_in_after_the_server_finished_says_what_local_means(page: Page) -> None:
    # The server has sent all of the audio (done) while it still plays: the page works out
    # spoken_text itself, and says so in words rather than a bare "local".
    page.fill("#text", SHORT_TEXT)
    page.click("#speak")
    wait_for(
        page,
        "voxflowDemo.debug.utterance('u1') && voxflowDemo.debug.utterance('u1').done"
        " && voxflowDemo.state === 'speaking' && voxflowDemo.stats.playedMs > 300",
        "the server to finish while the audio still plays",
    )
    page.click("#barge")
    wait_for(page, "voxflowDemo.stats.lastCancelled !== null", "the barge-in to be shown")
    cancelled = demo(page, "voxflowDemo.stats.lastCancelled")
    assert cancelled["source"].startswith("local")
    assert cancelled["spokenText"] and SHORT_TEXT.startswith(cancelled["spokenText"])
    meta = page.text_content("#cancelled-meta") or ""
    assert "local: this page worked out spoken_text itself, from the word timestamps" in meta
    assert "the server had already sent all of it" in meta


def test_a_long_replys_audio_comes_as_it_is_rendered_not_as_it_is_played(page: Page) -> None:
    # The reply of ``tests.support.owed_audio``, fed as LLM tokens: once its text is in, its last
    # sentence is rendered and sent, long before the listener has played what came before it.
    page.check("#mode-llm")
    page.fill("#rate", "50")
    page.fill("#text", "".join(text for _, text in REPLY))
    page.click("#speak")
    wait_for(
        page,
        "voxflowDemo.debug.utterance('u1') && voxflowDemo.debug.utterance('u1').done",
        "the server to send all of the reply",
        timeout_s=30,
    )
    chunks = [c for c in demo(page, "voxflowDemo.chunks") if c["contextId"] == "u1"]
    assert page.evaluate("voxflowDemo.state") == "speaking"  # still playing it
    assert_rendered_as_it_came([(c["arrival"] / 1000.0, c["durationMs"] / 1000.0) for c in chunks])
