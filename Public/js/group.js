// The group page: shared alarms with their open occurrence, members and roles, invite code and
// invitations, recent activity. Kept current by the `group:<id>` topic; what changed is highlighted.

import { enc } from './api.js';
import { Attachments } from './attachments.js';
import { h, replace, field, flashChanged, pauseForOffline, GROUP_ICONS, groupBadge, alarmBadge } from './dom.js';

export { GROUP_ICONS, groupBadge };
import { alarmForm } from './alarmform.js';
import { scheduleInWords, whenIn, myZone, shortWhen, sameWallTime, relativeTime, occurrenceState, isPaused, leadWords, startOfDayIn, pad2 } from './schedule.js';

const RECENT_LIMIT = 50;
const HISTORY_PAGE = 20;
/** Activity lines shown at first, and added by each "Show earlier activity". */
const ACTIVITY_SHOWN = 15;
/** Events asked for per page of GET …/activity. */
const ACTIVITY_PAGE = 50;
/** History events told with who did them (`byWhom`). */
const BY_WHOM_EVENTS = new Set(['group_updated', 'shared_alarm_created', 'shared_alarm_updated', 'shared_alarm_deleted', 'member_removed', 'role_changed']);
const ROLE_RANK = { owner: 3, admin: 2, member: 1 };

const REVOKED_TEXT = {
  removed: 'You were removed from the group',
  access_revoked: 'Your access to the group ended',
  left: 'You left the group',
  group_deleted: 'The group was deleted',
  deleted: 'The group was deleted',
  account_deleted: 'Your account was deleted',
};

export class GroupPage {
  constructor(ctx) {
    this.ctx = ctx;
    this.kind = 'group';
    this.groupId = ctx.groupId;
    this.topic = `group:${ctx.groupId}`;
    this.group = null;
    this.members = new Map();
    this.alarms = new Map();
    this.completions = [];
    this.events = []; // what happened while the page was open, in words: {at, text}
    // What happened before, from GET …/activity (since I joined): raw events newest first, up to the
    // snapshot's seq (later ones arrive live), the next page's cursor, and how many activity lines show.
    this.past = { raw: [], lines: [], next: null, bound: 0, loading: false, shown: ACTIVITY_SHOWN };
    this.history = new Map(); // alarm id → completions (newest first) once its history is opened
    this.openHistory = new Set();
    this.openCards = new Set(); // alarm ids whose card shows its details
    // Alarm id → the alarm before my own control change, until that change arrives live: my page has the
    // new alarm from the answer first, and the activity line needs the old one (paused, resumed…).
    this.editedBefore = new Map();
    // Photos and files of the alarms (in their details) and of the answers (in the activity list).
    this.attachments = new Attachments({
      api: (method, path) => this.ctx.api(method, path),
      flash: (text, kind) => this.ctx.flash(text, kind),
      name: (userId) => this.name(userId),
      offline: () => this.offline,
      render: (touched) => this.render(touched),
    });
    this.editing = null; // alarm id being edited, 'new', or null
    this.presence = new Set();
    this.invitations = null;
    this.shownSecret = null; // {label, url} shown once after creating a code or link invitation
    this.closed = false;
    // Persistent parts: re-rendering the rest never loses what someone is typing here.
    this.formSlot = h('div', { id: 'alarm-form-slot' });
    this.inviteSlot = h('div', { id: 'invite-slot' });
    this.groupFormSlot = h('div', { id: 'group-form-slot' });
  }

  get me() { return this.ctx.me(); }
  /** Whether the connection is down (app.js): answers are queued, nothing else is fetched. */
  get offline() { return Boolean(this.ctx.isOffline && this.ctx.isOffline()); }

  /** Draws again with the same data (the viewer's clock or zone changed). */
  rerender() { this.render(); }
  get myRole() { const m = this.me && this.members.get(this.me.id); return m ? m.role : null; }
  get canManage() { return ['owner', 'admin'].includes(this.myRole); }

  open() {
    // A field someone has typed in or chosen from is theirs: re-renders restore its value.
    this.onInput = (event) => { if (event.target.dataset && event.target.dataset.key) event.target.dataset.touched = '1'; };
    this.ctx.main.addEventListener('input', this.onInput);
    replace(this.ctx.main, h('h1', {}, 'Loading the group…'), h('p', { class: 'meta' }, 'Waiting for the server.'));
    this.ctx.realtime.subscribe(this.topic, {
      snapshot: (msg) => this.snapshot(msg),
      change: (msg) => this.change(msg),
      revoked: (msg) => this.revoked(msg),
      presence: (msg) => this.presenceChange(msg),
      error: (msg) => {
        if (msg.code === 'not_found') this.leavePage('This group does not exist or you are not a member.');
      },
    });
  }

  close() {
    this.closed = true;
    if (this.onInput) this.ctx.main.removeEventListener('input', this.onInput);
    this.ctx.realtime.unsubscribe(this.topic);
  }

  leavePage(message) {
    if (this.closed) return;
    this.close();
    this.ctx.flash(message, 'warn');
    this.ctx.navigate('/', { replaceState: true });
  }

  // — feed —

  snapshot(msg) {
    const d = msg.data;
    const first = this.group === null;
    this.group = d.group;
    this.members = new Map(d.members.map((m) => [m.user_id, m]));
    this.alarms = new Map(d.alarms.map((a) => [a.id, a]));
    for (const a of d.alarms) this.attachments.fromDocument('shared_alarm', a);
    this.completions = d.recent_completions || [];
    for (const c of this.completions) this.attachments.fromDocument('shared_completion', { ...c, attachments: c.attachments || [] });
    if (msg.presence) this.presence = new Set(msg.presence);
    // The history up to this snapshot comes from the server; what follows arrives live (a reset
    // snapshot starts both again: what was missed meanwhile is in the history).
    this.events = [];
    this.past = { raw: [], lines: [], next: null, bound: msg.seq || 0, loading: false, shown: first ? ACTIVITY_SHOWN : this.past.shown };
    this.loadActivity();
    this.render();
    if (first) {
      const heading = this.ctx.main.querySelector('h1');
      heading.tabIndex = -1;
      heading.focus();
      // Opened from a notification about one alarm (/groups/<id>#alarm-<id>): show that alarm.
      const target = location.hash.startsWith('#alarm-') && document.getElementById(decodeURIComponent(location.hash.slice(1)));
      if (target) this.toggleCard(target.id.slice('alarm-'.length), true);
      if (target) { target.scrollIntoView({ block: 'start' }); flashChanged(target); }
    }
    document.title = `${this.group.name} · Chronir`;
  }

