// What went wrong, in words for people: the API's error envelope (docs/api.md#errors) turned into a
// sentence that says what to do. Server messages name fields (`schedule.end_date`) and count bytes; a
// person sees labels and characters.

const LABELS = {
  display_name: 'Your name', name: 'The name', description: 'The description', title: 'The title', note: 'The note',
  email: 'The email address', invitee_email: 'The email address', password: 'The password',
  new_password: 'The new password', current_password: 'Your current password', timezone: 'The time zone',
  times_of_day: 'The times of day', grace_minutes: 'The minutes until missed', code: 'The invite code',
  date: 'The date', start_date: 'The start date', end_date: 'The end date', interval: 'The repeat interval',
  interval_days: 'The number of days', days_of_month: 'The days of the month', day_of_month: 'The day',
};

function label(field) {
  const key = String(field || '').split('.').pop();
  return LABELS[key] || (key ? `${key.replace(/_/g, ' ').replace(/^./, (c) => c.toUpperCase())}` : 'A field');
}

/** "in 2 minutes", "in 40 seconds", from a Retry-After in seconds. */
export function waitText(seconds) {
  const s = Math.max(1, Math.ceil(Number(seconds) || 0));
  if (s < 90) return `${s} second${s === 1 ? '' : 's'}`;
  const m = Math.ceil(s / 60);
  if (m < 90) return `${m} minutes`;
  return `${Math.ceil(m / 60)} hours`;
}

/** Rewrites of the server's validation messages (CA017, CA008), first match wins. */
const VALIDATION = [
  [/end_date is before .*start_date/, () => 'The end date is before the start date. Pick an end date on or after the start.'],
  [/schedule\.date is before schedule\.start_date/, () => 'The date is before the start date.'],
  [/date is in the past/, () => 'That date has already passed. Pick today or a later day.'],
  [/day_of_month does not exist in that month/, () => 'That day does not exist in the chosen month.'],
  [/must be in the years (\d+)–(\d+)/, (m, f) => `${label(f)} must be in the years ${m[1]}–${m[2]}.`],
  [/password must be at least (\d+) bytes/, (m, f) => `${label(f || 'password')} needs at least ${m[1]} characters.`],
  [/password must be at most (\d+) bytes/, (m, f) => `${label(f || 'password')} can have at most ${m[1]} characters.`],
  [/is longer than (\d+) (characters|bytes)/, (m, f) => `${label(f)} can have at most ${m[1]} characters.`],
  [/is required|must not be empty/, (m, f) => `${label(f)} is required.`],
  [/is not a valid address/, () => 'That email address does not look right.'],
  [/timezone is not a known IANA zone/, () => 'Pick a time zone from the list.'],
  [/must not repeat/, (m, f) => `${label(f)} lists the same value twice.`],
  [/mixes letters of different scripts/, (m, f) => `${label(f)} mixes letters of different alphabets; use one.`],
  [/compatibility character/, (m, f) => `${label(f)} contains a special (fullwidth) character; type the plain letter.`],
  [/that is already the account's address/, () => 'That is already your address.'],
];

/** How an account gets a higher tier on a self-hosted server: said with every refusal for the tier
 * , so a household knows whom to ask and what to run. */
export const TIER_HOW = 'On a self-hosted server the operator sets it: chronir-admin users set-tier <email> plus (or premium).';

/** What `what` needs ("Photos and files need", `tier` "Plus or Premium"), and how to get it. */
export function tierText(what, tier = 'a Plus or Premium account') {
  return `${what} ${tier}. ${TIER_HOW}`;
}

/** Whether the signed-in user `me` is on the free tier (what it would be refused is not offered). */
export function isFree(me) { return Boolean(me && me.tier === 'free'); }

const BY_CODE = {
  CA001: 'The limit of alarms is reached: delete one first.',
  CA002: tierText('This needs'),
  CA003: 'This group is full.',
  CA004: 'This invitation has expired. Ask for a new one.',
  CA005: 'This invitation has already been used.',
  CA006: 'This alarm no longer exists.',
  CA007: 'You do not have permission to do that.',
  CA010: 'Someone changed this meanwhile. The page shows their version now; make your change again.',
  CA012: 'Your session ended. Please sign in again.',
  CA018: 'That no longer exists.',
  CA021: 'The email or password is wrong.',
  CA022: 'An account with this email address already exists. Sign in instead.',
  CA024: 'This account is suspended.',
  CA031: 'This invite code does not work: it may have expired, been replaced or disabled. Ask for a new one.',
  CA032: 'Make someone else the owner before you leave.',
  CA033: 'That occurrence has already closed.',
  CA051: 'That answer can no longer be taken back.',
  CA052: 'You are no longer in this group, and this code was made before you left. Ask an owner or admin for a new code or an invitation.',
  CA034: 'This group is frozen by the server’s operator: nothing can be changed for now.',
  CA040: 'This link does not work any more. Ask for a new one.',
  CA041: 'Confirm your email address first: use the link we mailed you.',
};

/** A sentence for `e` (an ApiError, or any Error). */
export function userMessage(e) {
  if (!e) return 'Something went wrong.';
  if (e.status === 0) return 'The server cannot be reached. Check your connection and try again.';
  if (e.status === 429 || e.code === 'CA020') {
    return e.retryAfter ? `Too many attempts. Try again in ${waitText(e.retryAfter)}.` : 'Too many attempts. Try again in a little while.';
  }
  if (e.status === 503 || e.code === 'CA027') {
    return `The server is busy. Try again${e.retryAfter ? ` in ${waitText(e.retryAfter)}` : ' shortly'}.`;
  }
  if (e.code === 'CA017' || e.code === 'CA008') {
    for (const [pattern, say] of VALIDATION) {
      const m = pattern.exec(e.message || '');
      if (m) return say(m, e.field);
    }
    const text = String(e.message || 'Check the form.').replace(/\b(schedule\.)?([a-z]+(_[a-z]+)+)\b/g, (_, __, f) => label(f).replace(/^The /, 'the '));
    return /[.!?]$/.test(text) ? text.replace(/^./, (c) => c.toUpperCase()) : `${text.replace(/^./, (c) => c.toUpperCase())}.`;
  }
  if (BY_CODE[e.code]) return BY_CODE[e.code];
  if (e.status >= 500) return 'Something went wrong on the server. Try again; if it keeps happening, tell whoever runs it.';
  return e.message || 'Something went wrong.';
}
