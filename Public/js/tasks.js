// /tasks: "what do I have to do" (docs/design.md#what-do-i-have-to-do): my shared alarms across all my
// groups from GET /v1/me/shared-alarms, by next fire, each with its occurrence's state, its group, and
// Mark done when its answers are open and it waits for me (the group page's own postCompletion).
// Filters: state (all, due, overdue, upcoming) and "Assigned to me" (assigned=me); "Load more" follows
// next_cursor; the filters live in the address (`?state=due&assigned=all`), so a reload or a shared link
// keeps them. Live: the page follows the `group:<id>` topic of each of my groups (as My groups does)
// and fetches the list again when a shared alarm or a completion changes there; relative times ("in
// 3 days", "Overdue 2 h") are drawn again every minute.

import { h, replace, flashChanged, groupBadge, alarmBadge } from './dom.js';
import { enc } from './api.js';
import { myAnswer, postCompletion, answerErrorText, queuedAnswer } from './answers.js';
import { occurrenceState, relativeTime, shortWhen, isPaused } from './schedule.js';

/** Alarms per page (`limit`); the browser scenario makes it small to page through a few. */
export const paging = { size: 20 };
/** Group topics followed at most (the server allows 50 per connection; `user` is one). */
const MAX_GROUPS = 45;
/** Changes that arrive together (an answer writes the completion and the alarm) cause one fetch. */
const REFETCH_DELAY_MS = 150;

const FILTERS = [['', 'All'], ['due', 'Due'], ['overdue', 'Overdue'], ['upcoming', 'Upcoming']];
/** Relative times are drawn again every `ms` (read when the page opens; the browser scenario makes it short). */
export const ticking = { ms: 60_000 };

/** The filters the address names: `state` one of FILTERS' (else all), `assigned=all` turns off
 *  "Assigned to me" (on when absent). */
function viewFromAddress() {
  const q = new URLSearchParams(location.search);
  const state = q.get('state') || '';
  return { state: FILTERS.some(([v]) => v === state) ? state : '', assignedToMe: q.get('assigned') !== 'all' };
}

