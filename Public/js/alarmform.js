// The create/edit form of an alarm: every schedule kind the API knows, times of day, zone, and for a
// shared alarm its assignees, completion rule and grace. Personal alarms (My alarms) use the same form
// without the group's parts. Builds the API body; the caller sends it. Also the time-zone picker that
// the settings page shares.

import { h, field, uid, GROUP_ICONS } from './dom.js';
import { SCHEDULE_KINDS, WEEKDAYS, MONTHS, WEEK_OF_MONTH, allZones, canonicalZone, myZone, pad2, timeText } from './schedule.js';

const MAX_TIMES = 6;
/** The longest answer window and grace the server takes (minutes: 7 days; docs/api.md). */
const MAX_WINDOW_MINUTES = 10080;
/** Units a window is typed in (hours and days, not minutes): [value, label, minutes]. */
const WINDOW_UNITS = [['days', 'days', 1440], ['hours', 'hours', 60], ['minutes', 'minutes', 1]];
/** The form's repeat choices: the API's kinds, with "Daily" first (sent as every 1 day). */
const FORM_KINDS = [['daily', 'Daily'], ...SCHEDULE_KINDS];

/** A window in minutes as the form shows it: in the largest unit that holds it whole (1440 → 1 day). */
function windowParts(minutes) {
  const [unit, , size] = WINDOW_UNITS.find(([, , m]) => minutes % m === 0 && (minutes > 0 || m === 1440));
  return { amount: minutes / size, unit };
}

/** A duration field: an amount and its unit (days, hours, minutes), read back as minutes by `minutes()`;
 *  `name` names the amount (`answer_lead`), `${name}_unit` the unit. */
function windowInput(name, minutes, label, hint) {
  const { amount, unit } = windowParts(minutes);
  const number = h('input', { type: 'number', name, value: String(amount), min: 0, max: MAX_WINDOW_MINUTES, step: 1, required: true, inputmode: 'numeric', id: uid('w') });
  const units = select(`${name}_unit`, WINDOW_UNITS.map(([v, l]) => [v, l]), unit);
  units.setAttribute('aria-label', `${label}: unit`);
  const hintEl = h('small', { class: 'hint', id: `${number.id}-hint` }, hint);
  number.setAttribute('aria-describedby', hintEl.id);
  return {
    element: h('div', { class: 'field' }, h('label', { for: number.id }, label), h('span', { class: 'window' }, number, units), hintEl),
    minutes() {
      const [, , size] = WINDOW_UNITS.find(([v]) => v === units.value);
      const total = Number.parseInt(number.value, 10) * size;
      if (!Number.isFinite(total) || total < 0) throw new Error(`${label}: give a number.`);
      if (total > MAX_WINDOW_MINUTES) throw new Error(`${label}: at most 7 days.`);
      return total;
    },
  };
}

/** A time for "Add a time": the next whole hour after the latest time already given that is not given
 *  yet (09:00 → 10:00), so a second time is a proposal rather than a copy; 09:00 when there is none. */
export function freeTime(given) {
  const taken = new Set(given);
  const latest = given.length ? Math.max(...given.map((t) => Number(t.slice(0, 2)))) : 8;
  for (let step = 1; step <= 24; step += 1) {
    const candidate = `${pad2((latest + step) % 24)}:00`;
    if (!taken.has(candidate)) return candidate;
  }
  return '12:00';
}

function today() {
  const d = new Date();
  return `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())}`;
}

function numberInput(name, value, min, max) {
  return h('input', { type: 'number', name, value: String(value), min, max, step: 1, required: true, inputmode: 'numeric' });
}

function select(name, options, value) {
  return h('select', { name }, options.map(([v, label]) => h('option', { value: String(v), selected: String(v) === String(value) }, label)));
}

/**
 * A time-zone picker: a search box that narrows a select of current IANA zone names (the browser's
 * zone first, UTC included, no old aliases). Returns {element, select}; `select.value` is the zone.
 */
