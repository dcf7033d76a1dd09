// The group page's activity section (group.js owns the page and its data): recent answers with their
// photos, and every other event in words — what happened while the page was open (live change batches)
// and before (GET …/activity, since I joined, paged). Never imports group.js.

import { enc } from './api.js';
import { h } from './dom.js';
import { completionLine } from './answers.js';
import { isFree } from './errors.js';
import { shortWhen, relativeTime } from './schedule.js';

/** Live event lines kept (the oldest go). */
const RECENT_LIMIT = 50;
/** Activity lines shown at first, and added by each "Show earlier activity". */
const ACTIVITY_SHOWN = 15;
/** Events asked for per page of GET …/activity. */
const ACTIVITY_PAGE = 50;
/** History events told with who did them (`byWhom`). */
const BY_WHOM_EVENTS = new Set(['group_updated', 'shared_alarm_created', 'shared_alarm_updated', 'shared_alarm_deleted', 'member_removed', 'role_changed']);

export class ActivityView {
  /** `page`: the GroupPage (its ctx, groupId, me, members, alarms, completions, group, editedBefore,
   *  attachments, offline, closed, canManage, name, render). */
  constructor(page) {
    this.page = page;
    this.events = []; // what happened while the page was open, in words: {at, text}
    // What happened before, from GET …/activity (since I joined): raw events newest first, up to the
    // snapshot's seq (later ones arrive live), the next page's cursor, and how many activity lines show.
    this.past = { raw: [], lines: [], next: null, bound: 0, loading: false, shown: ACTIVITY_SHOWN };
  }

  /** A snapshot arrived: the history up to its `seq` comes from the server, what follows arrives live
   *  (a reset snapshot starts both again: what was missed meanwhile is in the history). */
  restart(seq, first) {
    this.events = [];
    this.past = { raw: [], lines: [], next: null, bound: seq || 0, loading: false, shown: first ? ACTIVITY_SHOWN : this.past.shown };
    this.load();
  }

  /** A live change batch, told in words before the page applies it (the names are still known). */
  live(msg) {
    const said = this.describe(msg);
    if (!said) return;
    this.events.unshift({ at: new Date().toISOString(), text: said });
    this.events.length = Math.min(this.events.length, RECENT_LIMIT);
  }