  change(msg) {
    const said = this.describe(msg);
    for (const c of msg.changes) if (c.kind === 'shared_alarm') this.editedBefore.delete(c.id);
    if (said) {
      this.events.unshift({ at: new Date().toISOString(), text: said });
      this.events.length = Math.min(this.events.length, RECENT_LIMIT);
    }
    const touched = [];
    for (const c of msg.changes) {
      switch (c.kind) {
        case 'group':
          if (c.doc) { this.group = c.doc; touched.push('group-head'); }
          break;
        case 'member': {
          const userId = c.doc ? c.doc.user_id : c.id.split(':').pop();
          if (c.op === 'removed' || !c.doc || c.doc.status !== 'active') this.members.delete(userId);
          else { this.members.set(userId, c.doc); touched.push(`member-${userId}`); }
          touched.push('members-head');
          break;
        }
        case 'shared_alarm':
          // A removal typed `unassigned` that still carries the alarm keeps it: every member sees every alarm.
          if (c.op === 'removed' && c.reason === 'unassigned' && c.doc && !c.doc.deleted_at) this.alarms.set(c.id, c.doc);
          else if (c.op === 'removed' || !c.doc || c.doc.deleted_at) this.alarms.delete(c.id);
          else {
            this.alarms.set(c.id, c.doc);
            this.attachments.fromDocument('shared_alarm', c.doc);
            touched.push(`alarm-${c.id}`);
          }
          break;
        case 'attachment': {
          // An upload or a removal between writes of its alarm or answer (docs/attachments.md#in-the-documents).
          const key = this.attachments.applyChange(c);
          if (key) touched.push(key.startsWith('shared_completion:') ? `completion-${key.split(':')[1]}` : `alarm-${key.split(':')[1]}`);
          break;
        }
        case 'shared_completion':
          if (c.doc && !this.completions.some((x) => x.id === c.doc.id)) {
            this.completions.unshift(c.doc);
            this.attachments.fromDocument('shared_completion', { ...c.doc, attachments: c.doc.attachments || [] });
            this.completions.length = Math.min(this.completions.length, RECENT_LIMIT);
            const hist = this.history.get(c.doc.shared_alarm_id);
            if (hist && !hist.some((x) => x.id === c.doc.id)) hist.unshift(c.doc);
            touched.push(`completion-${c.doc.id}`, `alarm-${c.doc.shared_alarm_id}`);
          }
          break;
        case 'invite_code':
          touched.push('invite-code');
          break;
        default:
          break;
      }
    }
    if (msg.event && msg.event.startsWith('invitation') && this.canManage) this.loadInvitations();
    this.render(touched);
  }

  /** A change batch in plain words for the activity feed (before it is applied: the names are still
   *  known), or null. `past` tells a batch from the history: the group's name before it (null: not
   *  known) and each alarm as the older batches left it. */
  describe(msg, past = null) {
    const of = (kind) => msg.changes.find((c) => c.kind === kind);
    const member = of('member');
    const who = member ? (member.doc && member.doc.display_name) || this.name(member.doc ? member.doc.user_id : String(member.id).split(':').pop()) : 'Someone';
    const alarm = of('shared_alarm');
    // The alarm as it was before this batch: the page's own copy (live), or the history's (past).
    const before = alarm ? (past ? past.alarms.get(alarm.id) : this.editedBefore.get(alarm.id) || this.alarms.get(alarm.id)) : null;
    const title = alarm ? `“${(alarm.doc && alarm.doc.title) || (before && before.title) || 'an alarm'}”` : 'an alarm';
    const nameBefore = past ? past.name : this.group && this.group.name;
    switch (msg.event) {
      case 'member_joined': case 'invitation_accepted': return `${who} joined the group`;
      case 'member_left': return `${who} left the group`;
      case 'member_removed': return `${who} was removed from the group`;
      case 'role_changed': return member && member.doc ? `${who} is now ${member.doc.role === 'admin' ? 'an admin' : 'a member'}` : null;
      case 'ownership_transferred': {
        const owner = msg.changes.find((c) => c.kind === 'member' && c.doc && c.doc.role === 'owner');
        return owner ? `${owner.doc.display_name} is now the owner` : 'The group has a new owner';
      }
      case 'group_updated': {
        const g = of('group');
        return g && g.doc && nameBefore && g.doc.name !== nameBefore ? `The group was renamed “${g.doc.name}”` : 'The group’s details were changed';
      }
      case 'shared_alarm_created': return `${title} was created`;
      case 'shared_alarm_updated': return `${title} ${this.alarmEdit(alarm && alarm.doc, before)}`;
      case 'shared_alarm_deleted': return `${title} was deleted`;
      case 'missed_alarm_followup': return `${title} was missed`;
      default: return null;
    }
  }

  /** What an edit of a shared alarm did, in words: switched off or on, paused or resumed (the controls),
   *  else edited. `before` is the alarm before it, when known. */
  alarmEdit(doc, before) {
    if (!doc) return 'was edited';
    const wasOff = before ? before.is_enabled === false : null;
    if (doc.is_enabled === false && wasOff === false) return 'was switched off';
    if (doc.is_enabled !== false && wasOff === true) return 'was switched on';
    const pauseBefore = before ? before.paused_until || null : undefined;
    if (doc.paused_until && pauseBefore !== undefined && doc.paused_until !== pauseBefore) return `was paused until ${shortWhen(doc.paused_until)}`;
    if (!doc.paused_until && pauseBefore) return 'was resumed';
    return 'was edited';
  }

  /** Fetches the next page of the group's history (GET …/activity: since I joined, newest first) and
   *  tells it in words, oldest first so each rename knows the name before it. */
  async loadActivity() {
    const past = this.past;
    if (past.loading || this.offline) return;
    past.loading = true;
    try {
      const q = new URLSearchParams({ limit: String(ACTIVITY_PAGE) });
      if (past.next) q.set('before', String(past.next));
      const page = await this.ctx.api('GET', `/v1/groups/${enc(this.groupId)}/activity?${q}`);
      if (this.closed || past !== this.past) return;
      past.raw.push(...page.events.filter((e) => !past.bound || e.seq <= past.bound));
      past.next = page.next_before;
      const known = { name: null, alarms: new Map() };
      const lines = [];
      for (const e of [...past.raw].reverse()) {
        const text = this.describe(e, known);
        if (text) lines.push({ at: e.at, text: text + this.byWhom(e), past: true });
        for (const c of e.changes) {
          if (c.kind === 'group' && c.doc) known.name = c.doc.name;
          if (c.kind === 'shared_alarm' && c.doc) known.alarms.set(c.id, c.doc);
        }
      }
      past.lines = lines.reverse();
    } catch (e) {
      if (!this.closed && past === this.past) this.ctx.flash(`The group's earlier activity could not be loaded: ${e.message}`, 'error');
    } finally {
      past.loading = false;
    }
    if (!this.closed && past === this.past) this.render(['activity']);
  }

  /** Who did a past event, as " by Ana" — for the events whose words name what changed, not who did
   *  it (an alarm or the group edited, a member removed or given a role); "" when the actor is not a
   *  current member (an operator, the server, someone who has left). `actor` is the change log's
   *  (`user:<id>`, `admin`, …); live changes carry none. */
  byWhom(e) {
    if (!BY_WHOM_EVENTS.has(e.event) || !e.actor || !e.actor.startsWith('user:')) return '';
    const userId = e.actor.slice('user:'.length);
    if (this.me && userId === this.me.id) return ' by you';
    const m = this.members.get(userId);
    return m ? ` by ${m.display_name}` : '';
  }

  /** "Show earlier activity": more lines; when the loaded ones run out, the next page first. */
  async showEarlierActivity() {
    this.past.shown += ACTIVITY_SHOWN;
    if (this.activityItems().length < this.past.shown && this.past.next) await this.loadActivity();
    else this.render(['activity']);
  }

