// Gapless Web Audio playout of s16le PCM chunks, one PlayoutStream per utterance.
//
// Each chunk becomes an AudioBuffer scheduled at exactly the end time of the previous one. The
// first chunk starts after a small playout buffer; a chunk whose slot is already in the past when
// it arrives is an underrun: it is counted and playback resumes from now + a small buffer.

export const SAMPLE_RATE = 24000;
export const START_BUFFER_S = 0.12; // playout buffer before the first chunk of an utterance
export const UNDERRUN_BUFFER_S = 0.05; // re-buffer after an underrun

let sharedContext = null;
let sharedOutput = null;

/** The page's AudioContext, created on first use (call it from a user gesture). */
export function audioContext() {
  if (sharedContext === null) {
    const Ctor = window.AudioContext || window.webkitAudioContext;
    sharedContext = new Ctor({ latencyHint: "interactive" });
    sharedOutput = sharedContext.createGain();
    sharedOutput.connect(sharedContext.destination);
  }
  return sharedContext;
}

/** The AudioContext if one was created, else null. */
export function existingAudioContext() {
  return sharedContext;
}

/** Resume the AudioContext (browsers start it suspended without a user gesture). */
export async function resumeAudio() {
  const ctx = audioContext();
  if (ctx.state !== "running") {
    try {
      await ctx.resume();
    } catch (err) {
      console.warn("AudioContext.resume failed", err);
    }
  }
  return ctx;
}

/** base64 signed 16-bit little-endian mono -> Float32Array in [-1, 1). */
export function decodePcm16(base64) {
  const binary = atob(base64);
  const count = binary.length >> 1;
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) {
    let v = binary.charCodeAt(2 * i) | (binary.charCodeAt(2 * i + 1) << 8);
    if (v >= 0x8000) v -= 0x10000;
    out[i] = v / 32768;
  }
  return out;
}

/** performance.now() (ms) at which the AudioContext clock reads `contextTime` (s). */
export function contextTimeToPerf(ctx, contextTime) {
  if (typeof ctx.getOutputTimestamp === "function") {
    const ts = ctx.getOutputTimestamp();
    if (ts && ts.performanceTime > 0 && ts.contextTime > 0) {
      return ts.performanceTime + (contextTime - ts.contextTime) * 1000;
    }
  }
  return performance.now() + (contextTime - ctx.currentTime) * 1000;
}

export class PlayoutStream {
  constructor(contextId, { onIdle = () => {} } = {}) {
    this.contextId = contextId;
    this.ctx = audioContext();
    this.onIdle = onIdle;
    this.nextTime = null; // AudioContext time where the next chunk starts
    this.sources = new Set();
    this.runs = []; // [startCtxTime, endCtxTime] of every scheduled chunk
    this.underruns = 0;
    this.stopped = false;
  }

  /**
   * Schedule one chunk of Float32 samples. Returns
   * {start, end, underrun} in AudioContext seconds, or null once stopped.
   */
  schedule(samples) {
    if (this.stopped || samples.length === 0) return null;
    const ctx = this.ctx;
    const buffer = ctx.createBuffer(1, samples.length, SAMPLE_RATE);
    buffer.copyToChannel(samples, 0);
    const now = ctx.currentTime;
    let start;
    let underrun = false;
    if (this.nextTime === null) {
      start = now + START_BUFFER_S;
    } else if (this.nextTime < now) {
      underrun = true;
      this.underruns += 1;
      start = now + UNDERRUN_BUFFER_S;
    } else {
      start = this.nextTime;
    }
    const source = ctx.createBufferSource();
    source.buffer = buffer;
    source.connect(sharedOutput);
    source.onended = () => {
      source.disconnect();
      this.sources.delete(source);
      if (this.sources.size === 0 && !this.stopped) this.onIdle(this);
    };
    source.start(start);
    this.sources.add(source);
    const end = start + buffer.duration;
    this.nextTime = end;
    this.runs.push([start, end]);
    return { start, end, underrun };
  }

  /** Milliseconds of this stream's audio actually played so far, by the AudioContext clock. */
  playedMs() {
    const now = this.stoppedAt ?? this.ctx.currentTime;
    let played = 0;
    for (const [start, end] of this.runs) {
      if (now <= start) break;
      played += Math.min(now, end) - start;
    }
    return played * 1000;
  }

  /** Audio scheduled but not yet played (ms): how far the stream is ahead of playback. */
  leadMs() {
    if (this.nextTime === null || this.stopped) return 0;
    return Math.max(0, (this.nextTime - this.ctx.currentTime) * 1000);
  }

  get activeSources() {
    return this.sources.size;
  }

  /** True once every scheduled chunk has played (or nothing was scheduled). */
  get idle() {
    return this.sources.size === 0;
  }

  /** Stop at once: every scheduled source, playing or not. */
  stop() {
    if (this.stopped) return;
    this.stoppedAt = this.ctx.currentTime;
    this.stopped = true;
    for (const source of this.sources) {
      source.onended = null;
      try {
        source.stop();
      } catch (err) {
        // never started or already stopped
      }
      source.disconnect();
    }
    this.sources.clear();
  }
}
