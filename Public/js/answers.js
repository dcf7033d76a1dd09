// Answers to a shared alarm's open occurrence, shared by the group page (group-alarms.js,
// group-activity.js) and My tasks (tasks.js): when the viewer may answer, the request that answers
// (now, or later from the outbox), a refusal in words, and one answer as a list item.

import { enc } from './api.js';
import { h } from './dom.js';
import { shortWhen, relativeTime } from './schedule.js';

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
  const r = answerRequest(groupId, alarm, status, note);
  return api(r.method, r.path, r.body);
}

/** The request that answers the alarm's open occurrence: it names the occurrence (`scheduled_at`), so a
 *  repeat answers the same one or is refused, never the next. */
function answerRequest(groupId, alarm, status, note) {
  const body = { status, scheduled_at: alarm.occurrence.scheduled_at };
  if (note && note.trim()) body.note = note.trim();
  return { method: 'POST', path: `/v1/groups/${enc(groupId)}/alarms/${enc(alarm.id)}/completions`, body };
}

/** The outbox entry (outbox.js) for an answer sent later: the same request as `postCompletion`, keyed by
 *  the alarm so its card (group page, My tasks) shows it waiting. */
export function queuedAnswer(groupId, alarm, status, note = '') {
  return { key: `alarm-${alarm.id}`, label: `${status === 'completed' ? 'Marked done' : 'Skipped'}: ${alarm.title}`,
    ...answerRequest(groupId, alarm, status, note) };
}

/** Takes one of the viewer's own answers back ("Undo": its author, within 10 minutes of answering;
 *  docs/design.md#answers-retries-and-undo): `{completion, alarm}`, the occurrence open again when the
 *  answer had closed it. */
export function withdrawCompletion(api, groupId, completion) {
  return api('DELETE',
    `/v1/groups/${enc(groupId)}/alarms/${enc(completion.shared_alarm_id)}/completions/${enc(completion.id)}`);
}

/** A refused answer in words (CA033: the occurrence closed meanwhile; CA051: too late to take back). */
export function answerErrorText(e) {
  if (e.code === 'CA051') return `That answer can no longer be taken back: ${e.message.replace(/^.*?: /, '')}.`;
  return e.code === 'CA033' ? 'That occurrence has already closed; the alarm shows the current one.' : e.message;
}

/** One answer as a list item; `extra` (its photos, in the activity list) after the words. */
export function completionLine(c, alarmTitle, extra = null) {
  return h('li', { id: alarmTitle === undefined ? null : `completion-${c.id}`, class: `status-${c.status}` },
    h('strong', {}, c.completed_by_name || 'Someone'), ' ',
    c.status === 'completed' ? 'did' : 'skipped', ' ',
    c.withdrawn_at ? h('span', { class: 'meta' }, '(taken back) ') : null,
    alarmTitle ? `“${alarmTitle}” ` : '',
    h('span', { class: 'meta' }, `· due ${shortWhen(c.scheduled_at)} · answered `,
      h('time', { datetime: c.completed_at, title: shortWhen(c.completed_at) }, relativeTime(c.completed_at) === 'now' ? 'just now' : relativeTime(c.completed_at))),
    c.note ? h('span', { class: 'note' }, ` — “${c.note}”`) : null,
    extra);
}
