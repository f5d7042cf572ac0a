// voxflow demo page: speaks through the native WebSocket protocol (/v1/stream) and plays the audio
// gaplessly with Web Audio. Test hooks live on window.voxflowDemo (see the bottom of this file).

import { Connection, apiKeyQuery, streamUrl } from "./connection.js";
import {
  PlayoutStream,
  audioContext,
  contextTimeToPerf,
  decodePcm16,
  existingAudioContext,
  resumeAudio,
} from "./player.js";
import { Timeline } from "./timeline.js";

const OUTPUT_FORMAT = "pcm_24000";
const CANCEL_REPLY_TIMEOUT_MS = 3000;
const MAX_CHUNK_LOG = 5000;
const MAX_LOG_LINES = 200;
const MAX_ERRORS_SHOWN = 6;
const MAX_UTTERANCES_KEPT = 32;
// Errors after which the server never opened (or dropped) the context.
const FATAL_CONTEXT_ERRORS = new Set([
  "unknown_voice",
  "unsupported_format",
  "invalid_message",
  "context_exists",
  "too_many_contexts",
  "context_ending",
  "unknown_context",
]);

const $ = (id) => document.getElementById(id);

// -- state ------------------------------------------------------------------------------------

function freshStats(contextId = null) {
  return {
    contextId,
    chunksReceived: 0,
    chunksScheduled: 0,
    underruns: 0,
    ttfaMs: null, // first audio, from the first text sent
    ttfaTextMs: null, // first audio, from the text that completed the words it speaks
    ttfaTextIndex: null, // which text message that was (0: the first)
    ttfaTextChar: null, // where the first audio's words end in the text sent
    playedMs: 0,
    leadMs: 0,
    activeSources: 0,
    serverMetrics: null,
    lastCancelled: null,
  };
}

const demo = {
  state: "connecting", // "connecting" | "disconnected" | "idle" | "speaking" | "cancelling"
  connection: "connecting", // "connecting" | "open" | "closed"
  stats: freshStats(),
  totals: {
    utterances: 0,
    chunksReceived: 0,
    chunksScheduled: 0,
    chunksIgnored: 0, // audio that arrived for a cancelled (or finished) context: never played
    underruns: 0,
    cancels: 0,
    errors: 0,
    connects: 0,
  },
  chunks: [], // every audio message: {contextId, seq, arrival, scheduledAt, start, end, ...}
  cancels: [], // every barge-in: {contextId, sentAt, playedMs, reply}
  errors: [], // every error shown
  voices: [],
  currentContext: null,
};

const utterances = new Map(); // context id -> Utterance
let counter = 0;
let current = null; // the utterance being streamed or played
let shown = null; // the utterance drawn on the timeline / "now speaking"
const pendingCancels = new Map(); // context id -> {sentAt, timer}

class Utterance {
  constructor(id, mode, text) {
    this.id = id;
    this.mode = mode;
    this.fullText = text;
    this.sentText = "";
    this.t0 = null; // performance.now() of the first text sent
    this.textTimes = [];
    this.textEnds = []; // sentText.length after each text message: where each one ends
    this.chunks = [];
    this.words = [];
    this.endSent = false;
    this.done = false;
    this.cancelAt = null;
    this.playedAtCancel = null;
    this.feeder = null;
    this.finished = false;
    this.stream = new PlayoutStream(id, { onIdle: () => this.onIdle() });
  }

  get active() {
    return current === this;
  }

  onIdle() {
    if (this.done && current === this) finish(this);
  }
}

function remember(u) {
  utterances.set(u.id, u);
  while (utterances.size > MAX_UTTERANCES_KEPT) {
    const oldest = utterances.keys().next().value;
    utterances.delete(oldest);
  }
}

// -- connection ---------------------------------------------------------------------------------

const conn = new Connection(streamUrl(), {
  onMessage: handleMessage,
  onState: (state, detail) => {
    demo.connection = state;
    const badge = $("conn");
    badge.dataset.state = state;
    if (state === "open") {
      demo.totals.connects = conn.connects;
      badge.textContent = "connected";
    } else if (state === "connecting") {
      badge.textContent = "connecting…";
    } else {
      badge.textContent = `disconnected · retrying in ${(detail.retryInMs / 1000).toFixed(1)} s`;
      connectionLost(detail.why);
    }
    updateState();
  },
});