export function zonePicker(value, { label = 'Time zone', hint, name = 'timezone' } = {}) {
  const zones = allZones();
  const chosen = canonicalZone(value) || zones[0];
  if (!zones.includes(chosen)) zones.unshift(chosen);
  const select = h('select', { name });
  const search = h('input', { type: 'search', class: 'zone-search', 'aria-label': `Search ${label.toLowerCase()}s`, placeholder: 'Search, e.g. Berlin' });
  const fill = () => {
    const current = select.value || chosen;
    const q = search.value.trim().toLowerCase().replace(/\s+/g, '_');
    const shown = q ? zones.filter((z) => z.toLowerCase().includes(q)) : zones;
    if (!shown.includes(current)) shown.unshift(current);
    select.replaceChildren(...shown.map((z) => h('option', { value: z, selected: z === current }, z.replace(/_/g, ' '))));
    select.value = current;
  };
  search.addEventListener('input', () => {
    fill();
    const first = [...select.options].find((o) => o.value.toLowerCase().includes(search.value.trim().toLowerCase().replace(/\s+/g, '_')));
    if (search.value.trim() && first) select.value = first.value;
  });
  fill();
  const f = field(label, select, hint);
  f.querySelector('label').after(search);
  return { element: f, select };
}

/**
 * @param {{alarm?: object, members?: object[], personal?: boolean, zone?: string, onSave(body: object): Promise<void>, onCancel(): void}} options
 *   `zone`: a new alarm's zone (the user's chosen zone; default the browser's)
 */