  revoked(msg) {
    const name = this.group ? this.group.name : 'the group';
    const why = REVOKED_TEXT[msg.reason] || 'You no longer have access to the group';
    this.leavePage(`${why}: ${name}. It is no longer in your groups.`);
  }

  presenceChange(msg) {
    for (const u of msg.joined || []) this.presence.add(u);
    for (const u of msg.left || []) this.presence.delete(u);
    this.render();
  }

  // — rendering —

  name(userId) {
    const m = this.members.get(userId);
    if (m) return m.user_id === (this.me && this.me.id) ? `${m.display_name} (you)` : m.display_name;
    const c = this.completions.find((x) => x.completed_by_uid === userId);
    return c ? c.completed_by_name : 'a former member';
  }

  render(touched = []) {
    if (this.closed || !this.group) return;
    // Keep focus, the caret and whatever is half-typed or half-chosen across the re-render (fields carry
    // a stable data-key; armed confirm buttons keep their state in `armed`).
    const active = document.activeElement;
    const focusKey = active && active.dataset ? active.dataset.key : null;
    const caret = active && typeof active.selectionStart === 'number' ? [active.selectionStart, active.selectionEnd] : null;
    const typed = new Map([...this.ctx.main.querySelectorAll('input[data-key], select[data-key], textarea[data-key]')]
      .filter((el) => el.type !== 'checkbox' && el.type !== 'radio' && el.type !== 'file' && !el.readOnly && el.dataset.touched)
      .map((el) => [el.dataset.key, el.value]));

    const g = this.group;
    const alarms = [...this.alarms.values()].sort((a, b) => (a.next_fire_at || '9').localeCompare(b.next_fire_at || '9'));
    replace(this.ctx.main,
      h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('a', { href: '/' }, 'My groups'), ' › ', g.name),
      h('header', { id: 'group-head', class: 'group-head' },
        h('h1', {}, groupBadge(g), g.name),
        g.description ? h('p', {}, g.description) : null,
        h('p', { class: 'meta' }, `You are ${this.myRole === 'owner' ? 'the owner' : `${this.myRole === 'admin' ? 'an admin' : 'a member'}`} · ${g.member_count} member${g.member_count === 1 ? '' : 's'}`,
          g.frozen_at ? ' · frozen by an operator (read-only)' : ''),
        this.muteSwitch(),
        this.canManage && !this.editingGroup
          ? h('button', { type: 'button', class: 'secondary small', id: 'edit-group', 'data-key': 'edit-group', onclick: () => this.editGroup(true) }, 'Group settings') : null,
        this.canManage ? this.groupFormSlot : null),
      h('section', { 'aria-labelledby': 'alarms-h' },
        h('div', { class: 'section-head' }, h('h2', { id: 'alarms-h' }, 'Shared alarms'),
          this.canManage && this.editing !== 'new' ? h('button', { type: 'button', 'data-key': 'new-alarm', onclick: () => this.edit('new') }, 'New alarm') : null),
        this.formSlot,
        alarms.length ? h('ul', { class: 'cards', id: 'alarm-list' }, alarms.map((a) => this.alarmCard(a)))
          : h('p', { class: 'empty' }, this.canManage ? 'No shared alarms yet. Create the first one.' : 'No shared alarms yet.')),
      this.membersSection(),
      this.canManage ? this.inviteSlot : null,
      this.activitySection(),
      this.leaveSection());
    if (this.canManage) {
      this.renderInvite();
      if (this.invitations === null && !this.loadingInvitations) this.loadInvitations(); // also after a promotion
    } else {
      this.invitations = null;
      this.shownSecret = null;
    }