function send(msg) {
  const ok = conn.send(msg);
  if (ok) logLine("out", summarize(msg));
  return ok;
}

function connectionLost(why) {
  if (current) {
    const u = current;
    stopFeeder(u);
    u.stream.stop();
    markCut(u, performance.now());
    finish(u);
    showError({
      context_id: u.id,
      code: "connection_lost",
      message: `the connection closed (${why}) while speaking; reconnecting`,
      retryable: true,
    });
  }
  for (const id of [...pendingCancels.keys()]) resolveCancelLocally(id, "connection closed");
}

// -- speaking -------------------------------------------------------------------------------------

function selectedMode() {
  return $("mode-llm").checked ? "llm" : "speak";
}

async function speak() {
  const text = $("text").value;
  if (!text.trim()) {
    showError({ code: "empty_text", message: "type something to speak", retryable: false });
    return;
  }
  if (!conn.isOpen) {
    showError({ code: "not_connected", message: "not connected to the server", retryable: true });
    return;
  }
  // Called in the click handler, so the AudioContext may start (autoplay policy).
  const audio = resumeAudio();
  if (current) bargeIn();
  await audio;

  counter += 1;
  const u = new Utterance(`u${counter}`, selectedMode(), text);
  remember(u);
  current = u;
  shown = u;
  demo.totals.utterances += 1;
  const lastCancelled = demo.stats.lastCancelled;
  demo.stats = freshStats(u.id);
  demo.stats.lastCancelled = lastCancelled;
  demo.currentContext = u.id;
  liveKey = "";
  updateState();

  const start = {
    type: "start",
    context_id: u.id,
    output_format: OUTPUT_FORMAT,
    speed: Number($("speed").value) || 1.0,
  };
  const voice = $("voice").value;
  if (voice) start.voice = voice;
  send(start);

  if (u.mode === "llm") {
    startFeeder(u);
  } else {
    sendText(u, text);
    sendEnd(u);
  }
}

function sendText(u, text) {
  const now = performance.now();
  if (u.t0 === null) u.t0 = now;
  u.textTimes.push(now);
  u.sentText += text;
  u.textEnds.push(u.sentText.length);
  send({ type: "text", context_id: u.id, text });
}

function sendEnd(u) {
  u.endSent = true;
  send({ type: "end", context_id: u.id });
}

/** Words with their trailing whitespace (leading whitespace stays with the first word). */
export function tokenize(text) {
  return text.match(/\s*\S+\s*/g) || [];
}

function startFeeder(u) {
  const tokens = tokenize(u.fullText);
  const rate = Math.max(1, Math.min(1000, Number($("rate").value) || 40));
  const interval = 1000 / rate;
  const begin = performance.now();
  let i = 0;
  const tick = () => {
    u.feeder = null;
    if (!u.active || u.cancelAt !== null) return;
    // Send every token that is due (timers get throttled; the rate stays right on average).
    const due = Math.floor((performance.now() - begin) / interval) + 1;
    while (i < tokens.length && i < due) {
      sendText(u, tokens[i]);
      i += 1;
    }
    if (i >= tokens.length) {
      sendEnd(u);
      return;
    }
    const wait = begin + i * interval - performance.now();
    u.feeder = setTimeout(tick, Math.max(0, wait));
  };
  tick();
}

function stopFeeder(u) {
  if (u.feeder !== null) {
    clearTimeout(u.feeder);
    u.feeder = null;
  }
}

function finish(u) {
  u.finished = true;
  stopFeeder(u);
  if (current === u) {
    current = null;
    demo.currentContext = null;
  }
  updateState();
  dirty = true;
}

function markCut(u, at) {
  for (const c of u.chunks) c.cutAt = at;
}

