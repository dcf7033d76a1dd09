// The Chronir web client: routing (History API), the signed-in user, and the pages that aren't a group.
// Pages: / (my groups, or sign-in), /login, /register, /groups/<id> (and /group/<id>, /alarm/<id>: the apps' links), /join/<CODE>, /invite/<token>,
// /verify-email#<token> and /reset-password[#<token>] (the links in mails, docs/mail.md), /settings
// (settings.js), /alarms (my personal alarms, myalarms.js) and /tasks (my shared alarms across groups, tasks.js).

import { api, session, enc } from './api.js';
import { tierText } from './errors.js';
import { h, replace, field, flashChanged, pauseForOffline, groupBadge } from './dom.js';
import { Realtime } from './realtime.js';
import { Outbox } from './outbox.js';
import { providerSignIn, isProviderReturn, returnedSignIn } from './signin.js';
import { shortWhen } from './schedule.js';
import { GroupPage } from './group.js';
import { pushSettings, registerWorker } from './push.js';
import { settingsPage } from './settings.js';
import { myAlarmsPage } from './myalarms.js';
import { tasksPage } from './tasks.js';
import { setViewerZone, setDisplayPrefs } from './schedule.js';

/** Group topics My groups subscribes to at most (the server allows 50 topics per connection, `user` is one). */
const MAX_WATCHED_GROUPS = 45;

const main = document.getElementById('main');
const accountNav = document.getElementById('account-nav');
const connection = document.getElementById('connection');
const flashBox = document.getElementById('flash');
const offlineNote = document.getElementById('offline-note');
const outboxStatus = document.getElementById('outbox-status');

/** What the page knows; `user` topic snapshots and changes keep it current. */
const state = { me: null, groups: new Map(), invitations: new Map(), page: null };

const realtime = new Realtime(() => session.active, {
  state: showConnection,
  sessionEnded: () => endSession('Your session ended. Please sign in again.'),
});

/** Answers made while the server could not be reached, sent when it can (outbox.js). */
const outbox = new Outbox({
  api,
  userId: () => (state.me ? state.me.id : null),
  changed: showOutbox,
  sent: (entries) => flash(entries.length === 1
    ? `Sent now that the connection is back: ${entries[0].label} (made offline at ${shortWhen(entries[0].at)}).`
    : `Sent now that the connection is back: ${entries.map((e) => e.label).join('; ')}.`, 'ok'),
  refused: (entry, error) => flash(`Not sent: ${entry.label}. ${error.code === 'CA033' ? 'That occurrence closed meanwhile.' : error.message}`, 'error'),
});

/** The header's count of actions waiting to be sent; the page redraws its own marks. */
function showOutbox() {
  const waiting = outbox.mine().length;
  outboxStatus.hidden = waiting === 0;
  outboxStatus.textContent = waiting === 1 ? '1 action waiting to be sent' : `${waiting} actions waiting to be sent`;
  if (state.page && state.page.rerender) state.page.rerender();
}

// — flash messages and connection state —

let keepFlash = false;
/** Shows a message (null clears it); it survives the next page change, then goes. */
export function flash(message, kind = 'info') {
  keepFlash = Boolean(message);
  replace(flashBox, message ? h('p', { class: `flash ${kind}` }, message,
    h('button', { type: 'button', class: 'link', 'aria-label': 'Dismiss message', onclick: () => flash(null) }, '×')) : null);
}

// A message belongs to the action that caused it: the next action on the page clears it ("The group
// is saved." once stayed after saving an alarm), before that action's own message, if
// any, arrives. An action is a press of a button or a link in the page, a submitted form, or a changed
// choice (a switch, a select, a chosen file); buttons that only change the page (`data-local`: Details,
// Less) and typing are not. Navigation clears it too (render), except the one message a page change
// carries over (`keepFlash`: "You were removed from …").
main.addEventListener('click', (event) => {
  if (event.target.closest('button:not([data-local]), a[href], input[type="submit"]')) flash(null);
}, true);
main.addEventListener('change', (event) => {
  if (event.target.matches('select, input[type="checkbox"], input[type="radio"], input[type="file"]')) flash(null);
}, true);

// Keyboard focus is never lost to <body>. Pages put focus where an action leads
// (the new card after Create, the button that opened a form after Cancel); when a re-render removes the
// focused element anyway (✓ becomes a mark, a card leaves My tasks), focus goes to the same control
// drawn again (its data-key or id), else into the nearest part of the page that is still there (the
// card, then the list, then the section: its first control), else to the page's heading. Only a
// removal moves focus: a click on the page's background leaves it on <body> as the browser does.
let lastFocus = null; // {el, key, id, ancestors}
document.addEventListener('focusin', (event) => {
  const el = event.target;
  if (!main.contains(el)) { lastFocus = null; return; }
  const ancestors = [];
  for (let p = el.parentElement; p && p !== main; p = p.parentElement) ancestors.push(p);
  lastFocus = { el, key: el.dataset ? el.dataset.key : null, id: el.id || null, ancestors };
});
const FOCUSABLE = 'button:not(:disabled), a[href], input:not(:disabled):not([type="hidden"]), select:not(:disabled), textarea:not(:disabled), summary';

