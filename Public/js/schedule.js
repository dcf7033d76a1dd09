// Schedules in words and times in zones. Weekdays are ISO (1 = Monday … 7 = Sunday), as in the API.

export const WEEKDAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
export const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August',
  'September', 'October', 'November', 'December'];
export const SCHEDULE_KINDS = [
  ['weekly', 'Weekly (on weekdays)'],
  ['monthly_date', 'Monthly (on dates)'],
  ['monthly_relative', 'Monthly (e.g. last Friday)'],
  ['annual', 'Yearly'],
  ['custom_days', 'Every N days'],
  ['one_time', 'Once'],
];
export const WEEK_OF_MONTH = [[1, 'first'], [2, 'second'], [3, 'third'], [4, 'fourth'], [-1, 'last']];

export function ordinal(n) {
  const rem100 = n % 100;
  if (rem100 >= 11 && rem100 <= 13) return `${n}th`;
  return `${n}${{ 1: 'st', 2: 'nd', 3: 'rd' }[n % 10] || 'th'}`;
}

function list(words) {
  if (words.length <= 1) return words.join('');
  return `${words.slice(0, -1).join(', ')} and ${words[words.length - 1]}`;
}

function every(interval, one, many) {
  return interval > 1 ? `Every ${interval} ${many}` : `Every ${one}`;
}

export function pad2(n) { return String(n).padStart(2, '0'); }
/** "07:30": a time of day as a time input's value (not for display: see timeWords). */
export function timeText(t) { return `${pad2(t.hour)}:${pad2(t.minute)}`; }

/** How times are shown: the browser's language, and a 12- or 24-hour clock — the account's synced
 *  `use_24_hour_format` once the user has chosen (settings version > 0), else the language's own. */