/** Stop the current utterance at once and tell the server how much of it was heard. */
function bargeIn() {
  const u = current;
  if (!u) return;
  stopFeeder(u);
  const playedMs = u.stream.playedMs();
  u.stream.stop();
  const now = performance.now();
  u.cancelAt = now;
  u.playedAtCancel = playedMs;
  markCut(u, now);
  finish(u);
  demo.totals.cancels += 1;
  const record = { contextId: u.id, sentAt: now, playedMs, reply: null };
  demo.cancels.push(record);
  if (!u.done && conn.isOpen) {
    send({ type: "cancel", context_id: u.id, played_ms: Math.round(playedMs) });
    const timer = setTimeout(
      () => resolveCancelLocally(u.id, "no reply from the server"),
      CANCEL_REPLY_TIMEOUT_MS,
    );
    pendingCancels.set(u.id, { sentAt: now, timer, record });
  } else {
    // The server already finished this context (or the connection is gone): the words heard are
    // known from the timestamps.
    setCancelled(u, {
      spokenText: localSpokenText(u, playedMs),
      playedMs,
      latencyMs: null,
      roundTripMs: null,
      source: u.done ? "local (the server had already sent all of it)" : "local (not connected)",
    }, record);
  }
  updateState();
}

function localSpokenText(u, playedMs) {
  let end = 0;
  for (const w of u.words) {
    if (w.end_ms <= playedMs) end = Math.max(end, w.char_end);
  }
  return u.sentText.slice(0, end);
}

function resolveCancelLocally(id, why) {
  const pending = pendingCancels.get(id);
  if (!pending) return;
  clearTimeout(pending.timer);
  pendingCancels.delete(id);
  const u = utterances.get(id);
  if (u) {
    setCancelled(u, {
      spokenText: localSpokenText(u, u.playedAtCancel ?? 0),
      playedMs: u.playedAtCancel ?? 0,
      latencyMs: null,
      roundTripMs: null,
      source: `local (${why})`,
    }, pending.record);
  }
  updateState();
}

/** "local" alone says nothing to a reader: say where spoken_text came from, and why. */
function explainSource(source) {
  const why = source.match(/^local \((.*)\)$/);
  return (
    "local: this page worked out spoken_text itself, from the word timestamps" +
    (why ? ` (${why[1]})` : "")
  );
}

function setCancelled(u, info, record) {
  const last = { contextId: u.id, ...info };
  demo.stats.lastCancelled = last;
  if (record) record.reply = last;
  const spoken = info.spokenText;
  $("spoken-text").textContent = spoken || "(nothing heard yet)";
  $("unspoken-text").textContent = u.sentText.startsWith(spoken)
    ? u.sentText.slice(spoken.length)
    : "";
  const parts = [`${u.id}`, `played ${Math.round(info.playedMs)} ms`];
  if (info.roundTripMs !== null) parts.push(`reply in ${info.roundTripMs.toFixed(1)} ms`);
  if (info.source !== "server") parts.push(explainSource(info.source));
  $("cancelled-meta").textContent = parts.join(" · ");
  $("cancelled").hidden = false;
}

// -- server messages --------------------------------------------------------------------------------

function handleMessage(msg) {
  switch (msg.type) {
    case "audio":
      onAudio(msg);
      break;
    case "timestamps":
      logLine("in", `timestamps ${msg.context_id} ${msg.words.map((w) => w.word).join(" ")}`);
      onTimestamps(msg);
      break;
    case "done":
      logLine("in", `done ${msg.context_id} ${JSON.stringify(msg.metrics)}`);
      onDone(msg);
      break;
    case "cancelled":
      logLine("in", `cancelled ${msg.context_id} "${msg.spoken_text}" played_ms=${msg.played_ms}`);
      onCancelled(msg);
      break;
    case "error":
      logLine("err", `error ${msg.context_id ?? "-"} ${msg.code}: ${msg.message}`);
      onError(msg);
      break;
    default:
      logLine("in", `unknown message ${JSON.stringify(msg).slice(0, 120)}`);
  }
}

