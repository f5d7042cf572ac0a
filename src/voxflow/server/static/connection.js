// The native protocol WebSocket (same origin, /v1/stream), reconnecting with backoff on close.

// A server started with API keys: open the page as /?api_key=KEY and the page passes the key on
// (a browser cannot set headers on a WebSocket).
export function apiKeyQuery(loc = window.location) {
  const key = new URLSearchParams(loc.search).get("api_key");
  return key ? `?api_key=${encodeURIComponent(key)}` : "";
}

export function streamUrl(loc = window.location) {
  const scheme = loc.protocol === "https:" ? "wss:" : "ws:";
  return `${scheme}//${loc.host}/v1/stream${apiKeyQuery(loc)}`;
}

export class Connection {
  /**
   * handlers: onMessage(msg), onState(state, detail) where state is
   * "connecting" | "open" | "closed".
   */
  constructor(url, { onMessage, onState }) {
    this.url = url;
    this.onMessage = onMessage;
    this.onState = onState;
    this.ws = null;
    this.state = "closed";
    this.attempt = 0;
    this.connects = 0;
    this.retryTimer = null;
  }

  connect() {
    clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.setState("connecting");
    let ws;
    try {
      ws = new WebSocket(this.url);
    } catch (err) {
      this.scheduleReconnect(String(err));
      return;
    }
    this.ws = ws;
    ws.onopen = () => {
      if (this.ws !== ws) return;
      this.attempt = 0;
      this.connects += 1;
      this.setState("open");
    };
    ws.onmessage = (event) => {
      if (this.ws !== ws || typeof event.data !== "string") return;
      let msg;
      try {
        msg = JSON.parse(event.data);
      } catch (err) {
        console.warn("unparsable server message", event.data);
        return;
      }
      this.onMessage(msg);
    };
    ws.onclose = (event) => {
      if (this.ws !== ws) return;
      this.ws = null;
      const why = event.reason || `code ${event.code}`;
      this.scheduleReconnect(why);
    };
    ws.onerror = () => {
      // onclose follows and reconnects
    };
  }

  scheduleReconnect(why) {
    const delay = Math.min(5000, 250 * 2 ** this.attempt);
    this.attempt += 1;
    this.setState("closed", { why, retryInMs: delay });
    this.retryTimer = setTimeout(() => this.connect(), delay);
  }

  setState(state, detail = {}) {
    this.state = state;
    this.onState(state, detail);
  }

  get isOpen() {
    return this.ws !== null && this.ws.readyState === WebSocket.OPEN;
  }

  /** Send one JSON message; false when the socket is not open. */
  send(msg) {
    if (!this.isOpen) return false;
    this.ws.send(JSON.stringify(msg));
    return true;
  }

  /** Close the socket as if the network dropped it (it reconnects). */
  drop() {
    if (this.ws) this.ws.close(4000, "dropped by the page");
  }
}