    for (const [key, value] of typed) {
      const el = this.ctx.main.querySelector(`[data-key="${CSS.escape(key)}"]`);
      if (el) { el.value = value; el.dataset.touched = '1'; }
    }
    if (active && active !== document.body && active.isConnected && document.activeElement !== active) {
      // In a slot re-renders move but keep (the alarm and group forms): the same element, focused again.
      active.focus({ preventScroll: true });
      if (caret && typeof active.setSelectionRange === 'function') { try { active.setSelectionRange(...caret); } catch { /* not a text field */ } }
    } else if (focusKey) {
      const el = this.ctx.main.querySelector(`[data-key="${CSS.escape(focusKey)}"]`);
      if (el) {
        el.focus({ preventScroll: true });
        if (caret && typeof el.setSelectionRange === 'function') { try { el.setSelectionRange(...caret); } catch { /* not a text field */ } }
      }
    }
    document.title = `${g.name} · Chronir`;
    if (this.offline) pauseForOffline(this.ctx.main); // what was drawn afresh stays paused too
    for (const id of new Set(touched)) flashChanged(document.getElementById(id));
  }

  /** One alarm as one line — a check to answer, the title, the open occurrence's state and how many
   *  answered — with everything else (schedule, facts, who answered, the note, Skip, tools, history)
   *  behind a disclosure button whose state survives re-renders (`openCards`). */
  alarmCard(a) {
    const meId = this.me && this.me.id;
    const occ = a.occurrence;
    const zone = a.timezone;
    const mine = this.me && this.me.timezone ? this.me.timezone : myZone();
    const assignees = (a.assigned_to_uids || []).length ? a.assigned_to_uids.map((u) => this.name(u)).join(', ') : 'Everyone in the group';
    const ruleText = a.completion_rule === 'all' ? 'Everyone required must answer' : 'The first answer closes it';
    const st = occurrenceState(occ);
    const answered = occ ? new Map((occ.answered || []).map((x) => [x.user_id, x])) : new Map();
    const required = occ ? occ.required_uids || [] : [];

    let progress = null;
    if (occ) {
      const pending = occ.pending_uids || [];
      progress = h('div', { class: 'progress', 'aria-label': 'Progress of the open occurrence' },
        h('p', {}, h('strong', {}, st.text),
          ` — ${answered.size} of ${required.length} answered`,
          occ.status === 'open' && pending.length ? `; waiting for ${pending.map((u) => this.name(u)).join(', ')}` : ''),
        h('ul', { class: 'who' }, required.map((u) => {
          const ans = answered.get(u);
          return h('li', { class: ans ? `answered ${ans.status}` : 'pending', dataset: { user: u } },
            this.name(u), ': ', ans ? `${ans.status === 'completed' ? 'done' : 'skipped'} ${shortWhen(ans.at)}` : 'not yet');
        })));
    }
    const previous = this.previousOccurrence(a);

    // Answers open at `answerable_from` (the alarm's lead window before its time, or the end of a pause).
    const todo = myAnswer(a, meId);
    const queued = this.ctx.outbox ? this.ctx.outbox.pendingFor(`alarm-${a.id}`) : null;
    const noteId = `note-${a.id}`;
    const note = h('input', { type: 'text', id: noteId, maxlength: 500, 'data-key': noteId, class: 'note-input' });
    let check;
    let mySay = null;
    if (queued) {
      check = h('span', { class: 'check-mark queued', 'aria-hidden': 'true' }, '…');
      mySay = h('span', { class: 'queued-note' }, ` · ${queued.label}: waiting to be sent`);
    } else if (todo === 'answer') {
      const early = st && st.state === 'upcoming';
      check = h('button', { type: 'button', class: 'done check', 'data-key': `done-${a.id}`, 'data-queue': true, 'aria-label': `Mark “${a.title}” done${early ? ' early' : ''}`,
        title: early ? 'Mark done early' : 'Mark done', onclick: (e) => this.answer(a, 'completed', note, e.currentTarget) }, '✓');
    } else if (occ && answered.has(meId)) {
      check = h('span', { class: `check-mark ${answered.get(meId).status}`, 'aria-hidden': 'true' }, answered.get(meId).status === 'completed' ? '✓' : '↷');
      mySay = ' · you answered';
    } else {
      check = h('span', { class: 'check-mark none', 'aria-hidden': 'true' });
      if (todo === 'opens-later') mySay = ` · answers open ${relativeTime(a.answerable_from)}`;
    }

    const answerPart = [];
    if (todo === 'opens-later') {
      answerPart.push(h('p', { class: 'meta opens' }, `Answers open ${relativeTime(a.answerable_from)}.`));
    } else if (todo === 'answer' && !queued) {
      answerPart.push(h('div', { class: 'answer' },
        h('div', { class: 'field note-field' }, h('label', { for: noteId }, 'Note (optional, sent with ✓ or Skip)'), note),
        h('div', { class: 'actions' },
          h('button', { type: 'button', 'data-key': `skip-${a.id}`, 'data-queue': true, class: 'secondary skip-answer', onclick: (e) => this.answer(a, 'skipped', note, e.target) }, 'Skip this time'))));
    } else if (occ && answered.has(meId)) {
      answerPart.push(h('p', { class: 'meta' }, 'You have answered this occurrence.'));
    }
    const off = a.is_enabled === false;
    const paused = !off && isPaused(a);
    const lead = leadWords(a.answer_lead_minutes);
    const tools = [];
    if (this.canManage) tools.push(h('button', { type: 'button', class: 'secondary small', 'data-key': `edit-${a.id}`, onclick: () => this.edit(a.id) }, 'Edit'));
    if (this.myRole === 'owner' || a.created_by_uid === meId) {
      tools.push(confirmButton(`Delete “${a.title}”`, 'Delete', `delete-${a.id}`, () => this.deleteAlarm(a)));
    }

    const history = h('details', { class: 'history', 'data-key': `history-${a.id}`, open: this.openHistory.has(a.id) },
      h('summary', {}, 'History'),
      this.historyList(a.id));
    history.addEventListener('toggle', () => {
      if (history.open) { this.openHistory.add(a.id); if (!this.history.has(a.id)) this.loadHistory(a.id); }
      else this.openHistory.delete(a.id);
    });

    const open = this.openCards.has(a.id);
    const detailsId = `alarm-details-${a.id}`;
    const details = h('div', { class: 'alarm-details', id: detailsId, hidden: !open },
      a.note ? h('p', { class: 'note' }, a.note) : null,
      h('p', { class: 'schedule' }, scheduleInWords(a.schedule, a.times_of_day)),
      h('ul', { class: 'facts' },
        h('li', { class: 'fact-next' }, h('span', { class: 'fact' }, 'Next'), ' ',
          h('span', { class: 'next-fire' }, a.next_fire_at
            ? [h('time', { datetime: a.next_fire_at }, `${whenIn(a.next_fire_at, zone)} (${zone})`), ` · ${relativeTime(a.next_fire_at)}`,
              sameWallTime(a.next_fire_at, zone, mine) ? null : h('span', { class: 'mine' }, ` — ${whenIn(a.next_fire_at, mine)} your time (${mine})`)]
            : 'No further dates (the schedule has ended)')),
        h('li', {}, h('span', { class: 'fact' }, 'Assigned'), ' ', h('span', {}, assignees)),
        h('li', {}, h('span', { class: 'fact' }, 'Rule'), ' ', h('span', {}, ruleText)),
        h('li', { class: 'fact-lead' }, h('span', { class: 'fact' }, 'Answers open'), ' ', h('span', {}, lead ? `${lead} before its time` : 'at its time')),
        paused ? h('li', { class: 'fact-paused' }, h('span', { class: 'fact' }, 'Paused'), ' ', h('span', {}, `until ${whenIn(a.paused_until, mine)}: nothing rings or is due before then`)) : null,
        a.last_completed_at ? h('li', {}, h('span', { class: 'fact' }, 'Last done'), ' ', h('span', {}, shortWhen(a.last_completed_at))) : null),
      progress,
      previous,
      answerPart,
      this.canManage ? this.controlsPart(a, off, paused) : null,
      this.attachments.part(this.alarmOwner(a)),
      h('div', { class: 'card-foot' }, tools.length ? h('div', { class: 'actions tools' }, tools) : null, history));
    const toggle = h('button', { type: 'button', class: 'secondary small disclosure', 'data-key': `more-${a.id}`, 'data-local': true,
      'aria-expanded': String(open), 'aria-controls': detailsId, 'aria-label': `Details of “${a.title}”` }, open ? 'Less' : 'Details');
    toggle.addEventListener('click', () => this.toggleCard(a.id, !this.openCards.has(a.id)));

    let status;
    if (off) status = h('span', { class: 'state state-off' }, 'Switched off');
    else if (st) {
      status = [h('span', { class: `state state-${st.state}` }, st.text), h('span', { class: 'count' }, ` · ${answered.size} of ${required.length} answered`),
        paused ? h('span', { class: 'paused' }, ` · paused until ${shortWhen(a.paused_until)}`) : null];
    } else status = h('span', { class: 'state' }, a.next_fire_at ? `Next ${relativeTime(a.next_fire_at)}` : 'No further dates');
    return h('li', { class: `card alarm${open ? ' open' : ''}`, id: `alarm-${a.id}`, dataset: { nextFire: a.next_fire_at || '', state: st ? st.state : 'none' } },
      h('div', { class: 'alarm-row' },
        check,
        h('div', { class: 'alarm-summary' }, h('h3', { class: 'alarm-title' }, alarmBadge(a), a.title), h('p', { class: 'alarm-status' }, status, off ? null : mySay)),
        toggle),
      details);
  }

  /** The owner's and admins' switches on a card (docs/api.md#shared-alarm-controls): pause until the
   *  start of a chosen day in the alarm's zone, or resume now; switch off (two presses) or on again. */
  controlsPart(a, off, paused) {
    const set = (body, what) => this.run(async () => {
      const saved = await this.ctx.api('PATCH', `/v1/groups/${enc(this.groupId)}/alarms/${enc(a.id)}`, body);
      const prev = this.alarms.get(saved.id);
      if (prev && prev.version < saved.version) this.editedBefore.set(saved.id, prev); // the change is still on its way
      this.alarms.set(saved.id, saved);
      this.render([`alarm-${saved.id}`]);
      this.ctx.flash(`${what}: ${saved.title}.`, 'ok');
    });
    if (off) {
      return h('div', { class: 'controls' }, h('p', { class: 'meta' }, 'Switched off: it does not ring, and nothing is due or missed.'),
        h('button', { type: 'button', class: 'secondary small', 'data-key': `enable-${a.id}`, onclick: () => set({ is_enabled: true }, 'Switched on') }, 'Switch on'));
    }
    const off2 = confirmButton(`Switch off “${a.title}”`, 'Switch off', `disable-${a.id}`, () => set({ is_enabled: false }, 'Switched off'));
    if (paused) {
      return h('div', { class: 'controls actions' },
        h('button', { type: 'button', class: 'secondary small', 'data-key': `resume-${a.id}`, onclick: () => set({ paused_until: null }, 'Resumed') }, 'Resume now'), off2);
    }
    const tomorrow = new Date(Date.now() + 86_400_000);
    const min = `${tomorrow.getFullYear()}-${pad2(tomorrow.getMonth() + 1)}-${pad2(tomorrow.getDate())}`;
    const dateId = `pause-date-${a.id}`;
    const date = h('input', { type: 'date', id: dateId, 'data-key': dateId, min, required: true });
    const pause = () => {
      if (!date.value) { this.ctx.flash('Pick the day the alarm starts again.', 'error'); date.focus(); return; }
      set({ paused_until: startOfDayIn(date.value, a.timezone) }, 'Paused');
    };
    return h('div', { class: 'controls' },
      h('div', { class: 'field pause-field' }, h('label', { for: dateId }, `Pause until (the start of that day, ${a.timezone})`), date),
      h('div', { class: 'actions' }, h('button', { type: 'button', class: 'secondary small', 'data-key': `pause-${a.id}`, onclick: pause }, 'Pause'), off2));
  }

  /** Opens or closes an alarm card's details in place (no re-render: focus stays on the button). */
  toggleCard(alarmId, open) {
    if (open) this.openCards.add(alarmId);
    else this.openCards.delete(alarmId);
    const alarm = this.alarms.get(alarmId);
    if (open && alarm) this.attachments.load(this.alarmOwner(alarm)); // once, when the documents did not carry them; the feed keeps them current
    const card = document.getElementById(`alarm-${alarmId}`);
    if (!card) return;
    card.classList.toggle('open', open);
    const details = card.querySelector('.alarm-details');
    if (details) details.hidden = !open;
    const toggle = card.querySelector('button.disclosure');
    if (toggle) { toggle.setAttribute('aria-expanded', String(open)); toggle.textContent = open ? 'Less' : 'Details'; }
  }

  // — attachments (docs/attachments.md, attachments.js): on a shared alarm in its details, on an answer in the activity list —

  /** A shared alarm as an attachments owner: every member may add; the uploader, the owner and admins remove. */
  alarmOwner(a) {
    const meId = this.me && this.me.id;
    return { kind: 'shared_alarm', id: a.id, title: `“${a.title}”`, noun: 'an alarm', fileName: a.title, touch: `alarm-${a.id}`,
      path: `/v1/groups/${enc(this.groupId)}/alarms/${enc(a.id)}/attachments`,
      canUpload: true, canRemove: (x) => x.uploaded_by === meId || this.canManage,
      loadNow: this.openCards.has(a.id) }; // a list is fetched only for open details
  }

  /** An answer as an attachments owner: only the member who answered adds ("a photo of the new filter"). */
  completionOwner(c, alarmTitle) {
    const meId = this.me && this.me.id;
    const who = c.completed_by_uid === meId ? 'your' : `${c.completed_by_name || this.name(c.completed_by_uid)}’s`;
    const title = alarmTitle ? `${who} answer to “${alarmTitle}”` : `${who} answer`;
    return { kind: 'shared_completion', id: c.id, title, noun: 'an answer', fileName: alarmTitle || 'answer', touch: `completion-${c.id}`,
      path: `/v1/groups/${enc(this.groupId)}/completions/${enc(c.id)}/attachments`,
      canUpload: Boolean(meId) && c.completed_by_uid === meId && !this.offline,
      canRemove: (x) => x.uploaded_by === meId || this.canManage };
  }

  /** The latest occurrence before the open one that has answers among the recent completions. */
  previousOccurrence(a) {
    const current = a.occurrence ? a.occurrence.scheduled_at : null;
    const earlier = this.completions.filter((c) => c.shared_alarm_id === a.id && (!current || c.scheduled_at < current));
    if (!earlier.length) return null;
    const at = earlier.reduce((m, c) => (c.scheduled_at > m ? c.scheduled_at : m), earlier[0].scheduled_at);
    const answers = earlier.filter((c) => c.scheduled_at === at).reverse();
    return h('p', { class: 'previous' },
      h('strong', {}, `Previous (${whenIn(at, a.timezone)}): closed`), ' — ',
      answers.map((c) => `${c.completed_by_name || this.name(c.completed_by_uid)} ${c.status === 'completed' ? 'done' : 'skipped'}`).join(', '));
  }

  historyList(alarmId) {
    const items = this.history.get(alarmId);
    if (!items) return h('p', { class: 'meta' }, 'Loading…');
    if (!items.length) return h('p', { class: 'meta' }, 'Nobody has answered yet.');
    return h('ol', { class: 'log' }, items.map((c) => completionLine(c)));
  }

  async loadHistory(alarmId) {
    try {
      const page = await this.ctx.api('GET', `/v1/groups/${enc(this.groupId)}/alarms/${enc(alarmId)}/completions?limit=${HISTORY_PAGE}`);
      this.history.set(alarmId, page.completions);
    } catch (e) {
      this.history.set(alarmId, []);
      this.ctx.flash(e.message, 'error');
    }
    this.render();
  }

  /** The caller's own `notification_enabled` for this group (their member document), as a switch. */
  muteSwitch() {
    const mine = this.me && this.members.get(this.me.id);
    if (!mine) return null;
    const on = mine.notification_enabled !== false;
    const input = h('input', { type: 'checkbox', role: 'switch', id: 'group-notify', 'data-key': 'group-notify', checked: on, 'aria-describedby': 'group-notify-hint' });
    input.addEventListener('change', () => this.setNotifications(input));
    return h('div', { class: 'group-notify' },
      h('div', { class: 'check switch' }, input, h('label', { for: 'group-notify' }, 'Notifications from this group')),
      h('small', { id: 'group-notify-hint', class: 'hint' }, on
        ? 'Your devices get pushes about this group.'
        : 'Muted: no pushes about this group reach your devices. The page still shows everything.'));
  }

  async setNotifications(input) {
    input.disabled = true;
    try {
      const doc = await this.ctx.api('PATCH', `/v1/groups/${enc(this.groupId)}/membership`, { notification_enabled: input.checked });
      this.members.set(doc.user_id, doc);
    } catch (e) {
      this.ctx.flash(e.message, 'error');
    }
    this.render(['group-head']);
  }

  membersSection() {
    const meId = this.me && this.me.id;
    const role = this.myRole;
    const members = [...this.members.values()].sort((a, b) => ROLE_RANK[b.role] - ROLE_RANK[a.role] || a.display_name.localeCompare(b.display_name));
    return h('section', { 'aria-labelledby': 'members-h' },
      h('h2', { id: 'members-h' }, h('span', { id: 'members-head' }, `Members (${members.length})`)),
      h('ul', { class: 'members' }, members.map((m) => {
        const self = m.user_id === meId;
        const tools = [];
        if (role === 'owner' && !self) {
          const roleSelect = h('select', { 'data-key': `role-${m.user_id}`, 'aria-label': `Role of ${m.display_name}` },
            h('option', { value: 'member', selected: m.role === 'member' }, 'member'),
            h('option', { value: 'admin', selected: m.role === 'admin' }, 'admin'));
          roleSelect.addEventListener('change', () => this.setRole(m, roleSelect.value));
          tools.push(roleSelect,
            confirmButton(`Make ${m.display_name} the owner (you become an admin)`, 'Make owner', `owner-${m.user_id}`, () => this.transfer(m)));
        }
        if (!self && (role === 'owner' || (role === 'admin' && m.role === 'member'))) {
          tools.push(confirmButton(`Remove ${m.display_name}`, 'Remove', `remove-${m.user_id}`, () => this.removeMember(m)));
        }
        return h('li', { id: `member-${m.user_id}`, class: 'member' },
          avatar(m),
          h('span', { class: 'name' }, this.presence.has(m.user_id) ? h('span', { class: 'online', title: 'online now' }, '● ') : null,
            self ? `${m.display_name} (you)` : m.display_name),
          ' ', h('span', { class: `role role-${m.role}` }, m.role),
          tools.length ? h('span', { class: 'actions' }, tools) : null);
      })));
  }

  /** Answers (from the snapshot and live) and, since the page opened, every other event in words; newest first. */
  /** The activity lines, newest first: recent answers (the snapshot's and live), and events — live,
   *  and from the history. */
  activityItems() {
    return [
      ...this.completions.map((c) => ({ at: c.completed_at, line: () => {
        const alarm = this.alarms.get(c.shared_alarm_id);
        return completionLine(c, alarm ? alarm.title : null, this.attachments.part(this.completionOwner(c, alarm ? alarm.title : null), { compact: true }));
      } })),
      ...[...this.events, ...this.past.lines].map((e) => ({ at: e.at, line: () => h('li', { class: e.past ? 'event past' : 'event' }, e.text, ' ',
        h('span', { class: 'meta' }, '· ', h('time', { datetime: e.at, title: shortWhen(e.at) }, relativeTime(e.at) === 'now' ? 'just now' : relativeTime(e.at)))) })),
    ].sort((x, y) => y.at.localeCompare(x.at));
  }

  activitySection() {
    const all = this.activityItems();
    const items = all.slice(0, this.past.shown);
    const more = all.length > items.length || Boolean(this.past.next);
    return h('section', { 'aria-labelledby': 'activity-h' },
      h('h2', { id: 'activity-h' }, 'Recent activity'),
      items.length ? h('ol', { class: 'log', id: 'activity' }, items.map((x) => x.line()))
        : h('p', { class: 'empty' }, this.past.loading ? 'Loading…' : 'Nothing yet.'),
      more ? h('p', {}, h('button', { type: 'button', class: 'secondary small', id: 'activity-more', 'data-key': 'activity-more',
        disabled: this.past.loading, onclick: () => this.showEarlierActivity() }, 'Show earlier activity')) : null);
  }

  leaveSection() {
    if (this.myRole === 'owner') {
      return h('section', { 'aria-labelledby': 'danger-h', class: 'danger' },
        h('h2', { id: 'danger-h' }, 'Group'),
        h('p', { class: 'hint' }, 'To leave, first make someone else the owner.'),
        confirmButton(`Delete the group “${this.group.name}” for everyone`, 'Delete group', 'delete-group', () => this.deleteGroup()));
    }
    return h('section', { 'aria-labelledby': 'danger-h', class: 'danger' },
      h('h2', { id: 'danger-h' }, 'Group'),
      confirmButton(`Leave “${this.group.name}”`, 'Leave group', 'leave-group', () => this.removeMember(this.members.get(this.me.id))));
  }

  // — invite code and invitations (owner/admin) —

  renderInvite() {
    const isOwner = this.myRole === 'owner';
    const secret = this.shownSecret
      ? h('div', { class: 'secret', role: 'status' },
        h('p', {}, this.shownSecret.label),
        field('Link to share', h('input', { type: 'text', readonly: true, value: this.shownSecret.url, id: 'share-link', 'data-key': 'share-link' }),
          'Shown only now. Anyone with the link can use it until it expires.'),
        h('div', { class: 'actions' },
          h('button', { type: 'button', id: 'copy-link', 'data-key': 'copy-link', onclick: (e) => copyText(this.shownSecret.url, e.target) }, 'Copy link')))
      : null;
    const email = h('input', { type: 'email', 'data-key': 'invite-email' });
    const role = h('select', { 'data-key': 'invite-role' }, h('option', { value: 'member' }, 'member'), isOwner ? h('option', { value: 'admin' }, 'admin') : null);
    const invForm = h('form', { class: 'stack', 'aria-labelledby': 'invite-form-h' },
      h('h3', { id: 'invite-form-h' }, 'Invite someone'),
      field('Their email (leave empty for a one-use link)', email), field('Role', role),
      h('button', { type: 'submit', 'data-key': 'invite-submit' }, 'Create invitation'));
    invForm.addEventListener('submit', (event) => { event.preventDefault(); this.createInvitation(email.value.trim(), role.value); });

    const invitations = this.invitations === null ? h('p', { class: 'meta' }, 'Loading invitations…')
      : h('ul', { class: 'invitations' }, this.invitations.filter((i) => i.status === 'pending').map((i) => h('li', { id: `invitation-${i.id}` },
        i.invitee_email ? `${i.invitee_email}` : 'Link invitation', ` · ${i.role} · expires ${shortWhen(i.expires_at)} `,
        h('button', { type: 'button', class: 'secondary small', 'data-key': `revoke-${i.id}`, onclick: () => this.revokeInvitation(i) }, 'Revoke'))));

    // Folded away unless asked for: open at first on a group of one (inviting is what comes next),
    // folded on a group that has people; whatever the owner chose stays; a new secret opens it.
    if (this.inviteOpen === undefined) this.inviteOpen = this.members.size <= 1;
    if (this.shownSecret) this.inviteOpen = true;
    const pending = (this.invitations || []).filter((i) => i.status === 'pending').length;
    const panel = h('details', { class: 'card invite-panel', id: 'invite-panel', open: this.inviteOpen },
      h('summary', {}, h('span', { class: 'summary-title' }, 'Invite people'),
        pending ? h('span', { class: 'meta' }, ` · ${pending} pending invitation${pending === 1 ? '' : 's'}`) : null),
      h('div', { id: 'invite-code' },
        h('h3', {}, 'Invite code'),
        h('p', { class: 'hint' }, 'A 6-character code anyone can use for 7 days. Creating a new one replaces the old one at once.'),
        h('div', { class: 'actions' },
          h('button', { type: 'button', id: 'rotate-code', 'data-key': 'rotate-code', onclick: () => this.rotateCode() }, 'New invite code'),
          confirmButton('Disable the invite code', 'Disable code', 'disable-code', () => this.disableCode()))),
      secret,
      invForm,
      h('h3', {}, 'Pending invitations'),
      this.invitations && !this.invitations.some((i) => i.status === 'pending') ? h('p', { class: 'meta', id: 'no-invitations' }, 'None.') : invitations);
    panel.addEventListener('toggle', () => { this.inviteOpen = panel.open; });
    replace(this.inviteSlot, h('section', { 'aria-label': 'Invite people' }, panel));
  }

  async loadInvitations() {
    this.loadingInvitations = true;
    try {
      const page = await this.ctx.api('GET', `/v1/groups/${enc(this.groupId)}/invitations?limit=100`);
      this.invitations = page.invitations;
      // A one-use link that was used (or revoked) is no use to show any more.
      const shown = this.shownSecret && this.shownSecret.invitationId;
      if (shown && !this.invitations.some((i) => i.id === shown && i.status === 'pending')) {
        const used = this.invitations.find((i) => i.id === shown);
        this.shownSecret = null;
        if (used && used.status === 'accepted') this.ctx.flash('Your one-use invitation link was used: they are in the group now.', 'ok');
      }
    } catch {
      this.invitations = [];
    } finally {
      this.loadingInvitations = false;
    }
    this.render();
  }

  async rotateCode() {
    await this.run(async () => {
      const r = await this.ctx.api('POST', `/v1/groups/${enc(this.groupId)}/invite-code`);
      this.shownSecret = { label: `New invite code: ${r.code} (valid until ${shortWhen(r.expires_at)}).`, url: r.join_url, code: r.code };
      this.render(['invite-code']);
      const input = document.getElementById('share-link');
      if (input) input.focus();
    });
  }

  async disableCode() {
    await this.run(async () => {
      await this.ctx.api('DELETE', `/v1/groups/${enc(this.groupId)}/invite-code`);
      this.shownSecret = null;
      this.ctx.flash('The invite code is disabled.', 'ok');
      this.render();
    });
  }

  async createInvitation(email, role) {
    await this.run(async () => {
      const body = { role };
      if (email) body.invitee_email = email;
      const r = await this.ctx.api('POST', `/v1/groups/${enc(this.groupId)}/invitations`, body);
      if (r.invite_url) this.shownSecret = { label: 'One-use invitation link created.', url: r.invite_url, invitationId: r.invitation.id };
      else this.ctx.flash(`Invitation sent to ${r.invitation.invitee_email}. They will see it when they sign in.`, 'ok');
      await this.loadInvitations();
    });
  }

  async revokeInvitation(i) {
    await this.run(async () => {
      await this.ctx.api('DELETE', `/v1/invitations/${enc(i.id)}`);
      if (this.shownSecret && this.shownSecret.invitationId === i.id) this.shownSecret = null;
      await this.loadInvitations();
    });
  }

  // — actions —

  async run(fn) {
    try { await fn(); } catch (e) { this.ctx.flash(e.message, 'error'); }
  }

  edit(which) {
    this.editing = which;
    if (which === null) { replace(this.formSlot); this.render(); return; }
    const alarm = which === 'new' ? null : this.alarms.get(which);
    const form = alarmForm({
      alarm,
      members: [...this.members.values()],
      zone: this.me && this.me.timezone,
      onCancel: () => this.edit(null),
      onSave: async (body) => {
        const base = `/v1/groups/${enc(this.groupId)}/alarms`;
        let saved;
        if (alarm) {
          try {
            saved = await this.ctx.api('PATCH', `${base}/${enc(alarm.id)}`, { ...body, version: this.alarms.get(alarm.id).version });
          } catch (e) {
            if (e.code === 'CA010') throw new Error('Someone changed this alarm meanwhile. Cancel and edit again to see their version.');
            throw e;
          }
        } else {
          saved = await this.ctx.api('POST', base, body);
        }
        this.alarms.set(saved.id, saved);
        this.edit(null);
        flashChanged(document.getElementById(`alarm-${saved.id}`));
      },
    });
    replace(this.formSlot, form);
    this.render();
    form.querySelector('input').focus();
  }

  /** The group's own settings (owner, admin): name, description, colour and icon; a form in a slot
   *  that re-renders leave alone, saved with the group's version. */
  editGroup(open) {
    this.editingGroup = open;
    if (!open) { replace(this.groupFormSlot); this.render(); return; }
    const g = this.group;
    const name = h('input', { type: 'text', name: 'name', required: true, maxlength: 100, value: g.name });
    const description = h('textarea', { name: 'description', maxlength: 500, rows: 2 }, g.description || '');
    const color = h('input', { type: 'color', name: 'color_tag', value: (g.color_tag || '#0B57D0').toLowerCase() });
    const noColor = h('input', { type: 'checkbox', id: 'group-no-color', checked: !g.color_tag });
    color.addEventListener('input', () => { noColor.checked = false; }); // choosing a colour means one
    const icon = h('select', { name: 'icon_name' }, h('option', { value: '' }, 'None'),
      Object.entries(GROUP_ICONS).map(([v, [emoji, label]]) => h('option', { value: v, selected: g.icon_name === v }, `${emoji} ${label}`)));
    const error = h('p', { class: 'error', role: 'alert' });
    const form = h('form', { class: 'card stack', id: 'group-form', 'aria-labelledby': 'group-form-h' },
      h('h2', { id: 'group-form-h' }, 'Group settings'),
      field('Name', name), field('Description (optional)', description),
      h('div', { class: 'row' }, field('Colour', color), h('span', { class: 'check' }, noColor, h('label', { for: 'group-no-color' }, 'No colour')), field('Icon', icon)),
      error,
      h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Save group'),
        h('button', { type: 'button', class: 'secondary', onclick: () => { this.editGroup(false); const b = document.getElementById('edit-group'); if (b) b.focus(); } }, 'Cancel')));
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      error.textContent = '';
      try {
        const doc = await this.ctx.api('PATCH', `/v1/groups/${enc(this.groupId)}`, {
          name: name.value, description: description.value.trim() ? description.value : null,
          color_tag: noColor.checked ? null : color.value.toUpperCase(), icon_name: icon.value || null, version: this.group.version,
        });
        this.group = { ...doc, member_count: doc.member_count || this.group.member_count };
        this.ctx.flash('The group is saved.', 'ok');
        this.editGroup(false);
        flashChanged(document.getElementById('group-head'));
      } catch (e) {
        if (e.code === 'CA010' && e.current) { this.group = e.current; error.textContent = 'Someone changed the group meanwhile: check the name and description and save again.'; return; }
        error.textContent = e.message;
      }
    });
    replace(this.groupFormSlot, form);
    this.render();
    name.focus();
  }

  async answer(alarm, status, noteInput, button) {
    if (button) button.disabled = true;
    if (this.ctx.isOffline && this.ctx.isOffline()) { this.queueAnswer(alarm, status, noteInput); return; }
    try {
      const r = await postCompletion(this.ctx.api, this.groupId, alarm, status, noteInput.value);
      noteInput.value = '';
      this.alarms.set(r.alarm.id, r.alarm);
      if (!this.completions.some((x) => x.id === r.completion.id)) this.completions.unshift(r.completion);
      this.attachments.fromDocument('shared_completion', { ...r.completion, attachments: r.completion.attachments || [] });
      const hist = this.history.get(alarm.id);
      if (hist && !hist.some((x) => x.id === r.completion.id)) hist.unshift(r.completion);
      this.render([`alarm-${alarm.id}`]);
    } catch (e) {
      if (e.status === 0 && this.ctx.outbox) { this.queueAnswer(alarm, status, noteInput); return; } // never reached the server
      if (e.code === 'CA033' && e.current) { this.alarms.set(e.current.id, e.current); this.render([`alarm-${alarm.id}`]); }
      this.ctx.flash(answerErrorText(e), 'error');
      if (button) button.disabled = false;
    }
  }

  /** Keeps an answer that cannot be sent now in the outbox (outbox.js): it names the occurrence, so
   *  sending it later answers this one or is refused. The card shows it waiting. */
  queueAnswer(alarm, status, noteInput) {
    const entry = queuedAnswer(this.groupId, alarm, status, noteInput.value);
    const label = entry.label;
    const kept = this.ctx.outbox.add(entry);
    if (!kept) { this.ctx.flash('Too many actions are waiting to be sent: try again when the connection is back.', 'error'); this.render(); return; }
    noteInput.value = '';
    delete noteInput.dataset.touched;
    this.ctx.flash(`You are offline. ${label} is kept on this device and will be sent when the connection is back.`, 'warn');
    this.render([`alarm-${alarm.id}`]);
  }

  async deleteAlarm(a) {
    await this.run(async () => {
      await this.ctx.api('DELETE', `/v1/groups/${enc(this.groupId)}/alarms/${enc(a.id)}`);
      this.alarms.delete(a.id);
      this.render();
    });
  }

  async setRole(m, role) {
    await this.run(async () => {
      const doc = await this.ctx.api('PATCH', `/v1/groups/${enc(this.groupId)}/members/${enc(m.user_id)}`, { role });
      this.members.set(doc.user_id, doc);
      this.render([`member-${doc.user_id}`]);
    });
  }

  async transfer(m) {
    await this.run(async () => {
      const r = await this.ctx.api('POST', `/v1/groups/${enc(this.groupId)}/transfer`, { user_id: m.user_id });
      this.group = r.group;
      this.members = new Map(r.members.map((x) => [x.user_id, x]));
      this.ctx.flash(`${m.display_name} is now the owner.`, 'ok');
      this.render(['members-head']);
    });
  }

  async removeMember(m) {
    const self = m.user_id === this.me.id;
    await this.run(async () => {
      await this.ctx.api('DELETE', `/v1/groups/${enc(this.groupId)}/members/${enc(m.user_id)}`);
      if (self) { this.leavePage(`You left ${this.group.name}.`); return; }
      this.members.delete(m.user_id);
      this.render(['members-head']);
    });
  }

  async deleteGroup() {
    await this.run(async () => {
      await this.ctx.api('DELETE', `/v1/groups/${enc(this.groupId)}`);
      this.leavePage(`The group ${this.group.name} is deleted.`);
    });
  }
}