function onAudio(msg) {
  const arrival = performance.now();
  const u = utterances.get(msg.context_id);
  const record = {
    contextId: msg.context_id,
    seq: msg.seq,
    offsetMs: msg.offset_ms,
    durationMs: msg.duration_ms,
    arrival,
    scheduledAt: null,
    start: null, // performance.now() ms of the scheduled playback
    end: null,
    ctxStart: null, // the same in AudioContext seconds
    ctxEnd: null,
    underrun: false,
    dropped: false,
  };
  logChunk(record);
  if (!u || current !== u || u.cancelAt !== null || typeof msg.audio !== "string") {
    // A cancelled or finished context: its audio is never played.
    record.dropped = true;
    demo.totals.chunksIgnored += 1;
    if (u) u.chunks.push(record);
    logLine("in", `audio ${msg.context_id} seq=${msg.seq} ignored`);
    return;
  }
  const stats = demo.stats;
  if (stats.ttfaMs === null) firstAudio(u, stats, arrival, msg.text_end);
  stats.chunksReceived += 1;
  demo.totals.chunksReceived += 1;
  const scheduled = u.stream.schedule(decodePcm16(msg.audio));
  if (scheduled) {
    const ctx = audioContext();
    record.scheduledAt = performance.now();
    record.start = contextTimeToPerf(ctx, scheduled.start);
    record.end = contextTimeToPerf(ctx, scheduled.end);
    record.ctxStart = scheduled.start;
    record.ctxEnd = scheduled.end;
    record.underrun = scheduled.underrun;
    stats.chunksScheduled += 1;
    demo.totals.chunksScheduled += 1;
    if (scheduled.underrun) {
      stats.underruns += 1;
      demo.totals.underruns += 1;
    }
  } else {
    record.dropped = true;
  }
  u.chunks.push(record);
  logLine(
    "in",
    `audio ${msg.context_id} seq=${msg.seq} offset=${msg.offset_ms} dur=${msg.duration_ms}` +
      (record.underrun ? " UNDERRUN" : ""),
  );
  dirty = true;
}

/**
 * Both TTFA figures. The first audio says how much of the text had arrived when the server cut
 * its first segment (``text_end``): the text message that brought the text that far is the one
 * the first audio had to wait for. Simulated LLM tokens before it are the client's wait, not the
 * server's. (A server without ``text_end``: the words timed so far, whose timestamps come before
 * the audio that speaks them, tell where at least the first audio's text ends.)
 */
function firstAudio(u, stats, arrival, textEnd) {
  stats.ttfaMs = arrival - u.t0;
  $("ttfa").textContent = `${Math.round(stats.ttfaMs)} ms`;
  const covered =
    typeof textEnd === "number"
      ? textEnd
      : u.words.reduce((end, w) => Math.max(end, w.char_end), 0);
  const index = covered > 0 ? u.textEnds.findIndex((end) => end >= covered) : -1;
  if (index < 0) {
    // No word timed yet (silence, or text without a spoken word): nothing to tell by.
    $("ttfa-text").textContent = "—";
    $("ttfa-text-token").textContent = "no words timed";
    return;
  }
  stats.ttfaTextIndex = index;
  stats.ttfaTextChar = covered;
  stats.ttfaTextMs = arrival - u.textTimes[index];
  $("ttfa-text").textContent = `${Math.round(stats.ttfaTextMs)} ms`;
  if (u.mode === "speak") {
    $("ttfa-text-token").textContent = "the whole text";
  } else {
    const token = u.sentText.slice(index ? u.textEnds[index - 1] : 0, u.textEnds[index]);
    const shown = token.length > 14 ? `${token.slice(0, 13)}…` : token;
    $("ttfa-text-token").textContent = `token ${index + 1}: ${JSON.stringify(shown)}`;
  }
}

function logChunk(record) {
  demo.chunks.push(record);
  if (demo.chunks.length > MAX_CHUNK_LOG) demo.chunks.splice(0, demo.chunks.length - MAX_CHUNK_LOG);
}

function onTimestamps(msg) {
  const u = utterances.get(msg.context_id);
  if (!u || u.cancelAt !== null) return;
  u.words.push(...msg.words);
}

