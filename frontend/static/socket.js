// The websocket to /ws: connect, reconnect with exponential backoff, and
// report the connection state ("connecting", "connected", "reconnecting").

// A restarted server is back within seconds: retry soon (0.5 s, 1 s, 2 s, then every 3 s at
// most, each with jitter so that many pages do not come back at once), and at once when the
// browser says the network is back.
const BASE_DELAY_MS = 500;
const MAX_DELAY_MS = 3000;

export class Connection {
  constructor(path, { onEvent, onState }) {
    this.path = path;
    this.onEvent = onEvent;
    this.onState = onState;
    this.socket = null;
    this.attempt = 0;
    this.retryTimer = null;
    this.countdownTimer = null;
    this.retryAt = 0;
    this.state = "connecting";
    this.refusal = "";
    window.addEventListener("online", () => {
      if (this.state === "reconnecting" && this.retryTimer) this.retryNow();
    });
  }

  get open() {
    return this.state === "connected" && this.socket?.readyState === WebSocket.OPEN;
  }

  connect() {
    this._clearTimers();
    this._setState(this.attempt === 0 ? "connecting" : "reconnecting", { retryIn: 0, attempt: this.attempt });
    const proto = location.protocol === "https:" ? "wss" : "ws";
    const socket = new WebSocket(`${proto}://${location.host}${this.path}`);
    this.socket = socket;
    socket.addEventListener("message", (message) => {
      let event;
      try {
        event = JSON.parse(message.data);
      } catch {
        return;
      }
      if (event.type === "session") {
        this.attempt = 0;
        this.refusal = "";
        this._setState("connected", {});
      }
      this.onEvent(event);
    });
    socket.addEventListener("close", (closed) => {
      if (this.socket !== socket) return;
      this.socket = null;
      // 1008: the server refused this socket and says why (too many tabs open, no sign-in).
      this.refusal = closed.code === 1008 ? closed.reason : "";
      this._scheduleRetry();
    });
  }

  /** Drop the socket now and reconnect at once (the "Retry now" button). */
  retryNow() {
    this.attempt = Math.max(this.attempt, 1);
    this.connect();
  }

  send(message) {
    if (!this.open) return false;
    this.socket.send(JSON.stringify(message));
    return true;
  }

  _scheduleRetry() {
    this.attempt += 1;
    const backoff = Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** (this.attempt - 1));
    const delay = backoff / 2 + Math.random() * (backoff / 2); // jitter: no reconnect storms
    this.retryAt = Date.now() + delay;
    this.retryTimer = setTimeout(() => this.connect(), delay);
    const tick = () => {
      const retryIn = Math.max(0, Math.ceil((this.retryAt - Date.now()) / 1000));
      this._setState("reconnecting", { retryIn, attempt: this.attempt });
    };
    tick();
    this.countdownTimer = setInterval(tick, 500);
  }

  _clearTimers() {
    clearTimeout(this.retryTimer);
    clearInterval(this.countdownTimer);
    this.retryTimer = this.countdownTimer = null;
  }

  _setState(state, detail) {
    const changed = state !== this.state;
    this.state = state;
    if (state !== "reconnecting" || detail.retryIn === 0) clearInterval(this.countdownTimer);
    this.onState(state, { ...detail, changed });
  }
}