function keepFocus() {
  if (!lastFocus || lastFocus.el.isConnected) return;
  if (document.activeElement && document.activeElement !== document.body) return;
  if (lastFocus.el.tagName === 'H1') { focusMainHeading(); return; } // the heading drawn again keeps it
  const visible = (el) => el && el.getClientRects().length > 0;
  const same = (lastFocus.key && main.querySelector(`[data-key="${CSS.escape(lastFocus.key)}"]`))
    || (lastFocus.id && document.getElementById(lastFocus.id));
  let target = visible(same) && same.matches(FOCUSABLE) ? same : null;
  for (const old of lastFocus.ancestors) {
    if (target) break;
    const place = old.isConnected ? old : (old.id && document.getElementById(old.id));
    if (place && main.contains(place)) target = [...place.querySelectorAll(FOCUSABLE)].find(visible) || null;
  }
  if (!target) { focusMainHeading(); return; }
  target.focus({ preventScroll: true });
}
new MutationObserver(keepFocus).observe(main, { childList: true, subtree: true });

function showConnection({ state: s, detail }) {
  connection.hidden = !session.active;
  connection.dataset.state = s;
  const text = { live: 'Live', connecting: 'Connecting…', reconnecting: 'Reconnecting…', offline: 'Offline' }[s] || s;
  connection.querySelector('.conn-text').textContent = detail ? `${text} (${detail})` : text;
  connection.title = s === 'live' ? 'Changes appear as they happen' : 'Changes will appear when the connection is back';
  // A stopped feed (sign-out, a session that ended) is not a network problem.
  setOffline(Boolean(session.active) && !realtime.stopped && (s === 'offline' || s === 'reconnecting'), realtime.stopped);
  if (s === 'live' && state.me) outbox.flush();
}

/** Whether actions should be queued rather than sent now. */
function isOffline() { return offline; }

/** While the connection is down: a sticky notice, and the page's actions disabled (nothing would be
 *  sent) except answers, which are queued (`data-queue`, outbox.js), and buttons that only change the
 *  page (`data-local`); they come back with the connection. Sign-out stays (it works offline too). */
let offline = false;
function setOffline(on, quiet = false) {
  if (on === offline) return;
  offline = on;
  document.body.classList.toggle('disconnected', on);
  offlineNote.hidden = !on;
  if (on) {
    pauseForOffline(main);
  } else {
    for (const el of main.querySelectorAll('[data-offline]')) { el.disabled = false; delete el.dataset.offline; }
    if (!quiet && !outbox.mine().length) flash('The connection is back: the page is current again.', 'ok');
  }
}

// — routing —

// Back and Forward return to where the page was scrolled: each history entry keeps
// its scroll position in its state, written as the page is left; a page drawn again after Back scrolls
// there once it is tall enough (a group page draws after its snapshot arrives), or gives up after
// SCROLL_RESTORE_MS. The browser's own restoration cannot know when a page drawn by script is ready.
history.scrollRestoration = 'manual';
const SCROLL_RESTORE_MS = 3000;

function rememberScroll() {
  history.replaceState({ ...(history.state || {}), scrollY: window.scrollY }, '', location.href);
}

function restoreScroll(y) {
  if (!y) return;
  const until = Date.now() + SCROLL_RESTORE_MS;
  const attempt = () => {
    if (document.documentElement.scrollHeight - window.innerHeight >= y) { window.scrollTo(0, y); return; }
    if (Date.now() < until) requestAnimationFrame(attempt);
    else window.scrollTo(0, y);
  };
  requestAnimationFrame(attempt);
}

export function navigate(path, { replaceState = false } = {}) {
  if (replaceState) history.replaceState(null, '', path);
  else { rememberScroll(); history.pushState(null, '', path); window.scrollTo(0, 0); }
  render();
}

document.addEventListener('click', (event) => {
  const a = event.target.closest('a[href]');
  if (!a || a.target || a.hasAttribute('download') || event.ctrlKey || event.metaKey || event.shiftKey) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || url.pathname.startsWith('/v1/') || url.pathname === '/healthz') return;
  if (url.pathname === location.pathname && url.hash) return; // a link within the page
  event.preventDefault();
  navigate(url.pathname);
});
window.addEventListener('popstate', (event) => {
  render();
  restoreScroll(event.state && event.state.scrollY);
});
// The position of the entry being left by Back (popstate comes after the change): kept as it scrolls.
let scrollSaver = null;
window.addEventListener('scroll', () => {
  clearTimeout(scrollSaver);
  scrollSaver = setTimeout(rememberScroll, 150);
}, { passive: true });