function onDone(msg) {
  const u = utterances.get(msg.context_id);
  if (!u) return;
  u.done = true;
  const m = msg.metrics || {};
  if (demo.stats.contextId === u.id) {
    demo.stats.serverMetrics = m;
    $("ttfa-server").textContent = m.ttfa_ms != null ? `server ${Math.round(m.ttfa_ms)} ms` : "";
    $("rtf").textContent = m.rtf != null ? `rtf ${m.rtf.toFixed(3)}` : "";
  }
  if (current === u && u.stream.idle) finish(u);
}

function onCancelled(msg) {
  const pending = pendingCancels.get(msg.context_id);
  const u = utterances.get(msg.context_id);
  if (pending) {
    clearTimeout(pending.timer);
    pendingCancels.delete(msg.context_id);
  }
  if (u) {
    setCancelled(u, {
      spokenText: msg.spoken_text ?? "",
      playedMs: msg.played_ms,
      latencyMs: msg.latency_ms,
      roundTripMs: pending ? performance.now() - pending.sentAt : null,
      source: "server",
    }, pending ? pending.record : null);
  }
  updateState();
}

function onError(msg) {
  showError(msg);
  const id = msg.context_id;
  if (id && pendingCancels.has(id) && msg.code === "unknown_context") {
    // The context finished on the server before the cancel got there.
    resolveCancelLocally(id, "context already finished");
    return;
  }
  if (current && current.id === id && FATAL_CONTEXT_ERRORS.has(msg.code)) {
    const u = current;
    u.stream.stop();
    markCut(u, performance.now());
    finish(u);
  }
}

// -- errors and log ---------------------------------------------------------------------------------

function showError(err) {
  demo.totals.errors += 1;
  const entry = {
    contextId: err.context_id ?? null,
    code: err.code ?? "error",
    message: err.message ?? "",
    retryable: Boolean(err.retryable),
    at: performance.now(),
  };
  demo.errors.push(entry);
  const box = $("errors");
  const row = document.createElement("div");
  row.className = "error";
  row.setAttribute("role", "alert");
  const code = document.createElement("code");
  code.textContent = entry.code;
  const text = document.createElement("span");
  text.className = "msg";
  text.textContent =
    (entry.contextId ? `[${entry.contextId}] ` : "") +
    entry.message +
    (entry.retryable ? " (retryable)" : "");
  const close = document.createElement("button");
  close.type = "button";
  close.textContent = "×";
  close.title = "dismiss";
  close.addEventListener("click", () => row.remove());
  row.append(code, text, close);
  box.prepend(row);
  while (box.children.length > MAX_ERRORS_SHOWN) box.lastElementChild.remove();
}

function summarize(msg) {
  if (msg.type === "text") return `text ${msg.context_id} ${JSON.stringify(msg.text)}`;
  return JSON.stringify(msg);
}

function logLine(kind, text) {
  const list = $("log");
  const li = document.createElement("li");
  li.className = kind;
  const t = (performance.now() / 1000).toFixed(3);
  li.textContent = `${t} ${kind === "out" ? "→" : "←"} ${text}`;
  list.append(li);
  while (list.children.length > MAX_LOG_LINES) list.firstElementChild.remove();
}

// -- voices -----------------------------------------------------------------------------------------

async function loadVoices(attempt = 0) {
  try {
    const response = await fetch(`/v1/voices${apiKeyQuery()}`, { cache: "no-store" });
    if (!response.ok) throw new Error(`GET /v1/voices: HTTP ${response.status}`);
    const body = await response.json();
    demo.voices = body.voices || [];
    const select = $("voice");
    select.replaceChildren();
    for (const v of demo.voices) {
      const option = document.createElement("option");
      option.value = v.name;
      option.textContent = `${v.name} (${v.language})`;
      if (v.default) option.selected = true;
      select.append(option);
    }
    if (demo.voices.length === 0) {
      const option = document.createElement("option");
      option.value = "";
      option.textContent = "server default";
      select.append(option);
    }
  } catch (err) {
    if (attempt === 2) {
      showError({ code: "voices_unavailable", message: `${err.message}; retrying`, retryable: true });
    }
    setTimeout(() => loadVoices(attempt + 1), Math.min(5000, 500 * 2 ** attempt));
  }
}