/** A Blob as a data: URL (the page's CSP allows images from 'self' and data: only). */
/** Group icons: the phone apps' symbol names, shown here as emoji. */
/** What the viewer `meId` can do with the alarm's open occurrence: 'answer' (pending, answers are open),
 *  'opens-later' (pending, before `answerable_from`: the lead window or a pause), or null. The group
 *  page and My tasks (tasks.js). */
export function myAnswer(alarm, meId) {
  const occ = alarm.occurrence;
  if (!occ || occ.status !== 'open' || !meId || !(occ.pending_uids || []).includes(meId)) return null;
  return alarm.answerable_from && Date.parse(alarm.answerable_from) > Date.now() ? 'opens-later' : 'answer';
}

/** Answers the alarm's open occurrence (`status` completed or skipped): `{completion, alarm}`. */
export function postCompletion(api, groupId, alarm, status, note = '') {
  const body = { status, scheduled_at: alarm.occurrence.scheduled_at };
  if (note && note.trim()) body.note = note.trim();
  return api('POST', `/v1/groups/${enc(groupId)}/alarms/${enc(alarm.id)}/completions`, body);
}

/** The outbox entry (outbox.js) for an answer sent later: the same request as `postCompletion`, keyed by
 *  the alarm so its card (group page, My tasks) shows it waiting. */
