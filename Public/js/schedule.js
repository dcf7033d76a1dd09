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
export function timeText(t) { return `${pad2(t.hour)}:${pad2(t.minute)}`; }

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
  const times = (timesOfDay || []).map(timeText);
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

/** Every zone the browser knows (for the alarm form). */
export function allZones() {
  try { return Intl.supportedValuesOf('timeZone'); } catch { return [myZone(), 'UTC']; }
}

/** "Mon 1 Dec 2026, 09:00" in `zone`. */
export function whenIn(iso, zone) {
  if (!iso) return '';
  try {
    return new Intl.DateTimeFormat('en-GB', {
      timeZone: zone, weekday: 'short', day: 'numeric', month: 'short', year: 'numeric',
      hour: '2-digit', minute: '2-digit', hourCycle: 'h23',
    }).format(new Date(iso));
  } catch {
    return new Date(iso).toISOString();
  }
}

/** Short local time for history lines. */
export function shortWhen(iso) { return whenIn(iso, myZone()); }

/** Whether two zones show `iso` at the same wall time. */
export function sameWallTime(iso, a, b) { return whenIn(iso, a) === whenIn(iso, b); }
