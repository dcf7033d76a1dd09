// /settings: the account's profile (display name, time zone: PATCH /v1/me), password (POST
// /v1/me/password), sessions (GET/DELETE /v1/me/sessions…, POST …/revoke-others), synced settings
// (GET/PATCH /v1/me/settings, docs/personal-sync.md#settings) and this browser's notifications
// (push.js) with the account's registered devices (GET /v1/me/devices), and the plan (GET
// /v1/me/entitlement, docs/subscriptions.md: purchases happen in the apps). The `user` feed keeps the
// profile, settings and plan current when another device or a store changes them.

import { enc } from './api.js';
import { h, replace, field, flashChanged, confirmButton } from './dom.js';
import { zonePicker } from './alarmform.js';
import { pushSettings } from './push.js';
import { relativeTime, shortWhen } from './schedule.js';

/** The synced settings this page edits (the rest stay as they are: phone apps use them). */
const SETTINGS_FIELDS = [
  ['use_24_hour_format', 'boolean', 'Show times in 24-hour format'],
  ['default_snooze_minutes', 'number', 'Default snooze (minutes)', 1, 525600],
  ['pre_alarm_warning_enabled', 'boolean', 'Warn before alarms'],
  ['pre_alarm_warning_hours', 'number', 'Warn this many hours before', 1, 720],
  ['vibration_enabled', 'boolean', 'Vibrate (phones)'],
  ['theme_mode', 'choice', 'Theme on your phones', [['system', 'Like the system'], ['light', 'Light'], ['dark', 'Dark']]],
];