export function queuedAnswer(groupId, alarm, status, note = '') {
  const body = { status, scheduled_at: alarm.occurrence.scheduled_at };
  if (note && note.trim()) body.note = note.trim();
  return { key: `alarm-${alarm.id}`, label: `${status === 'completed' ? 'Marked done' : 'Skipped'}: ${alarm.title}`,
    method: 'POST', path: `/v1/groups/${enc(groupId)}/alarms/${enc(alarm.id)}/completions`, body };
}

/** A refused answer in words (CA033: the occurrence closed meanwhile). */
export function answerErrorText(e) {
  return e.code === 'CA033' ? 'That occurrence has already closed; the alarm shows the current one.' : e.message;
}

/** A member's initials in a coloured circle (decoration beside the name; the colour follows the id). */
function avatar(m) {
  const words = String(m.display_name || '?').trim().split(/\s+/).filter(Boolean);
  const initials = (words.length > 1 ? words[0][0] + words[words.length - 1][0] : (words[0] || '?').slice(0, 2)).toUpperCase();
  let hash = 0;
  for (const ch of String(m.user_id)) hash = (hash * 31 + ch.charCodeAt(0)) >>> 0;
  return h('span', { class: `avatar avatar-${hash % 6}`, 'aria-hidden': 'true' }, initials);
}