function render() {
  if (!keepFlash) flash(null);
  keepFlash = false;
  if (state.page && state.page.close) state.page.close();
  state.page = null;
  const parts = location.pathname.split('/').filter(Boolean).map(decodeURIComponent);
  renderAccountNav();
  const signedIn = Boolean(session.active);
  if (parts[0] === 'join' && parts[1]) return landing({ kind: 'join', value: parts[1] });
  if (parts[0] === 'invite' && parts[1]) return landing({ kind: 'invite', value: parts[1] });
  if (parts[0] === 'verify-email') return verifyEmailPage();
  if (parts[0] === 'reset-password') return resetPasswordPage();
  if (parts[0] === 'register' && !signedIn) return authPage('register');
  if (parts[0] === 'login' && !signedIn && isProviderReturn()) return providerReturnPage();
  if (parts[0] === 'login' && !signedIn) return authPage('login');
  if (!signedIn) return welcome();
  const ctx = { main, api, realtime, navigate, flash, focusHeading, me: () => state.me, setMe, groups: () => state.groups, outbox, isOffline };
  if (parts[0] === 'settings' && parts.length === 1) { state.page = settingsPage(ctx); return undefined; }
  if (parts[0] === 'alarms' && parts.length === 1) { state.page = myAlarmsPage(ctx); return undefined; }
  if (parts[0] === 'tasks' && parts.length === 1) { state.page = tasksPage(ctx); return undefined; }
  // The apps' deep links (docs/apps.md#deep-links) opened in a browser: the same pages.
  if (parts[0] === 'group' && parts[1] && parts.length === 2) return navigate(`/groups/${enc(parts[1])}`, { replaceState: true });
  if (parts[0] === 'alarm' && parts[1] && parts.length === 2) { openAlarmLink(parts[1]); return undefined; }
  if (parts[0] === 'groups' && parts[1]) {
    state.page = new GroupPage({ main, api, realtime, navigate, flash, me: () => state.me, groupId: parts[1], outbox, isOffline });
    return state.page.open();
  }
  if (parts.length && parts[0] !== 'groups') return navigate('/', { replaceState: true });
  return groupsPage();
}

/** `/alarm/<id>`: a personal alarm opens My alarms; a shared one its group's page (found among the
 *  caller's shared alarms); anything else returns to My groups. */
async function openAlarmLink(id) {
  const here = location.pathname;
  let target = '/';
  try {
    await api('GET', `/v1/me/alarms/${enc(id)}`);
    target = '/alarms';
  } catch {
    let cursor = null;
    for (let page = 0; page < 20 && target === '/'; page += 1) {
      let list;
      try { list = await api('GET', `/v1/me/shared-alarms?limit=100${cursor ? `&cursor=${enc(cursor)}` : ''}`); } catch { break; }
      const found = (list.alarms || []).find((a) => a.id === id);
      if (found) target = `/groups/${enc(found.group_id)}`;
      cursor = list.next_cursor;
      if (!cursor) break;
    }
  }
  if (location.pathname !== here) return; // the user moved on meanwhile
  if (target === '/') flash('That alarm is not one of yours (it may have been deleted).', 'error');
  navigate(target, { replaceState: true });
}

/** Focuses the page's heading (never scrolling: navigation scrolled to the top, Back to where it was). */
function focusMainHeading() {
  const heading = main.querySelector('h1');
  if (heading) { heading.tabIndex = -1; heading.focus({ preventScroll: true }); }
  return heading;
}

function focusHeading() {
  const heading = focusMainHeading();
  const text = heading ? heading.textContent.trim() : '';
  document.title = text && text !== 'Chronir' ? `${text} · Chronir` : 'Chronir';
}

/** The signed-in user changed (settings page, `user` feed). */
function setMe(user) {
  state.me = user;
  renderAccountNav();
}

function renderAccountNav() {
  setViewerZone(state.me && state.me.timezone);
  if (session.active && state.me) {
    const here = location.pathname;
    // "My " is a part of its own: a phone's one-line header shows "Groups", "Tasks", "Alarms" (app.css).
    const link = (href, text) => h('a', { href, 'aria-current': here === href ? 'page' : null },
      text.startsWith('My ') ? [h('span', { class: 'nav-my' }, 'My '), text.slice(3)] : text);
    replace(accountNav, link('/', 'My groups'), link('/tasks', 'My tasks'), link('/alarms', 'My alarms'), link('/settings', 'Settings'),
      h('span', { class: 'who' }, state.me.display_name),
      h('button', { type: 'button', class: 'link', onclick: logout }, 'Sign out'));
  } else if (session.active) {
    replace(accountNav, h('button', { type: 'button', class: 'link', onclick: logout }, 'Sign out'));
  } else {
    replace(accountNav, h('a', { href: '/login' }, 'Sign in'), ' ', h('a', { href: '/register' }, 'Create account'));
  }
}

