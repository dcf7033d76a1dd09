// /alarms: my personal alarms (docs/personal-sync.md): the list from GET /v1/me/alarms, created with
// PUT /v1/me/alarms/{uuid} (the client names the id), edited with PATCH (with `version`), deleted with
// DELETE. The shared alarm form (alarmform.js) in its personal variant. Writing needs Plus or Premium
// (403 CA002 for free accounts, which still read). Other devices' writes arrive on the `user` feed as
// `personal_alarm` changes (app.js hands them to alarmChanged). Photos and files on each alarm
// (attachments.js; its owner alone sees them), kept live by the feed's `attachment` changes.

import { enc } from './api.js';
import { Attachments } from './attachments.js';
import { h, replace, flashChanged, syncSwitch, alarmBadge, confirmButton } from './dom.js';
import { alarmForm } from './alarmform.js';
import { tierText, isFree } from './errors.js';
import { scheduleInWords, whenIn, relativeTime } from './schedule.js';

const TIER_TEXT = `${tierText('Personal alarms kept in your account need')} Your groups’ shared alarms work on every account.`;

/** Builds the page in ctx.main; returns the page object app.js keeps as state.page. */
export function myAlarmsPage(ctx) {
  const alarms = new Map();
  const formSlot = h('div', { id: 'personal-form-slot' });
  const list = h('ul', { class: 'cards', id: 'personal-list', 'aria-live': 'polite' }, h('li', { class: 'meta' }, 'Loading…'));
  const notice = h('p', { class: 'notice', role: 'alert', id: 'tier-notice' });
  const newButton = h('button', { type: 'button', id: 'new-personal' }, 'New alarm');
  const page = { kind: 'alarms', editing: null };

  const base = '/v1/me/alarms';
  const attachments = new Attachments({
    api: (method, path) => ctx.api(method, path),
    flash: (text, kind) => ctx.flash(text, kind),
    name: () => 'you', // a personal alarm's attachments are its account's alone
    offline: () => Boolean(ctx.isOffline && ctx.isOffline()),
    render: (touched) => { draw(); for (const id of touched) flashChanged(document.getElementById(id)); },
  });
  /** A personal alarm as an attachments owner: its account adds and removes (the server checks the tier). */
  const owner = (a) => ({ kind: 'personal_alarm', id: a.id, title: `“${a.title}”`, noun: 'an alarm', fileName: a.title,
    touch: `personal-${a.id}`, path: `${base}/${enc(a.id)}/attachments`, canUpload: !isFree(ctx.me()), needsTier: isFree(ctx.me()), canRemove: () => true });
  const failed = (e) => {
    if (e.code === 'CA002') { notice.textContent = TIER_TEXT; return new Error(TIER_TEXT); }
    if (e.code === 'CA010') return new Error('This alarm was changed on another device meanwhile. Cancel and edit again to see that version.');
    return e;
  };

  function edit(which) {
    page.editing = which;
    newButton.hidden = which !== null;
    if (which === null) { replace(formSlot); return; }
    const alarm = which === 'new' ? null : alarms.get(which);
    const form = alarmForm({
      alarm,
      personal: true,
      zone: ctx.me() && ctx.me().timezone,
      onCancel: () => { edit(null); newButton.focus(); },
      onSave: async (body) => {
        let saved;
        try {
          saved = alarm
            ? await ctx.api('PATCH', `${base}/${enc(alarm.id)}`, { ...body, version: alarms.get(alarm.id).version })
            : await ctx.api('PUT', `${base}/${enc(crypto.randomUUID())}`, body);
        } catch (e) { throw failed(e); }
        alarms.set(saved.id, saved);
        attachments.fromDocument('personal_alarm', saved.attachments ? saved : { ...saved, attachments: [] });
        edit(null);
        draw([saved.id]);
      },
    });
    replace(formSlot, form);
    form.querySelector('input').focus();
  }

  async function setEnabled(a, on, input) {
    input.disabled = true;
    try {
      const saved = await ctx.api('PATCH', `${base}/${enc(a.id)}`, { is_enabled: on, version: a.version });
      alarms.set(saved.id, saved);
      draw([saved.id]);
    } catch (e) {
      input.checked = !on;
      syncSwitch(input);
      input.disabled = false;
      ctx.flash(failed(e).message, 'error');
    }
  }

  async function remove(a) {
    try {
      await ctx.api('DELETE', `${base}/${enc(a.id)}`);
      alarms.delete(a.id);
      draw();
      ctx.flash(`“${a.title}” is deleted.`, 'ok');
    } catch (e) {
      ctx.flash(failed(e).message, 'error');
      draw();
    }
  }

  function card(a) {
    const toggle = h('input', { type: 'checkbox', role: 'switch', id: `on-${a.id}`, checked: a.is_enabled !== false });
    toggle.addEventListener('change', () => setEnabled(a, toggle.checked, toggle));
    toggle.setAttribute('aria-label', `“${a.title}” rings (on or off)`);
    return h('li', { class: `card alarm personal${a.is_enabled === false ? ' off' : ''}`, id: `personal-${a.id}` },
      h('div', { class: 'alarm-line' },
        h('h2', { class: 'alarm-title' }, alarmBadge(a), a.title),
        h('div', { class: 'check switch' }, toggle, h('label', { for: toggle.id }, a.is_enabled === false ? 'Off' : 'On'))),
      h('p', { class: 'schedule' }, scheduleInWords(a.schedule, a.times_of_day)),
      h('p', { class: 'next-fire meta' }, a.is_enabled === false ? 'Off: it will not ring.'
        : a.next_fire_at ? ['Next: ', h('time', { datetime: a.next_fire_at }, `${whenIn(a.next_fire_at, a.timezone)} (${a.timezone})`), ` · ${relativeTime(a.next_fire_at)}`]
          : 'No further dates (the schedule has ended).'),
      a.note ? h('p', { class: 'note' }, a.note) : null,
      attachments.part(owner(a), { heading: 'h3' }),
      h('div', { class: 'actions tools' },
        h('button', { type: 'button', class: 'secondary small', 'data-key': `edit-${a.id}`, 'aria-label': `Edit “${a.title}”`, onclick: () => edit(a.id) }, 'Edit'),
        confirmButton(`Delete “${a.title}”`, 'Delete', `pdelete-${a.id}`, () => remove(a))));
  }

  function draw(touched = []) {
    const sorted = [...alarms.values()].sort((x, y) => (x.sort_order || 0) - (y.sort_order || 0)
      || (x.next_fire_at || '9').localeCompare(y.next_fire_at || '9'));
    replace(list, sorted.length ? sorted.map(card)
      : h('li', { class: 'empty' }, 'No personal alarms yet. They are yours alone: nobody in your groups sees them.'));
    for (const id of touched) flashChanged(document.getElementById(`personal-${id}`));
  }

  /** A `personal_alarm` change from the `user` feed (another device, or this page's own write). */
  page.alarmChanged = (c) => {
    if (c.op === 'removed' || !c.doc || c.doc.deleted_at) alarms.delete(c.id);
    else {
      const known = alarms.get(c.id);
      if (known && known.version >= c.doc.version) return;
      alarms.set(c.id, c.doc);
      attachments.fromDocument('personal_alarm', c.doc);
    }
    draw(c.doc ? [c.id] : []);
  };

  /** An `attachment` change from the `user` feed (an upload or removal, here or on another device). */
  page.attachmentChanged = (c) => {
    const key = attachments.applyChange(c);
    if (key) draw(key.startsWith('personal_alarm:') ? [key.split(':')[1]] : []);
  };

  page.rerender = () => draw();
  /** The signed-in user changed (the `user` feed: a new tier among others). A free account is not
   *  offered New alarm and is told why at once; after an upgrade the notice goes and the button comes
   *  back without a reload. */
  page.userChanged = () => {
    const free = isFree(ctx.me());
    notice.textContent = free ? TIER_TEXT : '';
    newButton.hidden = free || page.editing !== null;
    draw();
  };
  newButton.addEventListener('click', () => edit('new'));
  replace(ctx.main, h('h1', {}, 'My alarms'),
    h('p', { class: 'lead' }, 'Alarms for you alone, kept in your account and synced to your phones.'),
    notice,
    h('div', { class: 'section-head' }, h('span'), newButton),
    formSlot, list);
  page.userChanged();
  ctx.focusHeading();
  ctx.api('GET', base).then((r) => {
    for (const a of r.alarms) { alarms.set(a.id, a); attachments.fromDocument('personal_alarm', a); }
    draw();
  }, (e) => replace(list, h('li', { class: 'error' }, e.message)));
  return page;
}