/** How long an armed confirm button waits for its second press. */
const ARMED_MS = 10000;
/** Armed confirm buttons by data-key → disarm timer: a live re-render draws them armed again. */
const armed = new Map();

/** A button that asks once more before acting: first press arms it, the second acts. Its armed state
 *  lives outside the element, so a re-render in between keeps it. */
export function confirmButton(label, text, key, action) {
  const button = h('button', { type: 'button', class: 'secondary small danger-button', 'data-key': key, 'aria-label': label }, text);
  const show = (on) => {
    button.textContent = on ? `Confirm: ${text.toLowerCase()}` : text;
    button.setAttribute('aria-label', on ? `Confirm: ${label}` : label);
    button.classList.toggle('armed', on);
  };
  show(armed.has(key));
  button.addEventListener('click', () => {
    if (!armed.has(key)) {
      armed.set(key, setTimeout(() => {
        armed.delete(key);
        for (const el of document.querySelectorAll(`[data-key="${CSS.escape(key)}"].armed`)) {
          el.classList.remove('armed');
          el.textContent = text;
          el.setAttribute('aria-label', label);
        }
      }, ARMED_MS));
      show(true);
      return;
    }
    clearTimeout(armed.get(key));
    armed.delete(key);
    button.disabled = true;
    action();
  });
  return button;
}

/** One answer as a list item; `extra` (its photos, in the activity list) after the words. */
function completionLine(c, alarmTitle, extra = null) {
  return h('li', { id: alarmTitle === undefined ? null : `completion-${c.id}`, class: `status-${c.status}` },
    h('strong', {}, c.completed_by_name || 'Someone'), ' ',
    c.status === 'completed' ? 'did' : 'skipped', ' ',
    alarmTitle ? `“${alarmTitle}” ` : '',
    h('span', { class: 'meta' }, `· due ${shortWhen(c.scheduled_at)} · answered `,
      h('time', { datetime: c.completed_at, title: shortWhen(c.completed_at) }, relativeTime(c.completed_at) === 'now' ? 'just now' : relativeTime(c.completed_at))),
    c.note ? h('span', { class: 'note' }, ` — “${c.note}”`) : null,
    extra);
}

async function copyText(text, button) {
  let ok = false;
  try { await navigator.clipboard.writeText(text); ok = true; } catch {
    const input = document.getElementById('share-link');
    if (input) { input.select(); ok = document.execCommand('copy'); }
  }
  const old = button.textContent;
  button.textContent = ok ? 'Copied' : 'Select the link and copy it';
  setTimeout(() => { button.textContent = old; }, 2000);
}