// — session —

async function startSession(result) {
  session.active = true;
  state.me = result.user;
  realtime.start();
  subscribeUser();
}

/** The synced settings the web client follows: the 12/24-hour clock once the user has chosen one. */
function applySettings(doc) {
  setDisplayPrefs({ hour12: doc && doc.version > 0 ? !doc.use_24_hour_format : undefined });
  if (state.page && state.page.rerender) state.page.rerender();
}

function loadSettings() {
  api('GET', '/v1/me/settings').then(applySettings, () => { /* the language's own clock meanwhile */ });
}

function subscribeUser() {
  loadSettings();
  realtime.subscribe('user', {
    snapshot(msg) {
      state.me = msg.data.user;
      state.groups = new Map(msg.data.groups.map((g) => [g.id, g]));
      state.invitations = new Map((msg.data.invitations || []).map((i) => [i.id, i]));
      renderAccountNav();
      showOutbox();
      outbox.flush(); // answers queued in an earlier visit, now that the user is known and the socket is up
      if (state.page && state.page.userChanged) state.page.userChanged();
      if (state.page && state.page.kind === 'groups') state.page.refresh();
      if (state.page && state.page.kind === 'tasks') state.page.groupsChanged();
    },
    change(msg) {
      const touched = [];
      for (const c of msg.changes) {
        if (c.kind === 'group') {
          if (c.op === 'removed') state.groups.delete(c.id);
          else if (c.doc) { state.groups.set(c.id, c.doc); touched.push(`group-${c.id}`); }
        } else if (c.kind === 'invitation') {
          if (c.op === 'removed' || (c.doc && c.doc.status !== 'pending') || (c.doc && c.doc.invitee_email !== state.me.email)) state.invitations.delete(c.id);
          else if (c.doc) { state.invitations.set(c.id, c.doc); touched.push(`invitation-${c.id}`); }
        } else if (c.kind === 'user' && c.doc) {
          state.me = c.doc;
          renderAccountNav();
          if (state.page && state.page.userChanged) state.page.userChanged();
        } else if (c.kind === 'entitlement' && c.doc) {
          if (state.page && state.page.kind === 'settings') state.page.entitlementChanged(c.doc);
        } else if (c.kind === 'settings' && c.doc) {
          applySettings(c.doc);
          if (state.page && state.page.kind === 'settings') state.page.settingsChanged(c.doc);
        } else if (c.kind === 'personal_alarm') {
          if (state.page && state.page.kind === 'alarms') state.page.alarmChanged(c);
        } else if (c.kind === 'attachment') {
          if (state.page && state.page.kind === 'alarms') state.page.attachmentChanged(c);
        } else if (c.kind === 'member' && c.doc) {
          const g = state.groups.get(c.doc.group_id);
          if (g) touched.push(`group-${g.id}`);
        }
      }
      if (state.page && state.page.kind === 'groups') state.page.refresh(touched);
      if (state.page && state.page.kind === 'tasks' && msg.changes.some((c) => c.kind === 'group')) state.page.groupsChanged();
    },
    revoked() {},
    error() {},
  });
}

function endSession(message) {
  if (state.me) outbox.clear(state.me.id);
  session.active = false;
  state.me = null;
  setDisplayPrefs({ hour12: undefined });
  state.groups.clear();
  state.invitations.clear();
  realtime.stop();
  connection.hidden = true;
  flash(message, message ? 'warn' : 'info');
  navigate('/');
}

async function logout() {
  realtime.stop(); // before the server closes our socket with 4003
  try { await api('POST', '/v1/auth/logout'); } catch { /* the token is dropped either way */ }
  endSession('You are signed out.');
}

// — pages —

function welcome() {
  replace(main,
    h('h1', {}, 'Chronir'),
    h('p', { class: 'lead' }, 'Shared recurring obligations — the rent, the HVAC filter, the weekly backup check — for a household or a team. Everyone sees who has done what, live.'),
    h('p', {}, h('a', { class: 'button', href: '/login' }, 'Sign in'), ' ', h('a', { class: 'button secondary', href: '/register' }, 'Create an account')));
  focusHeading();
}

/** /login#id_token=…: back from Apple or Google (signin.js); the token goes to POST /v1/auth/oidc. */
async function providerReturnPage() {
  const status = h('p', { role: 'status' }, 'Signing you in…');
  replace(main, h('h1', {}, 'Sign in'), status);
  focusHeading();
  const body = returnedSignIn();
  try {
    if (body instanceof Error) throw body;
    await startSession(await api('POST', '/v1/auth/oidc', body));
    navigate('/', { replaceState: true });
  } catch (e) {
    replace(main, h('h1', {}, 'Sign in'), h('p', { class: 'error', role: 'alert' }, e.message), authForm('login'));
    focusHeading();
  }
}

