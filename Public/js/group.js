// The group page: shared alarms with their open occurrence, members and roles, invite code and
// invitations, recent activity. Kept current by the `group:<id>` topic; what changed is highlighted.
// This module owns the page's lifecycle, its data (the group, members, alarms, recent answers) and the
// feed that keeps them current, the header (group settings, the mute switch) and re-rendering; each
// section is a view in its own module (group-alarms.js, group-members.js, group-invites.js,
// group-activity.js) that gets this page and never imports it (docs/web-client.md#modules).

import { enc } from './api.js';
import { Attachments } from './attachments.js';
import { h, replace, field, flashChanged, pauseForOffline, GROUP_ICONS, groupBadge } from './dom.js';
import { AlarmsView } from './group-alarms.js';
import { MembersView } from './group-members.js';
import { InvitesView } from './group-invites.js';
import { ActivityView } from './group-activity.js';

/** Recent answers kept (the snapshot's and live; the oldest go). */
const RECENT_LIMIT = 50;

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
    this.presence = new Set();
    this.closed = false;
    // Persistent part: re-rendering the rest never loses what someone is typing here.
    this.groupFormSlot = h('div', { id: 'group-form-slot' });
    this.alarmsView = new AlarmsView(this);
    this.membersView = new MembersView(this);
    this.invitesView = new InvitesView(this);
    this.activityView = new ActivityView(this);
  }

  get me() { return this.ctx.me(); }
  /** Whether the connection is down (app.js): answers are queued, nothing else is fetched. */
  get offline() { return Boolean(this.ctx.isOffline && this.ctx.isOffline()); }

  /** Draws again with the same data (the viewer's clock or zone changed). */
  rerender() { this.render(); }
  /** The signed-in user changed (the `user` feed): a new tier changes what is offered (uploads). */
  userChanged() { this.render(); }
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
    this.activityView.restart(msg.seq, first);
    this.render();
    if (first) {
      const heading = this.ctx.main.querySelector('h1');
      heading.tabIndex = -1;
      heading.focus({ preventScroll: true }); // Back restores the scroll position (app.js)
      // Opened from a notification about one alarm (/groups/<id>#alarm-<id>): show that alarm.
      const target = location.hash.startsWith('#alarm-') && document.getElementById(decodeURIComponent(location.hash.slice(1)));
      if (target) this.alarmsView.toggleCard(target.id.slice('alarm-'.length), true);
      if (target) { target.scrollIntoView({ block: 'start' }); flashChanged(target); }
    }
    document.title = `${this.group.name} · Chronir`;
  }

  change(msg) {
    this.activityView.live(msg); // in words before it is applied: the names are still known
    for (const c of msg.changes) if (c.kind === 'shared_alarm') this.editedBefore.delete(c.id);
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
            this.alarmsView.addAnswer(c.doc);
            touched.push(`completion-${c.doc.id}`, `alarm-${c.doc.shared_alarm_id}`);
          } else if (c.doc) { // taken back (withdrawn_at) or anonymised: the same answer, as it stands now
            this.completions = this.completions.map((x) => (x.id === c.doc.id ? { ...x, ...c.doc } : x));
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
    if (msg.event && msg.event.startsWith('invitation') && this.canManage) this.invitesView.load();
    this.render(touched);
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
      this.alarmsView.section(),
      this.membersView.section(),
      this.invitesView.section(this.canManage),
      this.activityView.section(),
      this.membersView.leaveSection());

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

  /** Runs an action; a refusal is flashed in words. */
  async run(fn) {
    try { await fn(); } catch (e) { this.ctx.flash(e.message, 'error'); }
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

  async deleteGroup() {
    await this.run(async () => {
      await this.ctx.api('DELETE', `/v1/groups/${enc(this.groupId)}`);
      this.leavePage(`The group ${this.group.name} is deleted.`);
    });
  }
}