  /** A change batch in plain words for the activity feed (before it is applied: the names are still
   *  known), or null. `past` tells a batch from the history: the group's name before it (null: not
   *  known) and each alarm as the older batches left it. */
  describe(msg, past = null) {
    const p = this.page;
    const of = (kind) => msg.changes.find((c) => c.kind === kind);
    const member = of('member');
    const who = member ? (member.doc && member.doc.display_name) || p.name(member.doc ? member.doc.user_id : String(member.id).split(':').pop()) : 'Someone';
    const alarm = of('shared_alarm');
    // The alarm as it was before this batch: the page's own copy (live), or the history's (past).
    const before = alarm ? (past ? past.alarms.get(alarm.id) : p.editedBefore.get(alarm.id) || p.alarms.get(alarm.id)) : null;
    const title = alarm ? `“${(alarm.doc && alarm.doc.title) || (before && before.title) || 'an alarm'}”` : 'an alarm';
    const nameBefore = past ? past.name : p.group && p.group.name;
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
   *  archived or taken out of the archive, else edited. `before` is the alarm before it, when known. */
  alarmEdit(doc, before) {
    if (!doc) return 'was edited';
    if (before && doc.archived_at && !before.archived_at) return 'was archived';
    if (before && !doc.archived_at && before.archived_at) return 'was taken out of the archive';
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
  async load() {
    const p = this.page;
    const past = this.past;
    if (past.loading || p.offline) return;
    past.loading = true;
    try {
      const q = new URLSearchParams({ limit: String(ACTIVITY_PAGE) });
      if (past.next) q.set('before', String(past.next));
      const page = await p.ctx.api('GET', `/v1/groups/${enc(p.groupId)}/activity?${q}`);
      if (p.closed || past !== this.past) return;
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
      if (!p.closed && past === this.past) p.ctx.flash(`The group's earlier activity could not be loaded: ${e.message}`, 'error');
    } finally {
      past.loading = false;
    }
    if (!p.closed && past === this.past) p.render(['activity']);
  }

  /** Who did a past event, as " by Ana" — for the events whose words name what changed, not who did
   *  it (an alarm or the group edited, a member removed or given a role); "" when the actor is not a
   *  current member (an operator, the server, someone who has left). `actor` is the change log's
   *  (`user:<id>`, `admin`, …); live changes carry none. */
  byWhom(e) {
    const p = this.page;
    if (!BY_WHOM_EVENTS.has(e.event) || !e.actor || !e.actor.startsWith('user:')) return '';
    const userId = e.actor.slice('user:'.length);
    if (p.me && userId === p.me.id) return ' by you';
    const m = p.members.get(userId);
    return m ? ` by ${m.display_name}` : '';
  }

  /** "Show earlier activity": more lines; when the loaded ones run out, the next page first. */
  async showEarlier() {
    const p = this.page;
    this.past.shown += ACTIVITY_SHOWN;
    if (this.items().length < this.past.shown && this.past.next) await this.load();
    else p.render(['activity']);
  }

  /** The activity lines, newest first: recent answers (the snapshot's and live), and events — live,
   *  and from the history. */
  items() {
    const p = this.page;
    return [
      ...p.completions.map((c) => ({ at: c.completed_at, line: () => {
        const alarm = p.alarms.get(c.shared_alarm_id);
        return completionLine(c, alarm ? alarm.title : null, p.attachments.part(this.completionOwner(c, alarm ? alarm.title : null), { compact: true }));
      } })),
      ...[...this.events, ...this.past.lines].map((e) => ({ at: e.at, line: () => h('li', { class: e.past ? 'event past' : 'event' }, e.text, ' ',
        h('span', { class: 'meta' }, '· ', h('time', { datetime: e.at, title: shortWhen(e.at) }, relativeTime(e.at) === 'now' ? 'just now' : relativeTime(e.at)))) })),
    ].sort((x, y) => y.at.localeCompare(x.at));
  }

  section() {
    const all = this.items();
    const items = all.slice(0, this.past.shown);
    const more = all.length > items.length || Boolean(this.past.next);
    return h('section', { 'aria-labelledby': 'activity-h' },
      h('h2', { id: 'activity-h' }, 'Recent activity'),
      items.length ? h('ol', { class: 'log', id: 'activity' }, items.map((x) => x.line()))
        : h('p', { class: 'empty' }, this.past.loading ? 'Loading…' : 'Nothing yet.'),
      more ? h('p', {}, h('button', { type: 'button', class: 'secondary small', id: 'activity-more', 'data-key': 'activity-more',
        disabled: this.past.loading, onclick: () => this.showEarlier() }, 'Show earlier activity')) : null);
  }

  /** An answer as an attachments owner (docs/attachments.md): only the member who answered adds ("a photo of the new filter"). */
  completionOwner(c, alarmTitle) {
    const p = this.page;
    const meId = p.me && p.me.id;
    const who = c.completed_by_uid === meId ? 'your' : `${c.completed_by_name || p.name(c.completed_by_uid)}’s`;
    const title = alarmTitle ? `${who} answer to “${alarmTitle}”` : `${who} answer`;
    return { kind: 'shared_completion', id: c.id, title, noun: 'an answer', fileName: alarmTitle || 'answer', touch: `completion-${c.id}`,
      path: `/v1/groups/${enc(p.groupId)}/completions/${enc(c.id)}/attachments`,
      canUpload: Boolean(meId) && c.completed_by_uid === meId && !p.offline && !isFree(p.me),
      canRemove: (x) => x.uploaded_by === meId || p.canManage };
  }
}