// -- rendering --------------------------------------------------------------------------------------

function updateState() {
  let state;
  if (!conn.isOpen) state = conn.state === "connecting" ? "connecting" : "disconnected";
  else if (current) state = "speaking";
  else if (pendingCancels.size) state = "cancelling";
  else state = "idle";
  demo.state = state;
  $("state").textContent = state;
  $("context").textContent = current ? current.id : "";
  $("speak").disabled = !conn.isOpen;
  $("barge").disabled = current === null;
}

let liveKey = "";
let dirty = true;
const timeline = new Timeline($("timeline"));

function renderLive() {
  const u = shown;
  const stats = demo.stats;
  if (u) {
    stats.playedMs = u.stream.playedMs();
    stats.leadMs = u.stream.leadMs();
    stats.activeSources = u.stream.activeSources;
  }
  $("chunks-received").textContent = String(stats.chunksReceived);
  $("chunks-scheduled").textContent = String(stats.chunksScheduled);
  const underruns = $("underruns");
  underruns.textContent = String(stats.underruns);
  underruns.dataset.nonzero = String(stats.underruns > 0);
  if (stats.ttfaMs === null) {
    $("ttfa").textContent = "—";
    $("ttfa-server").textContent = "";
    $("ttfa-text").textContent = "—";
    $("ttfa-text-token").textContent = "";
    $("rtf").textContent = "";
  }
  $("lead").textContent = u && current === u ? `${Math.round(stats.leadMs)} ms` : "—";
  $("played").textContent = u ? `${(stats.playedMs / 1000).toFixed(2)} s` : "—";

  // The word being heard now, highlighted in the text sent so far.
  let before = u ? u.sentText : "";
  let word = "";
  let after = "";
  if (u && u.words.length) {
    const pos = stats.playedMs;
    const w = u.words.find((x) => x.start_ms <= pos && pos < x.end_ms);
    if (w && (u.active || u.cancelAt === null)) {
      before = u.sentText.slice(0, w.char_start);
      word = u.sentText.slice(w.char_start, w.char_end);
      after = u.sentText.slice(w.char_end);
    }
  }
  const key = `${before.length}|${word}|${after.length}|${u ? u.id : ""}`;
  if (key !== liveKey) {
    liveKey = key;
    $("word-before").textContent = before;
    $("current-word").textContent = word;
    $("word-after").textContent = after;
  }
  demo.currentWord = word || null;
}

function frame() {
  renderLive();
  const now = performance.now();
  const animating = shown && (current === shown || shown.stream.activeSources > 0);
  if (dirty || animating) {
    timeline.draw(
      shown && {
        t0: shown.t0,
        textTimes: shown.textTimes,
        chunks: shown.chunks,
        cancelAt: shown.cancelAt,
        active: current === shown,
      },
      now,
    );
    dirty = false;
  }
  requestAnimationFrame(frame);
}

// -- wiring -----------------------------------------------------------------------------------------

$("speak").addEventListener("click", () => {
  speak().catch((err) => showError({ code: "client_error", message: String(err) }));
});
$("barge").addEventListener("click", () => bargeIn());
$("text").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
    event.preventDefault();
    $("speak").click();
  }
});
window.addEventListener("resize", () => {
  dirty = true;
});

// Test hooks (read by tests/server/test_demo_page.py).
demo.debug = {
  send: (msg) => conn.send(msg),
  dropConnection: () => conn.drop(),
  audioState: () => existingAudioContext()?.state ?? "none",
  utterance: (id) => {
    const u = utterances.get(id);
    return u
      ? {
          id: u.id,
          sentText: u.sentText,
          textEnds: u.textEnds,
          words: u.words,
          done: u.done,
          cancelAt: u.cancelAt,
        }
      : null;
  },
};
window.voxflowDemo = demo;

updateState();
loadVoices();
conn.connect();
requestAnimationFrame(frame);
