// One WebSocket to /v1/realtime for the whole page, authenticated by the session cookie the browser sends
// with the upgrade (same origin; the server checks the Origin and the cookie before the 101, and closes
// 4001 when the session is not valid). Each topic remembers its last seq and the log's
// epoch; after a drop the client reconnects with exponential backoff (0.5 s doubling to 30 s, with
// jitter) and resubscribes with `since`, so the server replays only what was missed (or answers with a
// reset snapshot when it can't). A subscribe answered `unavailable` (the server could not read the topic:
// its database is failing or failing over) is sent again on the same backoff, per topic, until a snapshot.

const BACKOFF_START_MS = 500;
const BACKOFF_MAX_MS = 30_000;
const PING_EVERY_MS = 25_000;
const PONG_WAIT_MS = 10_000;
/** Close codes after which reconnecting can't help: the session is over. */
const SESSION_OVER = new Set([4001, 4003]);

export class Realtime {
  /**
   * @param {() => boolean} token  whether the page is signed in (the cookie authenticates the socket)
   * @param {{state(s: {state: string, detail?: string}): void, sessionEnded(code: number): void}} hooks
   */
  constructor(token, hooks) {
    this.token = token;
    this.hooks = hooks;
    this.topics = new Map(); // topic → {seq, epoch, handler, retries, retryTimer}
    this.ws = null;
    this.attempt = 0;
    this.timer = null;
    this.pingTimer = null;
    this.pongTimer = null;
    this.stopped = true;
    this.nextId = 1;
    // The browser says the network went away: say so at once (the socket may take a heartbeat to notice).
    // Back online: a socket that survived proves itself with a ping; otherwise connect now.
    window.addEventListener('offline', () => { if (!this.stopped) this.setState('offline', 'no network'); });
    window.addEventListener('online', () => {
      if (this.stopped) return;
      if (this.ws && this.ws.readyState === WebSocket.OPEN) this.send({ op: 'ping', id: 'hello' });
      else if (!this.ws) this.connectNow();
    });
  }

  start() {
    if (!this.stopped) return;
    this.stopped = false;
    this.connectNow();
  }

  /** Closes the socket for good (logout). */
  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    this.clearHeartbeat();
    if (this.ws) { const ws = this.ws; this.ws = null; ws.close(1000, 'bye'); }
    for (const t of this.topics.values()) clearTimeout(t.retryTimer);
    this.topics.clear();
    this.setState('offline');
  }

  /** handler: {snapshot(msg), change(msg), revoked(msg), error(msg)} */
  subscribe(topic, handler) {
    const existing = this.topics.get(topic);
    if (existing) { existing.handler = handler; return; }
    this.topics.set(topic, { seq: null, epoch: null, handler, retries: 0, retryTimer: null });
    this.sendSubscribe(topic);
  }

  unsubscribe(topic) {
    const t = this.topics.get(topic);
    if (!t) return;
    clearTimeout(t.retryTimer);
    this.topics.delete(topic);
    this.send({ op: 'unsubscribe', topic });
  }

  // — internals —

  connectNow() {
    clearTimeout(this.timer);
    if (this.stopped || !this.token()) return;
    this.setState(this.attempt === 0 ? 'connecting' : 'reconnecting');
    const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
    const ws = new WebSocket(`${scheme}://${location.host}/v1/realtime`);
    this.ws = ws;
    ws.onopen = () => {
      if (this.ws !== ws) return;
      for (const topic of this.topics.keys()) this.sendSubscribe(topic);
      // The upgrade was authenticated before the 101, so the pong proves a live, authenticated socket.
      this.send({ op: 'ping', id: 'hello' });
      this.startHeartbeat();
    };
    ws.onmessage = (event) => { if (this.ws === ws) this.receive(event.data); };
    ws.onclose = (event) => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.clearHeartbeat();
      if (this.stopped) return;
      if (SESSION_OVER.has(event.code)) {
        this.stopped = true;
        this.setState('offline');
        this.hooks.sessionEnded(event.code);
        return;
      }
      this.scheduleReconnect();
    };
    ws.onerror = () => { /* onclose follows and reconnects */ };
  }

  /** The wait before retry number `attempt` (from 0): 0.5 s doubling to 30 s, the upper half jittered. */
  static backoff(attempt) {
    const base = Math.min(BACKOFF_MAX_MS, BACKOFF_START_MS * 2 ** attempt);
    return Math.round(base / 2 + Math.random() * base / 2);
  }

  scheduleReconnect() {
    const delay = Realtime.backoff(this.attempt);
    this.attempt += 1;
    this.setState('reconnecting', `retrying in ${Math.max(1, Math.round(delay / 1000))} s`);
    this.timer = setTimeout(() => this.connectNow(), delay);
  }

  sendSubscribe(topic) {
    const t = this.topics.get(topic);
    if (!t) return;
    clearTimeout(t.retryTimer);
    t.retryTimer = null;
    const message = { op: 'subscribe', topic, id: this.nextId++ };
    if (t.seq !== null) {
      message.since = t.seq;
      if (t.epoch) message.epoch = t.epoch;
    }
    this.send(message);
  }

  send(message) {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(message));
  }

  startHeartbeat() {
    this.clearHeartbeat();
    this.pingTimer = setInterval(() => {
      this.send({ op: 'ping' });
      clearTimeout(this.pongTimer);
      this.pongTimer = setTimeout(() => { if (this.ws) this.ws.close(4000, 'no pong'); }, PONG_WAIT_MS);
    }, PING_EVERY_MS);
  }

  clearHeartbeat() {
    clearInterval(this.pingTimer);
    clearTimeout(this.pongTimer);
  }

  receive(text) {
    let msg;
    try { msg = JSON.parse(text); } catch { return; }
    const t = msg.topic ? this.topics.get(msg.topic) : null;
    switch (msg.type) {
      case 'snapshot':
        if (!t) return;
        t.seq = msg.seq;
        if (msg.epoch) t.epoch = msg.epoch;
        t.retries = 0;
        t.handler.snapshot(msg);
        break;
      case 'change':
        if (!t || (t.seq !== null && msg.seq <= t.seq)) return; // already applied
        t.seq = msg.seq;
        if (msg.epoch) t.epoch = msg.epoch;
        t.handler.change(msg);
        break;
      case 'revoked':
        if (!t) return;
        this.topics.delete(msg.topic);
        t.handler.revoked(msg);
        break;
      case 'presence':
        if (t && t.handler.presence) t.handler.presence(msg);
        break;
      case 'error':
        if (!t) return;
        if (msg.code === 'not_found') this.topics.delete(msg.topic);
        if (msg.code === 'unavailable') {
          // The subscription ended; ask again later, resuming from the seq it had (a new socket's onopen
          // resubscribes every topic anyway and clears this timer).
          clearTimeout(t.retryTimer);
          t.retryTimer = setTimeout(() => this.sendSubscribe(msg.topic), Realtime.backoff(t.retries));
          t.retries += 1;
        }
        if (t.handler.error) t.handler.error(msg);
        break;
      case 'pong':
        clearTimeout(this.pongTimer);
        if (msg.id === 'hello') { this.attempt = 0; this.setState('live'); }
        break;
      default:
        break;
    }
  }

  setState(state, detail) { this.hooks.state({ state, detail }); }
}