function authPage(mode, after) {
  replace(main, h('h1', {}, mode === 'login' ? 'Sign in' : 'Create an account'), authForm(mode, after), providerSignIn(api),
    h('p', {}, mode === 'login'
      ? ['No account yet? ', h('a', { href: '/register' }, 'Create one'), ' · ', h('a', { href: '/reset-password' }, 'Forgot your password?')]
      : ['Already have an account? ', h('a', { href: '/login' }, 'Sign in')]));
  focusHeading();
}

/** The token a mailed link carries in its fragment (never sent to the server by the browser). */
function linkToken() {
  return decodeURIComponent(location.hash.replace(/^#/, ''));
}

/** /verify-email#<token>: uses the verification link, says what happened. */
async function verifyEmailPage() {
  const status = h('p', { role: 'status' }, 'Confirming your address…');
  replace(main, h('h1', {}, 'Confirm your email address'), status);
  focusHeading();
  const token = linkToken();
  if (!token) { status.textContent = 'This link is incomplete: open the whole link from the mail.'; return; }
  try {
    const user = await api('POST', '/v1/auth/verify-email', { token });
    history.replaceState(null, '', '/verify-email');
    status.textContent = `Thank you: ${user.email} is confirmed.`;
    if (session.active) state.me = user;
  } catch (e) {
    status.textContent = e.code === 'CA040'
      ? 'This link does not work any more: it was used already or is older than 24 hours. Sign in and ask for a new one.'
      : e.message;
  }
}

/** /reset-password: asks for a link; /reset-password#<token>: sets the new password. */
function resetPasswordPage() {
  const token = linkToken();
  const error = h('p', { class: 'error', role: 'alert' });
  const status = h('p', { role: 'status' });
  if (!token) {
    const email = h('input', { type: 'email', name: 'email', required: true, autocomplete: 'email' });
    const form = h('form', { class: 'card stack', 'aria-label': 'Reset your password' },
      field('Email', email), error, h('button', { type: 'submit' }, 'Mail me a link'));
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      error.textContent = '';
      try {
        await api('POST', '/v1/auth/password-reset', { email: email.value });
        status.textContent = 'If an account has this address, a link to reset its password is on its way. It works for one hour.';
      } catch (e) { error.textContent = e.message; }
    });
    replace(main, h('h1', {}, 'Reset your password'), form, status);
    focusHeading();
    return;
  }
  const password = h('input', { type: 'password', name: 'password', required: true, minlength: 8, maxlength: 1024, autocomplete: 'new-password' });
  const form = h('form', { class: 'card stack', 'aria-label': 'Choose a new password' },
    field('New password', password, 'At least 8 characters. Every device signs out.'), error,
    h('button', { type: 'submit' }, 'Set password'));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.textContent = '';
    try {
      await api('POST', '/v1/auth/password-reset/confirm', { token, password: password.value });
      history.replaceState(null, '', '/reset-password');
      replace(main, h('h1', {}, 'Password changed'),
        h('p', {}, 'Every device was signed out. ', h('a', { href: '/login' }, 'Sign in'), ' with the new password.'));
      focusHeading();
    } catch (e) {
      error.textContent = e.code === 'CA040'
        ? 'This link does not work any more: it was used already or is older than an hour. Ask for a new one.'
        : e.message;
    }
  });
  replace(main, h('h1', {}, 'Choose a new password'), form);
  focusHeading();
}