/** Builds the page in ctx.main; returns the page object app.js keeps as state.page. */
export function tasksPage(ctx) {
  const view = viewFromAddress();
  let alarms = [];
  let cursor = null;
  let generation = 0; // answers of superseded fetches are dropped
  let closed = false;
  let timer = null;
  const ticker = setInterval(() => { if (!closed && alarms.length) tick(); }, ticking.ms);
  const watched = new Map(); // group id → whether its first snapshot arrived
  // Alarm ids whose Mark done is on its way: the button stays disabled through redraws (a double tap
  // sends one answer).
  const sending = new Set();

  const list = h('ul', { class: 'cards', id: 'task-list', 'aria-live': 'polite', 'aria-busy': 'true' },
    h('li', { class: 'meta' }, 'Loading…'));
  const more = h('button', { type: 'button', class: 'secondary', id: 'tasks-more', hidden: true, onclick: () => load(true) }, 'Load more');
  const error = h('p', { class: 'error', role: 'alert', id: 'tasks-error' });

  const radios = FILTERS.map(([value, label]) => {
    const id = `tasks-state-${value || 'all'}`;
    const input = h('input', { type: 'radio', name: 'task_state', id, value, checked: value === view.state });
    input.addEventListener('change', () => { if (input.checked) { view.state = value; restart(); } });
    return h('span', { class: 'check' }, input, h('label', { for: id }, label));
  });
  const assigned = h('input', { type: 'checkbox', id: 'tasks-assigned', checked: view.assignedToMe });
  assigned.addEventListener('change', () => { view.assignedToMe = assigned.checked; restart(); });

  replace(ctx.main,
    h('h1', {}, 'My tasks'),
    h('p', { class: 'meta' }, 'The shared alarms of all your groups, the next one first.'),
    h('form', { class: 'task-filters', 'aria-label': 'Filter tasks', onsubmit: (e) => e.preventDefault() },
      h('fieldset', { class: 'choices' }, h('legend', {}, 'Show'), radios),
      h('span', { class: 'check' }, assigned, h('label', { for: 'tasks-assigned' }, 'Assigned to me (waiting for my answer)'))),
    error,
    list,
    more);
  ctx.focusHeading();

  /** A filter changed: the address says so (replaced, not pushed: Back leaves the page), then the
   *  first page of the new list. */
  function restart() {
    const q = new URLSearchParams();
    if (view.state) q.set('state', view.state);
    if (!view.assignedToMe) q.set('assigned', 'all');
    history.replaceState(history.state, '', `${location.pathname}${q.toString() ? `?${q}` : ''}`);
    alarms = [];
    cursor = null;
    load(false);
  }

  function query(after) {
    const q = new URLSearchParams({ limit: String(paging.size) });
    if (view.state) q.set('state', view.state);
    if (view.assignedToMe) q.set('assigned', 'me');
    if (after) q.set('cursor', after);
    return `/v1/me/shared-alarms?${q}`;
  }

  /** Fetches the list again (`append` false: as many alarms as were shown, at least a page, at most
   *  100 — after a filter change (restart), a live change or an answer) or its next page. */
  async function load(append, touched = []) {
    const mine = ++generation;
    more.disabled = true;
    try {
      let url;
      if (append) url = query(cursor);
      else {
        const q = new URL(query(null), location.origin);
        q.searchParams.set('limit', String(Math.min(100, Math.max(paging.size, alarms.length))));
        url = `${q.pathname}${q.search}`;
      }
      const page = await ctx.api('GET', url);
      if (closed || mine !== generation) return;
      alarms = append ? [...alarms, ...page.alarms.filter((a) => !alarms.some((x) => x.id === a.id))] : page.alarms;
      cursor = page.next_cursor || null;
      error.textContent = '';
      draw(touched);
    } catch (e) {
      if (closed || mine !== generation) return;
      error.textContent = e.message;
    } finally {
      if (mine === generation) more.disabled = false;
    }
  }

  function draw(touched = []) {
    list.setAttribute('aria-busy', 'false');
    more.hidden = !cursor;
    const meId = ctx.me() && ctx.me().id;
    replace(list, alarms.length ? alarms.map((a) => card(a, meId)) : h('li', { class: 'empty', id: 'tasks-empty' }, emptyText()));
    for (const id of touched) flashChanged(document.getElementById(id));
  }

  /** The minute tick: the same list drawn again (its relative times move on); focus on a card's button
   *  stays on that card's button. */
  function tick() {
    const active = document.activeElement;
    const card = active && active.closest ? active.closest('li.task') : null;
    const cls = card && active.classList.length ? `.${[...active.classList].map((c) => CSS.escape(c)).join('.')}` : null;
    draw();
    if (card && cls) {
      const again = document.querySelector(`#${CSS.escape(card.id)} ${active.tagName.toLowerCase()}${cls}`);
      if (again) again.focus({ preventScroll: true });
    }
  }

  function emptyText() {
    const which = { '': '', due: 'due ', overdue: 'overdue ', upcoming: 'upcoming ' }[view.state];
    return view.assignedToMe ? `Nothing ${which}waits for your answer.` : `No ${which}shared alarms in your groups.`;
  }

  function card(a, meId) {
    const g = ctx.groups().get(a.group_id);
    const occ = a.occurrence;
    const st = occ ? occurrenceState(occ) : { state: 'upcoming', text: `Upcoming · ${relativeTime(a.next_fire_at)}` };
    const todo = myAnswer(a, meId);
    let action = null;
    const queued = ctx.outbox && ctx.outbox.pendingFor(`alarm-${a.id}`);
    if (queued) {
      action = h('p', { class: 'meta queued-note' }, `${queued.label}: waiting to be sent.`);
    } else if (todo === 'opens-later') {
      action = h('p', { class: 'meta opens' }, `Answers open ${relativeTime(a.answerable_from)}.`);
    } else if (todo === 'answer') {
      const busy = sending.has(a.id);
      action = h('div', { class: 'actions' }, h('button', { type: 'button', class: 'done', 'data-queue': true, 'aria-describedby': `task-title-${a.id}`,
        disabled: busy, 'aria-busy': busy ? 'true' : null,
        onclick: (e) => answer(a, e.currentTarget) }, st.state === 'upcoming' ? 'Mark done early' : 'Mark done'));
    } else if (occ && (occ.answered || []).some((x) => x.user_id === meId)) {
      action = h('p', { class: 'meta' }, 'You have answered this occurrence.');
    }
    const when = occ && occ.status === 'open' ? occ.scheduled_at : a.next_fire_at;
    const paused = isPaused(a);
    return h('li', { class: 'card task', id: `task-${a.id}`, dataset: { state: st.state, group: a.group_id, paused: paused ? '1' : '' } },
      h('h2', { class: 'card-title', id: `task-title-${a.id}` }, alarmBadge(a), h('a', { href: `/groups/${enc(a.group_id)}` }, a.title)),
      h('p', { class: 'task-group' }, g ? groupBadge(g) : null, g ? g.name : 'A group of yours'),
      h('p', {}, h('strong', { class: `state state-${st.state}` }, st.text), ' · ', h('span', { class: 'meta' }, shortWhen(when))),
      paused ? h('p', { class: 'meta paused' }, `Paused until ${shortWhen(a.paused_until)}: nothing is due before then.`) : null,
      action);
  }

  async function answer(a, button) {
    if (sending.has(a.id)) return; // a second tap while the first is on its way
    button.disabled = true;
    if (!(ctx.isOffline && ctx.isOffline())) {
      sending.add(a.id);
      try {
        await postCompletion(ctx.api, a.group_id, a, 'completed');
        ctx.flash(`Marked done: ${a.title}.`, 'ok');
        if (!closed) load(false, [`task-${a.id}`]);
        return;
      } catch (e) {
        if (e.status !== 0) {
          ctx.flash(answerErrorText(e), 'error');
          if (!closed) load(false, [`task-${a.id}`]);
          return;
        }
      } finally {
        sending.delete(a.id);
      }
    }
    // Offline, or the request never reached the server: kept and sent when the connection is back.
    const entry = queuedAnswer(a.group_id, a, 'completed');
    if (ctx.outbox.add(entry)) ctx.flash(`You are offline. ${entry.label} is kept on this device and will be sent when the connection is back.`, 'warn');
    else ctx.flash('Too many actions are waiting to be sent: try again when the connection is back.', 'error');
    draw([`task-${a.id}`]);
  }

  function refetchSoon() {
    clearTimeout(timer);
    timer = setTimeout(() => { if (!closed) load(false); }, REFETCH_DELAY_MS);
  }

  function follow() {
    const wanted = new Set([...ctx.groups().keys()].slice(0, MAX_GROUPS));
    for (const id of [...watched.keys()]) {
      if (!wanted.has(id)) { ctx.realtime.unsubscribe(`group:${id}`); watched.delete(id); }
    }
    for (const id of wanted) {
      if (watched.has(id)) continue;
      watched.set(id, false);
      ctx.realtime.subscribe(`group:${id}`, {
        // The first snapshot is the state the list was fetched at; a later one (a reset after a drop) is news.
        snapshot() { if (watched.get(id)) refetchSoon(); watched.set(id, true); },
        change(msg) {
          // A renamed (or recoloured) group: its cards say the new name at once (the
          // old one stayed until a reload). The list of my groups (app.js, the `user` feed's) is the
          // one every page reads, so it is brought up to date here, where the change arrives.
          for (const c of msg.changes) {
            const known = c.kind === 'group' && c.doc && ctx.groups().get(c.doc.id || id);
            if (known) ctx.groups().set(id, { ...known, ...c.doc });
          }
          if (alarms.length && msg.changes.some((c) => c.kind === 'group')) tick();
          if (msg.changes.some((c) => c.kind === 'shared_alarm' || c.kind === 'shared_completion' || c.kind === 'group')) refetchSoon();
        },
        revoked() { refetchSoon(); },
        error() {},
      });
    }
  }

  follow();
  load(false);

  return {
    kind: 'tasks',
    /** Draws again (an answer in the outbox was sent or queued). */
    rerender() { if (!closed) draw(); },
    /** My groups changed (the `user` feed): follow the new set, and fetch again (a group gained or lost). */
    groupsChanged() { follow(); refetchSoon(); },
    close() {
      closed = true;
      clearTimeout(timer);
      clearInterval(ticker);
      for (const id of watched.keys()) ctx.realtime.unsubscribe(`group:${id}`);
      watched.clear();
    },
  };
}
