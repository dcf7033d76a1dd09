// Actions made while the server cannot be reached (the browser is offline, the socket is down, or the
// request failed to reach the server), kept and sent when it can be reached again. Only actions that
// stay right when sent later are queued: answering an alarm's occurrence, which names the occurrence
// (`scheduled_at`) it answers, so a late send answers that one or is refused (409 CA033 if it closed
// meanwhile) — never the next. Everything else is paused while offline (app.js `setOffline`).
//
// Entries live in localStorage under the user's id (a reload or a closed tab keeps them; another
// account signing in on this browser never sends them) and are dropped at sign-out.

const KEY = 'chronir.outbox';
/** Entries kept at most: a bound on what a long offline spell can pile up. */
export const OUTBOX_LIMIT = 50;

/** One queued request: {id, userId, key, label, method, path, body, at}. `key` names what it is about
 *  (e.g. `alarm-<id>`, so the alarm's card shows it waiting); `label` says it in words. */
export class Outbox {
  /**
   * @param {{api: Function, userId: () => string|null, changed: () => void,
   *          sent: (entries: object[]) => void, refused: (entry: object, error: Error) => void}} hooks
   */
  constructor(hooks) {
    this.hooks = hooks;
    this.flushing = null;
  }

  all() {
    try { return JSON.parse(localStorage.getItem(KEY) || '[]'); } catch { return []; }
  }

  save(entries) {
    if (entries.length) localStorage.setItem(KEY, JSON.stringify(entries));
    else localStorage.removeItem(KEY);
    this.hooks.changed();
  }

  /** The signed-in user's entries, oldest first. */
  mine() {
    const me = this.hooks.userId();
    return me ? this.all().filter((e) => e.userId === me) : [];
  }

  /** The waiting entry about `key`, or null. */
  pendingFor(key) {
    return this.mine().find((e) => e.key === key) || null;
  }

  /** Queues a request; false when the outbox is full (the caller says so instead). */
  add({ key, label, method, path, body }) {
    const userId = this.hooks.userId();
    const entries = this.all();
    if (!userId || entries.length >= OUTBOX_LIMIT) return false;
    entries.push({ id: `${Date.now()}-${Math.random().toString(36).slice(2)}`, userId, key, label, method, path, body, at: new Date().toISOString() });
    this.save(entries);
    return true;
  }

  /** Drops the user's entries (sign-out: nothing is sent for an account that is no longer here). */
  clear(userId) {
    this.save(this.all().filter((e) => e.userId !== userId));
  }

  /** Sends the user's entries in order. A request that still cannot reach the server (status 0) stops
   *  the flush and stays; one the server refuses is dropped and reported; the sent ones are reported
   *  together. One flush at a time. */
  flush() {
    if (!this.flushing) this.flushing = this.run().finally(() => { this.flushing = null; });
    return this.flushing;
  }

  async run() {
    const sent = [];
    for (const entry of this.mine()) {
      try {
        await this.hooks.api(entry.method, entry.path, entry.body);
        sent.push(entry);
      } catch (e) {
        if (e.status === 0) break;
        this.hooks.refused(entry, e);
      }
      this.save(this.all().filter((x) => x.id !== entry.id));
    }
    if (sent.length) this.hooks.sent(sent);
  }
}