/** The register or sign-in form; `after` runs once signed in (default: go to my groups). */
function authForm(mode, after) {
  const email = h('input', { type: 'email', name: 'email', required: true, autocomplete: 'email' });
  const password = h('input', {
    type: 'password', name: 'password', required: true, minlength: 8, maxlength: 1024,
    autocomplete: mode === 'login' ? 'current-password' : 'new-password',
  });
  const name = h('input', { type: 'text', name: 'display_name', required: true, maxlength: 100, autocomplete: 'nickname' });
  const error = h('p', { class: 'error', role: 'alert' });
  const submit = h('button', { type: 'submit' }, mode === 'login' ? 'Sign in' : 'Create account');
  const form = h('form', { class: 'card stack', 'aria-label': mode === 'login' ? 'Sign in' : 'Create an account', novalidate: false },
    mode === 'register' ? field('Your name (shown to your groups)', name) : null,
    field('Email', email),
    field('Password', password, mode === 'register' ? 'At least 8 characters.' : null),
    error, submit);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.textContent = '';
    submit.disabled = true;
    try {
      const body = { email: email.value, password: password.value };
      if (mode === 'register') {
        body.display_name = name.value;
        // The browser's zone, saved with the account (/v1/me.timezone was null).
        const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
        if (zone) body.timezone = zone;
      }
      let result = await api('POST', mode === 'login' ? '/v1/auth/login' : '/v1/auth/register', body);
      // With mail configured, registration answers 202 without a session (the same for a taken
      // address, docs/mail.md#registration): sign in with the password just chosen.
      if (!result.expires_at) result = await api('POST', '/v1/auth/login', { email: email.value, password: password.value });
      await startSession(result);
      flash(null);
      if (after) after(); else navigate('/');
    } catch (e) {
      error.textContent = e.message;
      const target = { email, password, display_name: name }[e.field];
      if (target) target.focus();
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}

/**
 * My groups subscribes to the `group:<id>` topic of every group it lists: the `user` feed only says
 * which groups were gained or lost, while a rename, a new description or a member joining or leaving
 * reaches only the group's own topic. Each group's active members are counted from its snapshot and
 * member changes; the topics are dropped when the page closes.
 */
function watchGroups(page) {
  const watched = new Map(); // group id → Set of active member ids
  const topic = (id) => `group:${id}`;
  const forget = (id) => { watched.delete(id); state.groups.delete(id); page.refresh(); };
  const handler = (id) => ({
    snapshot(msg) {
      const members = new Set(msg.data.members.filter((m) => !m.status || m.status === 'active').map((m) => m.user_id));
      watched.set(id, members);
      state.groups.set(id, { ...msg.data.group, member_count: members.size });
      page.refresh();
    },
    change(msg) {
      const members = watched.get(id) || new Set();
      let group = state.groups.get(id);
      if (!group) return;
      for (const c of msg.changes) {
        if (c.kind === 'group' && c.doc) group = { ...c.doc };
        else if (c.kind === 'member') {
          const userId = c.doc ? c.doc.user_id : String(c.id).split(':').pop();
          if (c.op === 'removed' || !c.doc || c.doc.status !== 'active') members.delete(userId);
          else members.add(userId);
        }
      }
      watched.set(id, members);
      state.groups.set(id, { ...group, member_count: members.size || group.member_count });
      page.refresh([`group-${id}`]);
    },
    revoked() { forget(id); },
    error(msg) { if (msg.code === 'not_found') forget(id); },
  });
  return {
    sync() {
      const wanted = new Set([...state.groups.keys()].slice(0, MAX_WATCHED_GROUPS));
      for (const id of [...watched.keys()]) {
        if (!wanted.has(id)) { realtime.unsubscribe(topic(id)); watched.delete(id); }
      }
      for (const id of wanted) {
        if (!watched.has(id)) { watched.set(id, null); realtime.subscribe(topic(id), handler(id)); }
      }
    },
    close() {
      for (const id of watched.keys()) realtime.unsubscribe(topic(id));
      watched.clear();
    },
  };
}

function groupsPage() {
  const list = h('ul', { class: 'cards', id: 'group-list' });
  const invites = h('section', { id: 'my-invitations' });
  let watcher = null;
  const page = {
    kind: 'groups',
    close() { if (watcher) watcher.close(); },
    refresh(touched = []) {
      if (watcher) watcher.sync();
      const groups = [...state.groups.values()].sort((a, b) => a.name.localeCompare(b.name));
      replace(list, groups.length ? groups.map((g) => h('li', { id: `group-${g.id}`, class: 'card group-card' },
        h('h2', { class: 'card-title' }, groupBadge(g), h('a', { href: `/groups/${enc(g.id)}` }, g.name)),
        g.description ? h('p', {}, g.description) : null,
        h('p', { class: 'meta member-count' }, `${g.member_count} member${g.member_count === 1 ? '' : 's'}`))) :
        h('li', { class: 'empty' }, 'You are not in any group yet. Create one below, or open a join link someone sent you.'));
      const pending = [...state.invitations.values()];
      if (pending.length) invites.setAttribute('aria-labelledby', 'inv-h'); else invites.removeAttribute('aria-labelledby');
      replace(invites, pending.length ? [h('h2', { id: 'inv-h' }, 'Invitations for you'),
        h('ul', { class: 'cards' }, pending.map((inv) => h('li', { class: 'card', id: `invitation-${inv.id}` },
          h('p', {}, `You are invited to join ${inv.group_name || 'a group'} as ${inv.role}.`),
          h('div', { class: 'actions' },
            h('button', { type: 'button', onclick: () => answerInvitation(inv, 'accept') }, 'Accept'),
            h('button', { type: 'button', class: 'secondary', onclick: () => answerInvitation(inv, 'decline') }, 'Decline')))))] : null);
      for (const id of touched) flashChanged(document.getElementById(id));
      const premium = !state.me || state.me.tier === 'premium';
      create.hidden = !premium;
      createRefused.hidden = premium;
    },
  };
  const name = h('input', { type: 'text', required: true, maxlength: 100 });
  const description = h('input', { type: 'text', maxlength: 500 });
  const error = h('p', { class: 'error', role: 'alert' });
  const create = h('form', { class: 'card stack', 'aria-labelledby': 'new-group-h', id: 'create-group' },
    h('h2', { id: 'new-group-h' }, 'Create a group'),
    field('Name', name), field('Description (optional)', description), error,
    h('button', { type: 'submit' }, 'Create group'));
  // Creating groups needs premium: another tier is told so instead of being offered a form it would be refused.
  const createRefused = h('section', { class: 'card', id: 'create-group-tier', 'aria-labelledby': 'new-group-tier-h', hidden: true },
    h('h2', { id: 'new-group-tier-h' }, 'Create a group'),
    h('p', { class: 'notice' }, tierText('Creating a group needs', 'a Premium account'), ' You can still join groups others invite you to.'));
  create.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.textContent = '';
    try {
      const body = { name: name.value };
      if (description.value.trim()) body.description = description.value;
      const result = await api('POST', '/v1/groups', body);
      state.groups.set(result.group.id, result.group);
      navigate(`/groups/${enc(result.group.id)}`);
    } catch (e) {
      error.textContent = e.code === 'CA002' ? `${tierText('Creating a group needs', 'a Premium account')} You can still join groups others invite you to.` : e.message;
    }
  });
  replace(main, h('h1', {}, 'My groups'), list, invites, joinByCode(), create, createRefused, pushSettings());
  state.page = page;
  watcher = watchGroups(page);
  page.refresh();
  focusHeading();
}