export function alarmForm({ alarm, members = [], personal = false, zone: defaultZone, onSave, onCancel }) {
  const a = alarm || {};
  // A new alarm starts Daily at 09:00 from today: the commonest household chore, and the kind whose
  // answers are open at once (the default one-day lead window covers its next time).
  const s = a.schedule || { type: 'daily', start_date: today() };
  const shownKind = s.type === 'custom_days' && s.interval_days === 1 ? 'daily' : s.type;
  const title = h('input', { type: 'text', name: 'title', required: true, maxlength: 200, value: a.title || '' });
  const note = h('textarea', { name: 'note', maxlength: 2000, rows: 2 }, a.note || '');
  const kind = select('schedule_type', FORM_KINDS, shownKind);

  // One fieldset per schedule kind; only the chosen one is shown (and submitted).
  const interval = (unit) => field(`Repeat every … ${unit}`, numberInput('interval', s.interval || 1, 1, 1000));
  const weekdayBoxes = WEEKDAYS.map((name, i) => {
    const id = uid('wd');
    return h('span', { class: 'check' },
      h('input', { type: 'checkbox', id, name: 'days_of_week', value: String(i + 1), checked: (s.days_of_week || [1]).includes(i + 1) }),
      h('label', { for: id }, name));
  });
  const parts = {
    daily: h('fieldset', {}, h('legend', {}, 'Daily'), h('p', { class: 'hint' }, 'Every day at the times below.')),
    weekly: h('fieldset', {}, h('legend', {}, 'Weekly'),
      h('fieldset', { class: 'checks plain' }, h('legend', { class: 'label' }, 'On these weekdays'), weekdayBoxes), interval('weeks')),
    monthly_date: h('fieldset', {}, h('legend', {}, 'Monthly on dates'),
      field('Days of the month', h('input', {
        type: 'text', name: 'days_of_month', required: true, inputmode: 'numeric', pattern: '\\s*\\d{1,2}(\\s*,\\s*\\d{1,2})*\\s*',
        value: (s.days_of_month || [1]).join(', '),
      }), 'Numbers 1–31, separated by commas. A day a month lacks falls on its last day.'),
      interval('months')),
    monthly_relative: h('fieldset', {}, h('legend', {}, 'Monthly on a weekday'),
      field('Which', select('week_of_month', WEEK_OF_MONTH, s.week_of_month || 1)),
      field('Weekday', select('day_of_week', WEEKDAYS.map((d, i) => [i + 1, d]), s.day_of_week || 1)),
      interval('months')),
    annual: h('fieldset', {}, h('legend', {}, 'Yearly'),
      field('Month', select('month', MONTHS.map((m, i) => [i + 1, m]), s.month || 1)),
      field('Day', numberInput('day_of_month', s.day_of_month || 1, 1, 31)),
      interval('years')),
    custom_days: h('fieldset', {}, h('legend', {}, 'Every N days'),
      field('Number of days', numberInput('interval_days', s.interval_days || 7, 1, 3650))),
    one_time: h('fieldset', {}, h('legend', {}, 'Once'),
      field('Date', h('input', { type: 'date', name: 'date', required: true, value: s.date || today() }))),
  };
  const startDate = h('input', { type: 'date', name: 'start_date', required: true, value: s.start_date || today() });
  const endDate = h('input', { type: 'date', name: 'end_date', value: s.end_date || '' });
  const bounds = h('div', { class: 'row' }, field('Starts on', startDate), field('Ends on (optional)', endDate));
  const showKind = () => {
    for (const [k, el] of Object.entries(parts)) {
      el.hidden = k !== kind.value;
      el.disabled = k !== kind.value; // hidden fields don't block submission
    }
    bounds.hidden = kind.value === 'one_time';
    startDate.disabled = kind.value === 'one_time';
  };
  kind.addEventListener('change', showKind);

  // Times of day: a list of time inputs.
  const timesList = h('div', { class: 'times', role: 'group', 'aria-label': 'Times of day' });
  const addTime = (value) => {
    if (timesList.children.length >= MAX_TIMES) return;
    const input = h('input', { type: 'time', name: 'time', required: true, value, 'aria-label': `Time ${timesList.children.length + 1}` });
    const row = h('span', { class: 'time-row' }, input,
      h('button', { type: 'button', class: 'secondary small', 'aria-label': 'Remove this time', onclick: () => { if (timesList.children.length > 1) row.remove(); } }, 'Remove'));
    timesList.append(row);
    return input;
  };
  for (const t of (a.times_of_day && a.times_of_day.length ? a.times_of_day : [{ hour: 9, minute: 0 }])) addTime(timeText(t));
  const givenTimes = () => [...timesList.querySelectorAll('input[type="time"]')].map((i) => i.value).filter(Boolean);
  const addTimeButton = h('button', { type: 'button', class: 'secondary small', id: uid('addtime'), onclick: () => { const i = addTime(freeTime(givenTimes())); if (i) i.focus(); } }, 'Add a time');

  const zonePick = zonePicker(a.timezone || defaultZone || myZone(), { hint: 'The times above are wall-clock times in this zone.' });
  const zone = zonePick.select;

  const assigned = new Set(a.assigned_to_uids || []);
  const assignees = h('fieldset', {}, h('legend', {}, 'Who is assigned'),
    h('p', { class: 'hint' }, 'Nobody ticked means everyone in the group.'),
    h('div', { class: 'checks' }, members.map((m) => {
      const id = uid('as');
      return h('span', { class: 'check' },
        h('input', { type: 'checkbox', id, name: 'assignee', value: m.user_id, checked: assigned.has(m.user_id) }),
        h('label', { for: id }, m.display_name));
    })));
  const ruleName = uid('rule');
  const rule = a.completion_rule || 'any';
  const rules = h('fieldset', {}, h('legend', {}, 'Done when'),
    ...[['any', 'Any one of them has done it'], ['all', 'Every one of them has done it']].map(([v, label]) => {
      const id = uid('r');
      return h('span', { class: 'check' }, h('input', { type: 'radio', id, name: ruleName, value: v, checked: rule === v }), h('label', { for: id }, label));
    }));
  const grace = windowInput('grace', a.grace_minutes || 1440, 'Counts as missed after', 'An answer is still possible this long after its time.');
  // The lead window: how long before its time an occurrence may be answered (docs/api.md#shared-alarm-controls).
  const lead = windowInput('answer_lead', a.answer_lead_minutes ?? 1440, 'Answers open before its time', 'Mark done is possible this long before; 0 = only from its time.');
  // The alarm's own colour and icon (shown on its card, on My tasks and My alarms).
  const color = h('input', { type: 'color', name: 'color_tag', id: uid('col'), value: (a.color_tag || '#0B57D0').toLowerCase() });
  const noColor = h('input', { type: 'checkbox', id: uid('nocol'), checked: !a.color_tag });
  const icon = h('select', { name: 'icon_name' }, h('option', { value: '' }, 'None'),
    Object.entries(GROUP_ICONS).map(([v, [emoji, label]]) => h('option', { value: v, selected: a.icon_name === v }, `${emoji} ${label}`)),
    a.icon_name && !GROUP_ICONS[a.icon_name] ? h('option', { value: a.icon_name, selected: true }, a.icon_name) : null);
  const looks = h('fieldset', { class: 'looks' }, h('legend', {}, 'Colour and icon'),
    h('div', { class: 'field' }, h('label', { for: color.id }, 'Colour'), color,
      h('span', { class: 'check' }, noColor, h('label', { for: noColor.id }, 'No colour'))),
    field('Icon', icon));

  const error = h('p', { class: 'error', role: 'alert' });
  const submit = h('button', { type: 'submit' }, alarm ? 'Save changes' : 'Create alarm');
  const enabled = h('input', { type: 'checkbox', name: 'is_enabled', id: uid('en'), checked: a.is_enabled !== false });
  const noun = personal ? 'personal alarm' : 'shared alarm';
  const form = h('form', { class: 'card stack alarm-form', 'aria-label': alarm ? `Edit ${a.title}` : `New ${noun}` },
    h(personal ? 'h2' : 'h3', {}, alarm ? `Edit “${a.title}”` : `New ${noun}`),
    field('Title', title), field('Note (optional)', note),
    field('Repeats', kind), ...Object.values(parts), bounds,
    h('div', { class: 'field' }, h('span', { class: 'label' }, 'At'), timesList, addTimeButton),
    zonePick.element,
    personal ? h('span', { class: 'check' }, enabled, h('label', { for: enabled.id }, 'On (rings at its times)')) : [assignees, rules,
      lead.element, grace.element],
    looks,
    error, h('div', { class: 'actions' }, submit, h('button', { type: 'button', class: 'secondary', onclick: onCancel }, 'Cancel')));
  showKind();

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.textContent = '';
    let body;
    try { body = build(); } catch (e) { error.textContent = e.message; return; }
    submit.disabled = true;
    try {
      await onSave(body);
    } catch (e) {
      error.textContent = e.message;
      const named = e.field && form.querySelector(`[name="${CSS.escape(e.field.split('.').pop())}"]`);
      if (named && !named.disabled) named.focus();
    } finally {
      submit.disabled = false;
    }
  });

  function build() {
    const part = parts[kind.value];
    const value = (name) => part.querySelector(`[name="${name}"]`).value;
    const int = (name) => Number.parseInt(value(name), 10);
    const schedule = { type: kind.value };
    switch (kind.value) {
      case 'weekly':
        schedule.days_of_week = [...part.querySelectorAll('[name="days_of_week"]:checked')].map((c) => Number(c.value));
        if (!schedule.days_of_week.length) throw new Error('Pick at least one weekday.');
        schedule.interval = int('interval');
        break;
      case 'monthly_date':
        schedule.days_of_month = value('days_of_month').split(',').map((x) => Number.parseInt(x.trim(), 10)).filter((n) => !Number.isNaN(n));
        if (!schedule.days_of_month.length) throw new Error('Give at least one day of the month.');
        schedule.interval = int('interval');
        break;
      case 'monthly_relative':
        schedule.week_of_month = int('week_of_month');
        schedule.day_of_week = int('day_of_week');
        schedule.interval = int('interval');
        break;
      case 'annual':
        schedule.month = int('month');
        schedule.day_of_month = int('day_of_month');
        schedule.interval = int('interval');
        break;
      case 'custom_days':
        schedule.interval_days = int('interval_days');
        break;
      case 'daily':
        schedule.type = 'custom_days';
        schedule.interval_days = 1;
        break;
      case 'one_time':
        schedule.date = value('date');
        break;
      default:
        break;
    }
    if (kind.value === 'one_time') schedule.start_date = schedule.date;
    else schedule.start_date = startDate.value;
    schedule.end_date = kind.value === 'one_time' || !endDate.value ? null : endDate.value;
    const times = givenTimes();
    if (!times.length) throw new Error('Give at least one time of day.');
    if (schedule.end_date && schedule.start_date && schedule.end_date < schedule.start_date) {
      throw new Error('The end date is before the start date. Pick an end date on or after the start.');
    }
    if (personal) {
      return {
        title: title.value,
        note: note.value.trim() ? note.value : null,
        schedule,
        times_of_day: times.map((t) => ({ hour: Number(t.slice(0, 2)), minute: Number(t.slice(3, 5)) })),
        timezone: zone.value,
        is_enabled: enabled.checked,
        ...looksBody(),
      };
    }
    return {
      title: title.value,
      note: note.value.trim() ? note.value : null,
      schedule,
      times_of_day: times.map((t) => ({ hour: Number(t.slice(0, 2)), minute: Number(t.slice(3, 5)) })),
      timezone: zone.value,
      assigned_to_uids: [...assignees.querySelectorAll('input:checked')].map((c) => c.value),
      completion_rule: rules.querySelector('input:checked').value,
      grace_minutes: grace.minutes(),
      answer_lead_minutes: lead.minutes(),
      ...looksBody(),
    };
  }

  function looksBody() {
    return { color_tag: noColor.checked ? null : color.value.toUpperCase(), icon_name: icon.value || null };
  }

  return form;
}
