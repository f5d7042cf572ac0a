// Canvas timeline of one utterance: text sent, audio chunks arriving and their scheduled playback.
// All times are performance.now() milliseconds; the x axis starts at the first text sent.

const COLORS = {
  grid: "#2a3140",
  label: "#8b95a7",
  text: "#7aa2f7",
  arrival: "#e0af68",
  play: "#9ece6a",
  playedOverlay: "rgba(15,17,23,0.35)",
  underrun: "#f7768e",
  dropped: "#565f89",
  cancel: "#f7768e",
  now: "#c0caf5",
  link: "rgba(224,175,104,0.35)",
};

const ROWS = [
  { key: "text", label: "text sent" },
  { key: "arrival", label: "audio arrives" },
  { key: "play", label: "playback" },
];

export class Timeline {
  constructor(canvas) {
    this.canvas = canvas;
    this.ctx2d = canvas.getContext("2d");
  }

  resize() {
    const dpr = window.devicePixelRatio || 1;
    const rect = this.canvas.getBoundingClientRect();
    const w = Math.max(1, Math.round(rect.width * dpr));
    const h = Math.max(1, Math.round(rect.height * dpr));
    if (this.canvas.width !== w || this.canvas.height !== h) {
      this.canvas.width = w;
      this.canvas.height = h;
    }
    return { dpr, width: rect.width, height: rect.height };
  }

  /**
   * utterance: {t0, textTimes: [ms], chunks: [{arrival, start, end, underrun, dropped}],
   * cancelAt, active} or null. nowMs: performance.now().
   */
  draw(utterance, nowMs) {
    const { dpr, width, height } = this.resize();
    const g = this.ctx2d;
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, width, height);
    g.font = "11px ui-monospace, SFMono-Regular, Menlo, monospace";
    g.textBaseline = "middle";

    const left = 112;
    const right = width - 12;
    const top = 10;
    const axisH = 18;
    const rowH = (height - top - axisH) / ROWS.length;
    const rowY = (i) => top + i * rowH;

    ROWS.forEach((row, i) => {
      g.fillStyle = COLORS.label;
      g.fillText(row.label, 8, rowY(i) + rowH / 2);
      g.strokeStyle = COLORS.grid;
      g.beginPath();
      g.moveTo(left, rowY(i) + rowH);
      g.lineTo(right, rowY(i) + rowH);
      g.stroke();
    });

    if (!utterance || utterance.t0 === null) {
      g.fillStyle = COLORS.label;
      g.fillText("speak something to see chunks arrive ahead of playback", left, height / 2);
      return;
    }

    const t0 = utterance.t0;
    let maxT = 2000;
    for (const c of utterance.chunks) maxT = Math.max(maxT, c.arrival - t0, (c.end ?? 0) - t0);
    if (utterance.active) maxT = Math.max(maxT, nowMs - t0);
    if (utterance.cancelAt !== null) maxT = Math.max(maxT, utterance.cancelAt - t0);
    const span = Math.ceil((maxT + 250) / 1000) * 1000;
    const x = (t) => left + ((t - t0) / span) * (right - left);

    // time axis
    const step = span <= 4000 ? 500 : span <= 10000 ? 1000 : span <= 30000 ? 5000 : 10000;
    g.fillStyle = COLORS.label;
    g.strokeStyle = COLORS.grid;
    for (let ms = 0; ms <= span; ms += step) {
      const px = left + (ms / span) * (right - left);
      g.beginPath();
      g.moveTo(px, top);
      g.lineTo(px, height - axisH);
      g.stroke();
      g.fillText(`${(ms / 1000).toFixed(step < 1000 ? 1 : 0)}s`, px + 2, height - axisH / 2);
    }

    // text sent
    g.strokeStyle = COLORS.text;
    for (const t of utterance.textTimes) {
      const px = x(t);
      g.beginPath();
      g.moveTo(px, rowY(0) + rowH * 0.25);
      g.lineTo(px, rowY(0) + rowH * 0.75);
      g.stroke();
    }

    // chunks: arrival tick, link to playback start, playback bar
    for (const c of utterance.chunks) {
      const ax = x(c.arrival);
      g.strokeStyle = c.dropped ? COLORS.dropped : c.underrun ? COLORS.underrun : COLORS.arrival;
      g.lineWidth = 2;
      g.beginPath();
      g.moveTo(ax, rowY(1) + rowH * 0.2);
      g.lineTo(ax, rowY(1) + rowH * 0.8);
      g.stroke();
      g.lineWidth = 1;
      if (c.start === null) continue;
      const sx = x(c.start);
      const ex = x(c.end);
      g.strokeStyle = COLORS.link;
      g.beginPath();
      g.moveTo(ax, rowY(1) + rowH * 0.8);
      g.lineTo(sx, rowY(2) + rowH * 0.2);
      g.stroke();
      g.fillStyle = c.underrun ? COLORS.underrun : COLORS.play;
      const barY = rowY(2) + rowH * 0.2;
      const barH = rowH * 0.6;
      g.fillRect(sx, barY, Math.max(1, ex - sx - 1), barH);
      const playedTo = Math.min(nowMs, c.cutAt ?? Infinity, c.end);
      if (playedTo > c.start) {
        g.fillStyle = COLORS.playedOverlay;
        g.fillRect(sx, barY, Math.max(1, x(playedTo) - sx - 1), barH);
      }
      if (c.cutAt !== undefined && c.cutAt !== null && c.cutAt < c.end) {
        // the part that was never played (barge-in): an empty outline
        const cx = x(Math.max(c.start, c.cutAt));
        g.fillStyle = "#0f1117";
        g.fillRect(cx, barY, ex - cx, barH);
        g.strokeStyle = COLORS.dropped;
        g.strokeRect(cx + 0.5, barY + 0.5, Math.max(0, ex - cx - 2), barH - 1);
      }
    }

    if (utterance.cancelAt !== null) {
      const px = x(utterance.cancelAt);
      g.strokeStyle = COLORS.cancel;
      g.setLineDash([4, 3]);
      g.beginPath();
      g.moveTo(px, top);
      g.lineTo(px, height - axisH);
      g.stroke();
      g.setLineDash([]);
      g.fillStyle = COLORS.cancel;
      g.fillText("barge-in", px + 3, top + 6);
    }

    if (utterance.active || nowMs - t0 <= span) {
      const px = x(Math.min(nowMs, t0 + span));
      g.strokeStyle = COLORS.now;
      g.globalAlpha = 0.6;
      g.beginPath();
      g.moveTo(px, top);
      g.lineTo(px, height - axisH);
      g.stroke();
      g.globalAlpha = 1;
    }
  }
}