/** An invite code as typed (" k7p-2qx ") in the server's form ("K7P2QX"), or null when it is not 6
 *  letters and digits once spaces, dashes and dots are gone. */
export function inviteCodeFrom(typed) {
  const code = String(typed).replace(/[\s\-‐-―.]/g, '').toUpperCase();
  return /^[A-Z0-9]{6}$/.test(code) ? code : null;
}

/** A field to type an invite code someone read out or sent: it opens the join page for that code. */
function joinByCode() {
  // Forgiving: spaces, dashes and dots someone typed or pasted go, lower case is
  // upper case; what is left must be the code's 6 letters and digits.
  const code = h('input', { type: 'text', name: 'invite_code', required: true, maxlength: 20, autocomplete: 'off',
    autocapitalize: 'characters', spellcheck: 'false', class: 'code', 'aria-describedby': 'join-code-error' });
  const error = h('p', { class: 'error', role: 'alert', id: 'join-code-error' });
  const form = h('form', { class: 'card stack', 'aria-labelledby': 'join-code-h', id: 'join-by-code' },
    h('h2', { id: 'join-code-h' }, 'Join with a code'),
    field('Invite code', code, 'The 6 characters someone gave you, e.g. K7P2QX.'), error,
    h('button', { type: 'submit' }, 'Continue'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const typed = inviteCodeFrom(code.value);
    if (!typed) { error.textContent = 'An invite code is 6 letters and digits, e.g. K7P2QX.'; code.focus(); return; }
    navigate(`/join/${enc(typed)}`);
  });
  return form;
}

async function answerInvitation(inv, action) {
  try {
    const result = await api('POST', `/v1/invitations/${enc(inv.id)}/${action}`);
    state.invitations.delete(inv.id);
    if (action === 'accept') navigate(`/groups/${enc(result.group.id)}`);
    else if (state.page && state.page.refresh) state.page.refresh();
  } catch (e) {
    flash(e.message, 'error');
  }
}

/** Words for a landing page's refusal: the join's own, or the preview's (the same codes). */
function landingRefusal(e) {
  return e.code === 'CA031' ? 'This invite code does not work: it may have expired, been replaced or disabled. Ask for a new link.'
    : e.code === 'CA052' ? 'You are no longer in this group, and this code was made before you left. Ask an owner or admin for a new code or an invitation.'
    : e.code === 'CA004' ? 'This invitation has expired. Ask for a new one.'
      : e.code === 'CA005' ? 'This invitation has already been used.'
        : e.code === 'CA003' ? 'This group is full.'
          : e.status === 404 ? 'This invitation link does not work: it may have been revoked. Ask for a new one.' : e.message;
}

/** "3 members" / "1 member". */
function memberCount(n) { return `${n} member${n === 1 ? '' : 's'}`; }

/** /join/<CODE> and /invite/<token>: who invited you to which group (the server's preview: name, colour,
 *  icon, member count, inviter — `GET /v1/join/{code}` is a join attempt to the server's limiter, so the
 *  page asks once), then sign in or register, then join. A code or link that does not work says so and
 *  offers no form. */
