// The group page's shared alarms section (group.js owns the page and its data): one line per alarm
// with its open occurrence, the details behind a disclosure, answering (✓ and Skip, queued offline),
// history, the owner's and admins' controls and the alarm form in its own slot. Never imports group.js.

import { enc } from './api.js';
import { h, replace, flashChanged, confirmButton, alarmBadge } from './dom.js';
import { alarmForm } from './alarmform.js';
import { isFree } from './errors.js';
import { myAnswer, postCompletion, queuedAnswer, answerErrorText, completionLine, withdrawCompletion } from './answers.js';
import { scheduleInWords, whenIn, myZone, shortWhen, sameWallTime, relativeTime, occurrenceState, isPaused, leadWords, startOfDayIn, pad2 } from './schedule.js';

/** Answers asked for when an alarm's history opens. */
const HISTORY_PAGE = 20;

export class AlarmsView {
  /** `page`: the GroupPage (its ctx, groupId, me, myRole, canManage, members, alarms, completions,
   *  editedBefore, attachments, name, render, run). */
  constructor(page) {
    this.page = page;
    this.history = new Map(); // alarm id → completions (newest first) once its history is opened
    this.openHistory = new Set();
    this.openCards = new Set(); // alarm ids whose card shows its details
    this.editing = null; // alarm id being edited, 'new', or null
    // Alarm ids whose answer is on its way: their ✓ and Skip stay disabled through any re-render until
    // the server has answered, so a double tap sends one answer.
    this.sending = new Set();
    // The alarm form's slot: re-renders move it but never rebuild it (what is typed stays).
    this.formSlot = h('div', { id: 'alarm-form-slot' });
    this.showArchived = false; // whether "Archived (n)" is open
  }

  /** The section: its heading, New alarm (owner, admin), the form's slot, the cards by next fire, and
   *  the archived ones (docs/design.md#done-and-archived) behind an "Archived (n)" disclosure whose
   *  state survives re-renders. */
  section() {
    const p = this.page;
    const all = [...p.alarms.values()].sort((a, b) => (a.next_fire_at || '9').localeCompare(b.next_fire_at || '9'));
    const alarms = all.filter((a) => !a.archived_at);
    const archived = all.filter((a) => a.archived_at).sort((a, b) => b.archived_at.localeCompare(a.archived_at));
    let archive = null;
    if (archived.length) {
      archive = h('details', { class: 'archived', id: 'archived-alarms', 'data-key': 'archived-alarms', open: this.showArchived },
        h('summary', {}, `Archived (${archived.length})`),
        h('ul', { class: 'cards', id: 'archived-list' }, archived.map((a) => this.card(a))));
      archive.addEventListener('toggle', () => { this.showArchived = archive.open; });
    }
    return h('section', { 'aria-labelledby': 'alarms-h' },
      h('div', { class: 'section-head' }, h('h2', { id: 'alarms-h' }, 'Shared alarms'),
        p.canManage && this.editing !== 'new' ? h('button', { type: 'button', 'data-key': 'new-alarm', onclick: () => this.edit('new') }, 'New alarm') : null),
      this.formSlot,
      alarms.length ? h('ul', { class: 'cards', id: 'alarm-list' }, alarms.map((a) => this.card(a)))
        : h('p', { class: 'empty' }, archived.length ? 'Every shared alarm is done and archived.'
          : p.canManage ? 'No shared alarms yet. Create the first one.' : 'No shared alarms yet.'),
      archive);
  }

  /** Focuses the control `selector` names, found afresh (a re-render may have replaced it). */
  focus(selector) {
    const el = this.page.ctx.main.querySelector(selector);
    if (el) el.focus();
  }

  /** A new answer (live, or my own): into the alarm's history when it is open. */
  addAnswer(c) {
    const hist = this.history.get(c.shared_alarm_id);
    if (hist && !hist.some((x) => x.id === c.id)) hist.unshift(c);
  }