/** Builds the settings page in ctx.main; returns the page object app.js keeps as state.page. */
export function settingsPage(ctx) {
  const page = { kind: 'settings', settings: null };
  const status = (id) => h('p', { class: 'hint', role: 'status', id });
  const errorBox = () => h('p', { class: 'error', role: 'alert' });

  // — profile —
  const me = ctx.me() || {};
  const name = h('input', { type: 'text', name: 'display_name', required: true, maxlength: 100, value: me.display_name || '', autocomplete: 'nickname' });
  const zone = zonePicker(me.timezone, { hint: 'Times on every page are shown in this zone as well.' });
  const profileError = errorBox();
  const profileStatus = status('profile-status');
  const profile = h('form', { class: 'card stack', id: 'profile', 'aria-labelledby': 'profile-h' },
    h('h2', { id: 'profile-h' }, 'Profile'),
    h('p', { class: 'meta' }, `Signed in as ${me.email || ''}.`),
    field('Your name (shown to your groups)', name), zone.element, profileError,
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Save profile'), profileStatus));
  profile.addEventListener('submit', async (event) => {
    event.preventDefault();
    profileError.textContent = '';
    profileStatus.textContent = 'Saving…';
    try {
      const body = { display_name: name.value, timezone: zone.select.value };
      const user = await ctx.api('PATCH', '/v1/me', body);
      ctx.setMe(user);
      profileStatus.textContent = 'Saved.';
    } catch (e) {
      profileStatus.textContent = '';
      profileError.textContent = e.message;
    }
  });
  page.userChanged = () => {
    const u = ctx.me();
    if (!u) return;
    if (document.activeElement !== name) name.value = u.display_name;
  };

  // — password —
  const current = h('input', { type: 'password', name: 'current_password', required: true, autocomplete: 'current-password', maxlength: 1024 });
  const next = h('input', { type: 'password', name: 'new_password', required: true, minlength: 8, maxlength: 1024, autocomplete: 'new-password' });
  const passwordError = errorBox();
  const passwordStatus = status('password-status');
  const password = h('form', { class: 'card stack', id: 'password', 'aria-labelledby': 'password-h' },
    h('h2', { id: 'password-h' }, 'Password'),
    h('input', { type: 'text', name: 'username', autocomplete: 'username', value: me.email || '', hidden: true, readonly: true, 'aria-hidden': 'true', tabindex: '-1' }),
    field('Current password', current), field('New password', next, 'At least 8 characters. Your other devices are signed out; this one stays signed in.'),
    passwordError, h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Change password'), passwordStatus));
  password.addEventListener('submit', async (event) => {
    event.preventDefault();
    passwordError.textContent = '';
    passwordStatus.textContent = '';
    try {
      const r = await ctx.api('POST', '/v1/me/password', { current_password: current.value, new_password: next.value });
      current.value = '';
      next.value = '';
      passwordStatus.textContent = `Password changed. ${r.revoked ? `${r.revoked} other session${r.revoked === 1 ? ' was' : 's were'} signed out.` : 'No other session was signed in.'}`;
      loadSessions();
    } catch (e) {
      passwordError.textContent = e.code === 'CA021' ? 'Your current password is not right.' : e.message;
      (e.code === 'CA021' ? current : next).focus();
    }
  });

  // — sessions —
  const sessionList = h('ul', { class: 'sessions', id: 'session-list' }, h('li', { class: 'meta' }, 'Loading…'));
  const sessionsStatus = status('sessions-status');
  const others = h('button', { type: 'button', class: 'secondary', id: 'revoke-others' }, 'Sign out everywhere else');
  others.addEventListener('click', async () => {
    others.disabled = true;
    try {
      const r = await ctx.api('POST', '/v1/me/sessions/revoke-others');
      sessionsStatus.textContent = r.revoked ? `${r.revoked} other session${r.revoked === 1 ? ' was' : 's were'} signed out.` : 'No other session was signed in.';
      await loadSessions();
    } catch (e) {
      sessionsStatus.textContent = e.message;
    } finally {
      others.disabled = false;
    }
  });
  async function loadSessions() {
    try {
      const { sessions } = await ctx.api('GET', '/v1/me/sessions');
      replace(sessionList, sessions.map((s) => h('li', { class: 'session', id: `session-${s.id}` },
        h('div', {},
          h('strong', {}, describeAgent(s.user_agent)), s.current ? h('span', { class: 'badge' }, 'this browser') : null,
          h('p', { class: 'meta' }, [s.network ? `From ${s.network}` : null, `last used ${relativeTime(s.last_used_at) || 'now'}`,
            `signed in ${shortWhen(s.created_at)}`].filter(Boolean).join(' · '))),
        s.current ? null : confirmButton(`Sign out ${describeAgent(s.user_agent)}, last used ${relativeTime(s.last_used_at)}`, 'Sign out', `session-${s.id}`, async () => {
          try {
            await ctx.api('DELETE', `/v1/me/sessions/${enc(s.id)}`);
            sessionsStatus.textContent = 'That session is signed out.';
          } catch (e) { sessionsStatus.textContent = e.message; }
          loadSessions();
        }))));
      others.hidden = !sessions.some((s) => !s.current);
    } catch (e) {
      replace(sessionList, h('li', { class: 'error' }, e.message));
    }
  }
  const sessionsCard = h('section', { class: 'card stack', id: 'sessions', 'aria-labelledby': 'sessions-h' },
    h('h2', { id: 'sessions-h' }, 'Where you are signed in'), sessionList, h('div', { class: 'actions' }, others, sessionsStatus));

  // — synced settings —
  const settingsBox = h('div', { class: 'stack' }, h('p', { class: 'meta' }, 'Loading…'));
  const settingsError = errorBox();
  const settingsStatus = status('settings-status');
  const controls = new Map();
  const settingsForm = h('form', { class: 'card stack', id: 'synced-settings', 'aria-labelledby': 'synced-h' },
    h('h2', { id: 'synced-h' }, 'Alarm preferences'),
    h('p', { class: 'hint' }, 'Kept with your account: your phones and this browser share them.'),
    settingsBox, settingsError, h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Save preferences'), settingsStatus));
  const drawSettings = (doc) => {
    page.settings = doc;
    controls.clear();
    replace(settingsBox, SETTINGS_FIELDS.map(([key, type, label, a, b]) => {
      let control;
      if (type === 'boolean') {
        control = h('input', { type: 'checkbox', name: key, id: `setting-${key}`, checked: Boolean(doc[key]) });
        controls.set(key, control);
        return h('div', { class: 'check' }, control, h('label', { for: control.id }, label));
      }
      if (type === 'number') control = h('input', { type: 'number', name: key, min: a, max: b, step: 1, required: true, value: String(doc[key]) });
      else control = h('select', { name: key }, a.map(([v, text]) => h('option', { value: v, selected: doc[key] === v }, text)));
      control.id = `setting-${key}`;
      controls.set(key, control);
      return field(label, control);
    }));
  };
  page.settingsChanged = (doc) => { drawSettings(doc); flashChanged(settingsForm); };
  settingsForm.addEventListener('submit', async (event) => {
    event.preventDefault();
    settingsError.textContent = '';
    const body = { version: page.settings.version };
    for (const [key, type] of SETTINGS_FIELDS) {
      const c = controls.get(key);
      const value = type === 'boolean' ? c.checked : type === 'number' ? Number.parseInt(c.value, 10) : c.value;
      if (value !== page.settings[key]) body[key] = value;
    }
    try {
      drawSettings(await ctx.api('PATCH', '/v1/me/settings', body));
      settingsStatus.textContent = 'Saved.';
    } catch (e) {
      if (e.code === 'CA010' && e.current) drawSettings(e.current);
      settingsError.textContent = e.message;
    }
  });

  // — notifications and devices —
  const devices = h('ul', { class: 'devices', id: 'device-list' });
  async function loadDevices() {
    try {
      const r = await ctx.api('GET', '/v1/me/devices');
      replace(devices, r.devices.length ? r.devices.map((d) => h('li', {},
        `${d.platform === 'web' ? 'Browser' : d.platform} (${d.provider})`, h('span', { class: 'meta' }, ` · last seen ${relativeTime(d.last_seen_at || d.updated_at || d.created_at) || 'recently'}`)))
        : h('li', { class: 'meta' }, 'No device gets notifications yet.'));
    } catch (e) {
      replace(devices, h('li', { class: 'error' }, e.message));
    }
  }
  const push = pushSettings();
  push.querySelector('input').addEventListener('change', () => setTimeout(loadDevices, 0));
  push.append(h('h3', {}, 'Devices that get notifications'), devices,
    h('p', { class: 'hint' }, 'Each group can be muted on its own page.'));

  // — plan —
  const planBox = h('div', { class: 'stack' }, h('p', { class: 'hint' }, 'Loading…'));
  const plan = h('section', { class: 'card stack', id: 'plan', 'aria-labelledby': 'plan-h' },
    h('h2', { id: 'plan-h' }, 'Plan'), planBox);
  const TIER_NAMES = { free: 'Free', plus: 'Plus', premium: 'Premium' };
  const STATE_WORDS = {
    active: 'Active', grace: 'Payment problem — still active while the store retries',
    billing_retry: 'Ended: the store could not renew it', expired: 'Ended', revoked: 'Refunded or revoked', none: '',
  };
  const SOURCE_WORDS = { app_store: 'App Store', play: 'Google Play', operator: 'Granted by the server operator' };
  function drawPlan(e) {
    const lines = [h('p', { class: 'plan-tier' }, h('strong', {}, TIER_NAMES[e.tier] || e.tier))];
    if (e.state !== 'none') {
      lines.push(h('p', { class: 'meta' }, [STATE_WORDS[e.state] || e.state, e.source ? SOURCE_WORDS[e.source] || e.source : '', e.product_id || '']
        .filter(Boolean).join(' · ')));
    }
    if (e.expires_at) {
      const verb = e.state === 'active' ? (e.auto_renewing ? 'Renews' : 'Ends') : 'Ended';
      lines.push(h('p', { class: 'meta' }, `${verb} ${shortWhen(e.expires_at)} (${relativeTime(e.expires_at)})`));
    }
    if (e.grace_expires_at && e.state === 'grace') lines.push(h('p', { class: 'meta' }, `Access until ${shortWhen(e.grace_expires_at)}`));
    lines.push(h('p', { class: 'hint' }, e.source === 'app_store' || e.source === 'play'
      ? 'Manage or cancel the subscription in the store on your phone.'
      : 'Subscriptions are bought in the Chronir apps.'));
    replace(planBox, lines);
  }
  const loadPlan = () => ctx.api('GET', '/v1/me/entitlement').then(drawPlan, (e) => { replace(planBox, h('p', { class: 'error' }, e.message)); });
  page.entitlementChanged = (doc) => { drawPlan(doc); flashChanged(plan); };

  replace(ctx.main, h('h1', {}, 'Settings'),
    h('nav', { class: 'toc', 'aria-label': 'On this page' }, h('ul', {},
      [['#profile', 'Profile'], ['#plan', 'Plan'], ['#password', 'Password'], ['#sessions', 'Sessions'], ['#synced-settings', 'Alarm preferences'], ['#push-settings', 'Notifications']]
        .map(([href, text]) => h('li', {}, h('a', { href, class: 'in-page' }, text))))),
    profile, plan, password, sessionsCard, settingsForm, push);
  ctx.focusHeading();
  loadPlan();
  loadSessions();
  loadDevices();
  ctx.api('GET', '/v1/me/settings').then(drawSettings, (e) => { replace(settingsBox, h('p', { class: 'error' }, e.message)); });
  return page;
}

/** "Chrome on Linux" from a User-Agent, or what little it says. */
export function describeAgent(ua) {
  if (!ua) return 'An unknown device';
  const browser = /Edg\//.test(ua) ? 'Edge' : /Firefox\//.test(ua) ? 'Firefox' : /Chrom(e|ium)\//.test(ua) ? 'Chrome'
    : /Safari\//.test(ua) ? 'Safari' : /^Chronir/i.test(ua) ? 'The Chronir app' : null;
  const os = /Android/.test(ua) ? 'Android' : /iPhone|iPad/.test(ua) ? 'iOS' : /Mac OS X/.test(ua) ? 'macOS'
    : /Windows/.test(ua) ? 'Windows' : /Linux/.test(ua) ? 'Linux' : null;
  if (browser && os) return `${browser} on ${os}`;
  return browser || os || ua.slice(0, 60);
}