async function landing({ kind, value }) {
  const code = kind === 'join' ? value.toUpperCase() : null;
  const pagePath = location.pathname;
  let preview = null;
  let refusal = null;
  try {
    preview = await api('GET', kind === 'join' ? `/v1/join/${enc(code)}` : `/v1/invitations/${enc(value)}`);
  } catch (e) {
    // A network failure or a stale session keeps the generic words; a refusal is the answer.
    if (e.status !== 0 && e.status !== 401) refusal = landingRefusal(e);
  }
  if (location.pathname !== pagePath) return; // the user moved on while the preview was on its way
  const heading = h('h1', {}, preview
    ? [groupBadge({ color_tag: preview.color_tag, icon_name: preview.icon_name }),
      preview.invited_by_name ? `${preview.invited_by_name} invited you to join ${preview.group_name}` : `You are invited to join ${preview.group_name}`]
    : kind === 'join' ? 'Join a group on Chronir' : 'You have been invited to a group');
  const facts = preview ? h('p', { class: 'lead', id: 'landing-facts' }, `${preview.group_name} has ${memberCount(preview.member_count)} on Chronir.`) : null;
  // The signed-in caller's own standing: already in says so; a former member this code does
  // not admit is told what will (the join would answer 403 CA052).
  if (preview && preview.your_membership === 'active') {
    replace(main, heading, facts, h('p', { id: 'landing-member' }, `You are already in ${preview.group_name}.`),
      h('p', {}, h('a', { href: '/' }, 'Go to my groups')));
    focusHeading();
    return;
  }
  if (preview && preview.your_membership === 'needs_new_invite') refusal = landingRefusal({ code: 'CA052' });
  if (refusal) {
    replace(main, heading, h('p', { class: 'error', role: 'alert', id: 'landing-refused' }, refusal),
      h('p', {}, h('a', { href: '/' }, session.active ? 'Back to my groups' : 'Go to Chronir')));
    focusHeading();
    return;
  }
  const explain = h('p', {}, kind === 'join'
    ? ['The invite code is ', h('strong', { class: 'code' }, code),
      '. Joining makes you a member of the group: you will see its shared alarms (rent, chores, checks…), who is assigned to each, and who has done what — and others will see your answers.']
    : 'This is a personal link. Accepting makes you a member of the group: you will see its shared alarms, who is assigned to each, and who has done what — and others will see your answers. The link works once.');
  const status = h('p', { class: 'error', role: 'alert' });
  const doJoin = async () => {
    status.textContent = '';
    try {
      const result = kind === 'join'
        ? await api('POST', '/v1/join', { code })
        : await api('POST', `/v1/invitations/${enc(value)}/accept`);
      flash(`You joined ${result.group.name}.`, 'ok');
      navigate(`/groups/${enc(result.group.id)}`, { replaceState: true });
    } catch (e) {
      status.textContent = landingRefusal(e);
    }
  };
  const showJoin = () => {
    replace(main, heading, facts, explain,
      h('p', {}, `You are signed in as ${state.me ? `${state.me.display_name} (${state.me.email})` : 'yourself'}.`),
      status,
      h('p', { class: 'actions' }, h('button', { type: 'button', id: 'join-button', onclick: doJoin }, kind === 'join' ? 'Join the group' : 'Accept the invitation'),
        ' ', h('a', { href: '/' }, 'Not now')));
    focusHeading();
  };
  if (session.active) return showJoin();
  let mode = 'register';
  const box = h('div');
  const draw = () => {
    replace(box, authForm(mode, showJoin),
      h('p', {}, mode === 'register'
        ? ['Already have an account? ', h('button', { type: 'button', class: 'link', onclick: () => { mode = 'login'; draw(); } }, 'Sign in instead')]
        : ['New here? ', h('button', { type: 'button', class: 'link', onclick: () => { mode = 'register'; draw(); } }, 'Create an account instead')]));
  };
  draw();
  replace(main, heading, facts, explain, h('h2', {}, 'First, sign in or create an account'), box);
  focusHeading();
}

// — start —

/** A clicked notification asks the page (through the service worker) to show what it is about. */
function listenToWorker() {
  if (!('serviceWorker' in navigator)) return;
  navigator.serviceWorker.addEventListener('message', (event) => {
    const path = event.data && event.data.kind === 'open' ? event.data.path : null;
    if (typeof path === 'string' && path.startsWith('/') && !path.startsWith('//')) navigate(path);
  });
  registerWorker().catch((e) => console.warn('service worker not registered:', e.message));
}

async function boot() {
  listenToWorker();
  if (session.active) {
    try {
      state.me = await api('GET', '/v1/me');
      realtime.start();
      subscribeUser();
    } catch (e) {
      if (e.status === 401) { session.active = false; state.me = null; }
    }
  }
  render();
}

boot();