const display = { hour12: undefined };
function locale() { return navigator.language || 'en-GB'; }
export function setDisplayPrefs({ hour12 }) { display.hour12 = hour12; }
function hourOptions() {
  let h12 = display.hour12;
  if (h12 === undefined) {
    const cycle = new Intl.DateTimeFormat(locale(), { hour: 'numeric' }).resolvedOptions().hourCycle;
    h12 = cycle === 'h11' || cycle === 'h12';
  }
  return h12 ? { hour: 'numeric', minute: '2-digit', hour12: true } : { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' };
}

/** A time of day in words for people: "07:30" or "7:30 am", as the viewer's clock shows it. */
export function timeWords(t) {
  try {
    return new Intl.DateTimeFormat(locale(), { ...hourOptions(), timeZone: 'UTC' }).format(Date.UTC(2000, 0, 1, t.hour, t.minute));
  } catch {
    return timeText(t);
  }
}

/** "2026-03-01" → "1 March 2026". */
export function dateText(iso) {
  const [y, m, d] = iso.split('-').map(Number);
  return `${d} ${MONTHS[m - 1]} ${y}`;
}

/** "Every month on the 1st at 09:00", "Every 2 weeks on Monday and Friday at 07:30 and 19:00". */
export function scheduleInWords(schedule, timesOfDay) {
  const s = schedule || {};
  const interval = s.interval || 1;
  let text;
  switch (s.type) {
    case 'weekly': {
      const days = [...(s.days_of_week || [])].sort((a, b) => a - b);
      if (days.length === 7 && interval === 1) text = 'Every day';
      else if (days.length === 5 && days.join() === '1,2,3,4,5' && interval === 1) text = 'Every weekday';
      else text = `${every(interval, 'week', 'weeks')} on ${list(days.map((d) => WEEKDAYS[d - 1]))}`;
      break;
    }
    case 'monthly_date': {
      const days = [...(s.days_of_month || [])].sort((a, b) => a - b);
      text = `${every(interval, 'month', 'months')} on the ${list(days.map(ordinal))}`;
      if (days.some((d) => d > 28)) text += ' (the last day in shorter months)';
      break;
    }
    case 'monthly_relative': {
      const week = (WEEK_OF_MONTH.find(([n]) => n === s.week_of_month) || [0, `${s.week_of_month}th`])[1];
      text = `${every(interval, 'month', 'months')} on the ${week} ${WEEKDAYS[s.day_of_week - 1]}`;
      break;
    }
    case 'annual':
      text = `${every(interval, 'year', 'years')} on ${s.day_of_month} ${MONTHS[s.month - 1]}`;
      break;
    case 'custom_days':
      text = s.interval_days === 1 ? 'Every day' : `Every ${s.interval_days} days`;
      break;
    case 'one_time':
      text = `Once, on ${dateText(s.date)}`;
      break;
    default:
      text = 'On a schedule this page does not know';
  }
  const times = (timesOfDay || []).map(timeWords);
  if (times.length) text += ` at ${list(times)}`;
  const today = new Date().toISOString().slice(0, 10);
  if (s.type !== 'one_time' && s.start_date && s.start_date > today) text += `, from ${dateText(s.start_date)}`;
  if (s.end_date) text += `, until ${dateText(s.end_date)}`;
  return text;
}

/** The browser's zone. */
export function myZone() {
  try { return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC'; } catch { return 'UTC'; }
}

/** Old names browsers still list (ICU/CLDR keeps them as canonical ids) and the current IANA name
 *  each was renamed to; the server accepts both, people look for the current one. */
const RENAMED_ZONES = {
  'Africa/Asmera': 'Africa/Asmara',
  'America/Buenos_Aires': 'America/Argentina/Buenos_Aires',
  'America/Catamarca': 'America/Argentina/Catamarca',
  'America/Coral_Harbour': 'America/Atikokan',
  'America/Cordoba': 'America/Argentina/Cordoba',
  'America/Godthab': 'America/Nuuk',
  'America/Indianapolis': 'America/Indiana/Indianapolis',
  'America/Jujuy': 'America/Argentina/Jujuy',
  'America/Louisville': 'America/Kentucky/Louisville',
  'America/Mendoza': 'America/Argentina/Mendoza',
  'Asia/Calcutta': 'Asia/Kolkata',
  'Asia/Katmandu': 'Asia/Kathmandu',
  'Asia/Rangoon': 'Asia/Yangon',
  'Asia/Saigon': 'Asia/Ho_Chi_Minh',
  'Atlantic/Faeroe': 'Atlantic/Faroe',
  'Europe/Kiev': 'Europe/Kyiv',
  'Europe/Uzhgorod': 'Europe/Kyiv',
  'Europe/Zaporozhye': 'Europe/Kyiv',
  'Pacific/Enderbury': 'Pacific/Kanton',
  'Pacific/Ponape': 'Pacific/Pohnpei',
  'Pacific/Truk': 'Pacific/Chuuk',
};

/** A zone's current IANA name (an old alias becomes the name it was renamed to). */
export function canonicalZone(zone) {
  if (!zone) return zone;
  return RENAMED_ZONES[zone] || (zone === 'Etc/UTC' || zone === 'Etc/GMT' || zone === 'GMT' ? 'UTC' : zone);
}

/** The zones a picker offers: current IANA names (no old aliases), UTC included, sorted, the browser's
 *  zone first. */
export function allZones() {
  let listed;
  try { listed = Intl.supportedValuesOf('timeZone'); } catch { listed = []; }
  const zones = new Set(listed.map(canonicalZone).filter((z) => z === 'UTC' || z.includes('/')));
  zones.add('UTC');
  const mine = canonicalZone(myZone());
  zones.delete(mine);
  return [mine, ...[...zones].sort()];
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** From how far ahead a time is said by its day and clock ("tomorrow, 18:30") rather than by a distance. */
const CALENDAR_FROM = 12 * HOUR;
/** Up to how many days ahead the day is named ("Friday, 18:30"); later ones say "in 9 days". */
const CALENDAR_DAYS = 6;

/** The wall-clock date of `ms` in the viewer's zone as a day count, to tell today from tomorrow. */
function dayIndex(ms) {
  const parts = new Intl.DateTimeFormat('en-CA', { timeZone: viewerZone || myZone(), year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date(ms));
  return Math.round(Date.parse(`${parts}T00:00:00Z`) / DAY);
}

/** A future time 12 h or more ahead by its day and clock in the viewer's zone: "today, 21:00",
 *  "tomorrow, 18:30", "Friday, 18:30" ("in 2 days" for tomorrow evening was
 *  wrong-footing), or null beyond CALENDAR_DAYS. */
function calendarWords(ms, now) {
  const days = dayIndex(ms) - dayIndex(now);
  if (days > CALENDAR_DAYS) return null;
  const zone = viewerZone || myZone();
  const clock = new Intl.DateTimeFormat(locale(), { timeZone: zone, ...hourOptions() }).format(new Date(ms));
  if (days <= 0) return `today, ${clock}`;
  if (days === 1) return `tomorrow, ${clock}`;
  return `${new Intl.DateTimeFormat(locale(), { timeZone: zone, weekday: 'long' }).format(new Date(ms))}, ${clock}`;
}

/** How far `iso` is from `now` in words: "in 2 h", "5 min ago", "now"; a future time 12 h or more
 *  ahead by its day: "tomorrow, 18:30", "Friday, 18:30"; further on "in 9 days", "in 3 years". */
export function relativeTime(iso, now = Date.now()) {
  if (!iso) return '';
  const diff = new Date(iso).getTime() - now;
  const abs = Math.abs(diff);
  if (abs < MINUTE) return 'now';
  if (diff >= CALENDAR_FROM) {
    try {
      const words = calendarWords(now + diff, now);
      if (words) return words;
    } catch { /* an unknown zone: the distance below */ }
  }
  let amount;
  if (abs < HOUR) amount = `${Math.round(abs / MINUTE)} min`;
  else if (abs < DAY) amount = `${Math.round(abs / HOUR)} h`;
  else if (abs < 60 * DAY) { const d = Math.round(abs / DAY); amount = `${d} day${d === 1 ? '' : 's'}`; } else {
    const m = Math.round(abs / (30 * DAY));
    amount = m < 24 ? `${m} months` : `${Math.round(abs / (365 * DAY))} years`;
  }
  return diff > 0 ? `in ${amount}` : `${amount} ago`;
}

/** The state of an alarm's open occurrence for people: upcoming (its time is ahead), due (its time has
 *  come, less than an hour ago), overdue (later, until it counts as missed), missed or closed. */
export function occurrenceState(occ, now = Date.now()) {
  if (!occ) return null;
  if (occ.status === 'missed') return { state: 'missed', text: 'Missed' };
  if (occ.status !== 'open') return { state: 'closed', text: `This occurrence is ${occ.status}` };
  const at = new Date(occ.scheduled_at).getTime();
  if (at - now > MINUTE) return { state: 'upcoming', text: `Upcoming · ${relativeTime(occ.scheduled_at, now)}` };
  if (now - at < HOUR) return { state: 'due', text: 'Due now' };
  return { state: 'overdue', text: `Overdue ${relativeTime(occ.scheduled_at, now).replace(' ago', '')}` };
}

/** "Mon, 1 Dec 2026, 09:00" in `zone`, in the viewer's language and clock. */
export function whenIn(iso, zone) {
  if (!iso) return '';
  try {
    return new Intl.DateTimeFormat(locale(), {
      timeZone: zone, weekday: 'short', day: 'numeric', month: 'short', year: 'numeric', ...hourOptions(),
    }).format(new Date(iso));
  } catch {
    return new Date(iso).toISOString();
  }
}

let viewerZone = null;
/** The signed-in user's chosen zone (settings), which short times use; null: the browser's. */
export function setViewerZone(zone) { viewerZone = zone || null; }

/** A short time in the viewer's zone (history lines, activity, sessions). */
export function shortWhen(iso) { return whenIn(iso, viewerZone || myZone()); }

/** Whether two zones show `iso` at the same wall time. */
export function sameWallTime(iso, a, b) { return whenIn(iso, a) === whenIn(iso, b); }

/** The instant a wall-clock date starts (00:00) in `zone`, as ISO 8601 UTC: the pause picker's "until
 *  the start of that day" in the alarm's zone. Two corrections settle any offset change. */
export function startOfDayIn(date, zone) {
  const [y, m, d] = date.split('-').map(Number);
  const wanted = Date.UTC(y, m - 1, d);
  let guess = wanted;
  for (let i = 0; i < 2; i += 1) {
    const parts = Object.fromEntries(new Intl.DateTimeFormat('en-GB', {
      timeZone: zone, year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', hourCycle: 'h23',
    }).formatToParts(new Date(guess)).map((p) => [p.type, p.value]));
    const wall = Date.UTC(Number(parts.year), Number(parts.month) - 1, Number(parts.day), Number(parts.hour), Number(parts.minute));
    guess += wanted - wall;
  }
  return new Date(guess).toISOString();
}

/** Whether a shared alarm is paused now (`paused_until` ahead). */
export function isPaused(alarm, now = Date.now()) {
  return Boolean(alarm.paused_until) && new Date(alarm.paused_until).getTime() > now;
}

/** The lead window in words: "1 day", "3 h", "30 min", or null for none (answers open at its time). */
export function leadWords(minutes) {
  if (minutes === undefined || minutes === null) return null;
  if (minutes === 0) return null;
  if (minutes % 1440 === 0) return `${minutes / 1440} day${minutes === 1440 ? '' : 's'}`;
  if (minutes % 60 === 0) return `${minutes / 60} h`;
  return `${minutes} min`;
}