  /** One alarm as one line — a check to answer, the title, the open occurrence's state and how many
   *  answered — with everything else (schedule, facts, who answered, the note, Skip, tools, history)
   *  behind a disclosure button whose state survives re-renders (`openCards`). */
  card(a) {
    const p = this.page;
    const meId = p.me && p.me.id;
    const occ = a.occurrence;
    const zone = a.timezone;
    const mine = p.me && p.me.timezone ? p.me.timezone : myZone();
    const assignees = (a.assigned_to_uids || []).length ? a.assigned_to_uids.map((u) => p.name(u)).join(', ') : 'Everyone in the group';
    const ruleText = a.completion_rule === 'all' ? 'Everyone required must answer' : 'The first answer closes it';
    const st = occurrenceState(occ);
    const answered = occ ? new Map((occ.answered || []).map((x) => [x.user_id, x])) : new Map();
    const required = occ ? occ.required_uids || [] : [];

    // "0 of 2 answered" is true only of a rule where everyone answers; with `any` one answer closes it
    //, so the card says that instead.
    const anyRule = a.completion_rule !== 'all';
    const countText = anyRule
      ? (answered.size ? 'answered' : required.length > 1 ? `one answer of ${required.length} closes it` : 'one answer closes it')
      : `${answered.size} of ${required.length} answered`;
    let progress = null;
    if (occ) {
      const pending = occ.pending_uids || [];
      progress = h('div', { class: 'progress', 'aria-label': 'Progress of the open occurrence' },
        h('p', {}, h('strong', {}, st.text),
          ` — ${countText}`,
          occ.status === 'open' && pending.length ? `; ${anyRule ? 'any of' : 'waiting for'} ${pending.map((u) => p.name(u)).join(', ')}` : ''),
        h('ul', { class: 'who' }, required.map((u) => {
          const ans = answered.get(u);
          return h('li', { class: ans ? `answered ${ans.status}` : 'pending', dataset: { user: u } },
            p.name(u), ': ', ans ? `${ans.status === 'completed' ? 'done' : 'skipped'} ${shortWhen(ans.at)}` : 'not yet');
        })));
    }
    const previous = this.previousOccurrence(a);

    // Answers open at `answerable_from` (the alarm's lead window before its time, or the end of a pause).
    const todo = myAnswer(a, meId);
    const queued = p.ctx.outbox ? p.ctx.outbox.pendingFor(`alarm-${a.id}`) : null;
    const noteId = `note-${a.id}`;
    const sending = this.sending.has(a.id);
    const note = h('input', { type: 'text', id: noteId, maxlength: 500, 'data-key': noteId, class: 'note-input', enterkeyhint: 'done' });
    // Enter in the note marks the alarm done (with the note), as ✓ does.
    note.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.isComposing && todo === 'answer' && !queued) { e.preventDefault(); this.answer(a, 'completed', note, null); }
    });
    let check;
    let mySay = null;
    if (queued) {
      check = h('span', { class: 'check-mark queued', 'aria-hidden': 'true' }, '…');
      mySay = h('span', { class: 'queued-note' }, ` · ${queued.label}: waiting to be sent`);
    } else if (todo === 'answer') {
      const early = st && st.state === 'upcoming';
      check = h('button', { type: 'button', class: 'done check', 'data-key': `done-${a.id}`, 'data-queue': true, disabled: sending, 'aria-busy': sending ? 'true' : null, 'aria-label': `Mark “${a.title}” done${early ? ' early' : ''}`,
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
          // ✓ again beside the note: on a phone the keyboard hides the card's own ✓ while one types.
          h('button', { type: 'button', 'data-key': `done-note-${a.id}`, 'data-queue': true, class: 'done-answer', disabled: sending,
            onclick: (e) => this.answer(a, 'completed', note, e.target) }, 'Mark done ✓'),
          h('button', { type: 'button', 'data-key': `skip-${a.id}`, 'data-queue': true, class: 'secondary skip-answer', disabled: sending, onclick: (e) => this.answer(a, 'skipped', note, e.target) }, 'Skip this time'))));
    } else if (occ && answered.has(meId)) {
      answerPart.push(h('p', { class: 'meta' }, 'You have answered this occurrence.'));
    }
    // Done (answered or missed, nothing fires again): no switches, only Archive (docs/design.md#done-and-archived).
    const done = a.is_done === true;
    const off = !done && a.is_enabled === false;
    const paused = !done && !off && isPaused(a);
    const lead = leadWords(a.answer_lead_minutes);
    const tools = [];
    if (p.canManage) tools.push(h('button', { type: 'button', class: 'secondary small', 'data-key': `edit-${a.id}`, onclick: () => this.edit(a.id) }, 'Edit'));
    if (p.myRole === 'owner' || a.created_by_uid === meId) {
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
      p.canManage ? (done ? this.archivePart(a) : this.controlsPart(a, off, paused)) : null,
      p.attachments.part(this.alarmOwner(a)),
      h('div', { class: 'card-foot' }, tools.length ? h('div', { class: 'actions tools' }, tools) : null, history));
    const toggle = h('button', { type: 'button', class: 'secondary small disclosure', 'data-key': `more-${a.id}`, 'data-local': true,
      'aria-expanded': String(open), 'aria-controls': detailsId, 'aria-label': `Details of “${a.title}”` }, open ? 'Less' : 'Details');
    toggle.addEventListener('click', () => this.toggleCard(a.id, !this.openCards.has(a.id)));

    let status;
    if (done) {
      const missed = occ && occ.status === 'missed';
      status = h('span', { class: `state state-done${missed ? ' missed' : ''}` },
        missed ? 'Done: missed' : `Done${a.last_completed_at ? ` ${shortWhen(a.last_completed_at)}` : ''}`,
        a.archived_at ? ' · archived' : '');
    } else if (off) status = h('span', { class: 'state state-off' }, 'Switched off');
    else if (st) {
      status = [h('span', { class: `state state-${st.state}` }, st.text), h('span', { class: 'count' }, ` · ${countText}`),
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
    const p = this.page;
    const set = (body, what) => p.run(async () => {
      const saved = await p.ctx.api('PATCH', `/v1/groups/${enc(p.groupId)}/alarms/${enc(a.id)}`, body);
      const prev = p.alarms.get(saved.id);
      if (prev && prev.version < saved.version) p.editedBefore.set(saved.id, prev); // the change is still on its way
      p.alarms.set(saved.id, saved);
      p.render([`alarm-${saved.id}`]);
      p.ctx.flash(`${what}: ${saved.title}.`, 'ok');
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
      if (!date.value) { p.ctx.flash('Pick the day the alarm starts again.', 'error'); date.focus(); return; }
      set({ paused_until: startOfDayIn(date.value, a.timezone) }, 'Paused');
    };
    return h('div', { class: 'controls' },
      h('div', { class: 'field pause-field' }, h('label', { for: dateId }, `Pause until (the start of that day, ${a.timezone})`), date),
      h('div', { class: 'actions' }, h('button', { type: 'button', class: 'secondary small', 'data-key': `pause-${a.id}`, onclick: pause }, 'Pause'), off2));
  }

  /** A done alarm's one control (owner, admin): Archive, or Take out of the archive. Focus goes to the
   *  card's disclosure where it now stands (the archived list, or the main one), never to <body>. */
  archivePart(a) {
    const p = this.page;
    const set = (archived) => p.run(async () => {
      const saved = await p.ctx.api('PATCH', `/v1/groups/${enc(p.groupId)}/alarms/${enc(a.id)}`, { archived });
      p.alarms.set(saved.id, saved);
      if (archived) this.showArchived = true;
      p.render([`alarm-${saved.id}`]);
      p.ctx.flash(`${archived ? 'Archived' : 'Taken out of the archive'}: ${saved.title}.`, 'ok');
      this.focus(`[data-key="more-${saved.id}"]`);
    });
    if (a.archived_at) {
      return h('div', { class: 'controls' }, h('p', { class: 'meta' }, `Done, archived ${shortWhen(a.archived_at)}.`),
        h('button', { type: 'button', class: 'secondary small', 'data-key': `unarchive-${a.id}`, onclick: () => set(false) }, 'Take out of the archive'));
    }
    return h('div', { class: 'controls' }, h('p', { class: 'meta' }, 'Done: nothing more rings. Archive it to clear the list.'),
      h('button', { type: 'button', class: 'secondary small', 'data-key': `archive-${a.id}`, onclick: () => set(true) }, 'Archive'));
  }

  /** Opens or closes an alarm card's details in place (no re-render: focus stays on the button). */
  toggleCard(alarmId, open) {
    const p = this.page;
    if (open) this.openCards.add(alarmId);
    else this.openCards.delete(alarmId);
    const alarm = p.alarms.get(alarmId);
    if (open && alarm) p.attachments.load(this.alarmOwner(alarm)); // once, when the documents did not carry them; the feed keeps them current
    const card = document.getElementById(`alarm-${alarmId}`);
    if (!card) return;
    card.classList.toggle('open', open);
    const details = card.querySelector('.alarm-details');
    if (details) details.hidden = !open;
    const toggle = card.querySelector('button.disclosure');
    if (toggle) { toggle.setAttribute('aria-expanded', String(open)); toggle.textContent = open ? 'Less' : 'Details'; }
  }

  /** A shared alarm as an attachments owner: every member may add; the uploader, the owner and admins remove. */
  /** A shared alarm as an attachments owner (docs/attachments.md): every member may add; the uploader, the owner and admins remove. */
  alarmOwner(a) {
    const p = this.page;
    const meId = p.me && p.me.id;
    return { kind: 'shared_alarm', id: a.id, title: `“${a.title}”`, noun: 'an alarm', fileName: a.title, touch: `alarm-${a.id}`,
      path: `/v1/groups/${enc(p.groupId)}/alarms/${enc(a.id)}/attachments`,
      canUpload: !isFree(p.me), needsTier: isFree(p.me), canRemove: (x) => x.uploaded_by === meId || p.canManage,
      loadNow: this.openCards.has(a.id) }; // a list is fetched only for open details
  }

  /** The latest occurrence before the open one that has answers among the recent completions. */
  previousOccurrence(a) {
    const p = this.page;
    const current = a.occurrence ? a.occurrence.scheduled_at : null;
    const earlier = p.completions.filter((c) => c.shared_alarm_id === a.id && (!current || c.scheduled_at < current));
    if (!earlier.length) return null;
    const at = earlier.reduce((m, c) => (c.scheduled_at > m ? c.scheduled_at : m), earlier[0].scheduled_at);
    const answers = earlier.filter((c) => c.scheduled_at === at).reverse();
    return h('p', { class: 'previous' },
      h('strong', {}, `Previous (${whenIn(at, a.timezone)}): closed`), ' — ',
      answers.map((c) => `${c.completed_by_name || p.name(c.completed_by_uid)} ${c.status === 'completed' ? 'done' : 'skipped'}`).join(', '));
  }

  historyList(alarmId) {
    const p = this.page;
    const items = this.history.get(alarmId);
    if (!items) return h('p', { class: 'meta' }, 'Loading…');
    if (!items.length) return h('p', { class: 'meta' }, 'Nobody has answered yet.');
    return h('ol', { class: 'log' }, items.map((c) => completionLine(c)));
  }

  async loadHistory(alarmId) {
    const p = this.page;
    try {
      const page = await p.ctx.api('GET', `/v1/groups/${enc(p.groupId)}/alarms/${enc(alarmId)}/completions?limit=${HISTORY_PAGE}`);
      this.history.set(alarmId, page.completions);
    } catch (e) {
      this.history.set(alarmId, []);
      p.ctx.flash(e.message, 'error');
    }
    p.render();
  }

  /** Opens the alarm form for `which` (an alarm id, or 'new'), or closes it (null). */
  edit(which) {
    const p = this.page;
    this.editing = which;
    if (which === null) { replace(this.formSlot); p.render(); return; }
    const opener = which === 'new' ? '[data-key="new-alarm"]' : `[data-key="more-${which}"]`;
    const alarm = which === 'new' ? null : p.alarms.get(which);
    const form = alarmForm({
      alarm,
      members: [...p.members.values()],
      zone: p.me && p.me.timezone,
      // Focus goes back to what opened the form (New alarm, or the alarm's card), never to <body>.
      onCancel: () => { this.edit(null); this.focus(opener); },
      onSave: async (body) => {
        const base = `/v1/groups/${enc(p.groupId)}/alarms`;
        let saved;
        if (alarm) {
          try {
            saved = await p.ctx.api('PATCH', `${base}/${enc(alarm.id)}`, { ...body, version: p.alarms.get(alarm.id).version });
          } catch (e) {
            if (e.code === 'CA010') throw new Error('Someone changed this alarm meanwhile. Cancel and edit again to see their version.');
            throw e;
          }
        } else {
          saved = await p.ctx.api('POST', base, body);
        }
        p.alarms.set(saved.id, saved);
        this.edit(null);
        flashChanged(document.getElementById(`alarm-${saved.id}`));
        this.focus(`[data-key="more-${saved.id}"]`); // the card just created or saved
      },
    });
    replace(this.formSlot, form);
    p.render();
    form.querySelector('input').focus();
  }

  async answer(alarm, status, noteInput, button) {
    const p = this.page;
    if (this.sending.has(alarm.id)) return; // a second tap while the first is on its way
    if (button) button.disabled = true;
    if (p.ctx.isOffline && p.ctx.isOffline()) { this.queueAnswer(alarm, status, noteInput); return; }
    this.sending.add(alarm.id);
    try {
      const r = await postCompletion(p.ctx.api, p.groupId, alarm, status, noteInput.value);
      noteInput.value = '';
      p.alarms.set(r.alarm.id, r.alarm);
      if (!p.completions.some((x) => x.id === r.completion.id)) p.completions.unshift(r.completion);
      p.attachments.fromDocument('shared_completion', { ...r.completion, attachments: r.completion.attachments || [] });
      this.addAnswer(r.completion);
      p.render([`alarm-${alarm.id}`]);
      p.ctx.flash(h('span', {}, `${status === 'completed' ? 'Marked done' : 'Skipped'}: ${alarm.title}. `,
        h('button', { type: 'button', class: 'link', 'data-key': 'undo-answer', onclick: () => this.undo(r.completion) }, 'Undo')), 'ok');
    } catch (e) {
      if (e.status === 0 && p.ctx.outbox) { this.queueAnswer(alarm, status, noteInput); return; } // never reached the server
      if (e.code === 'CA033' && e.current) { p.alarms.set(e.current.id, e.current); p.render([`alarm-${alarm.id}`]); }
      p.ctx.flash(answerErrorText(e), 'error');
    } finally {
      if (this.sending.delete(alarm.id)) p.render([]);
    }
  }

  /** Takes the viewer's answer back (the Undo beside "Marked done"): the card shows the occurrence as the
   *  server has it again, the answer stays in the history marked as taken back. */
  async undo(completion) {
    const p = this.page;
    try {
      const r = await withdrawCompletion(p.ctx.api, p.groupId, completion);
      p.alarms.set(r.alarm.id, r.alarm);
      p.completions = p.completions.map((c) => (c.id === r.completion.id ? { ...c, ...r.completion } : c));
      p.render([`alarm-${r.alarm.id}`]);
      p.ctx.flash('Answer taken back.', 'ok');
    } catch (e) {
      p.ctx.flash(answerErrorText(e), 'error');
    }
  }

  /** Keeps an answer that cannot be sent now in the outbox (outbox.js): it names the occurrence, so
   *  sending it later answers this one or is refused. The card shows it waiting. */
  queueAnswer(alarm, status, noteInput) {
    const p = this.page;
    const entry = queuedAnswer(p.groupId, alarm, status, noteInput.value);
    const label = entry.label;
    const kept = p.ctx.outbox.add(entry);
    if (!kept) { p.ctx.flash('Too many actions are waiting to be sent: try again when the connection is back.', 'error'); p.render(); return; }
    noteInput.value = '';
    delete noteInput.dataset.touched;
    p.ctx.flash(`You are offline. ${label} is kept on this device and will be sent when the connection is back.`, 'warn');
    p.render([`alarm-${alarm.id}`]);
  }

  async deleteAlarm(a) {
    const p = this.page;
    await p.run(async () => {
      await p.ctx.api('DELETE', `/v1/groups/${enc(p.groupId)}/alarms/${enc(a.id)}`);
      p.alarms.delete(a.id);
      p.render();
    });
  }
}
