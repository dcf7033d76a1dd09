// The Chronir service worker (scope /): shows each Web Push message as a notification and, when one is
// clicked, brings the app to the screen it is about. It also keeps the app shell (the page, its styles,
// scripts and icons) for when the network is gone: network first, so pages always come from the server
// when it answers, and the last copy otherwise. The API (/v1/), the realtime socket and anything not a
// same-origin GET are never touched.
//
// A push message is what WebPushSender encrypts (docs/notifications.md#web-push-sender--built):
//   {"notification": {"title": "…", "body": "…"}, "data": {"type": "alarm_fired", "group_id": "…", "alarm_id": "…", …}}
// `data` holds only strings: `type` (docs/notifications.md#what-is-sent-to-whom) and the ids of what it is about.

/** Types that ask to be acted on: they stay on screen until the person answers them. */
const DEMANDS_ACTION = new Set(['alarm_fired', 'missed_alarm_followup']);
/** Types about one occurrence of an alarm: a later one replaces the earlier (the fire replaces its pre-alarm). */
const PER_ALARM = new Set(['pre_alarm', 'alarm_fired', 'missed_alarm_followup']);

/** The cache of the app shell; a new name (and the old one's deletion at activation) when its layout changes. */
const SHELL_CACHE = 'chronir-shell-v2';
const SHELL = ['/index.html', '/app.css', '/manifest.webmanifest', '/icon.svg', '/js/app.js', '/js/api.js', '/js/errors.js',
  '/js/dom.js', '/js/realtime.js', '/js/group.js', '/js/alarmform.js', '/js/schedule.js', '/js/push.js', '/js/settings.js',
  '/js/myalarms.js', '/js/tasks.js', '/js/outbox.js', '/js/signin.js', '/js/attachments.js',
  '/js/answers.js', '/js/group-alarms.js', '/js/group-members.js', '/js/group-invites.js', '/js/group-activity.js'];

self.addEventListener('install', (event) => {
  // Each file on its own: one that fails to load must not keep the worker (and with it Web Push) from installing.
  event.waitUntil(caches.open(SHELL_CACHE)
    .then((cache) => Promise.all(SHELL.map((path) => cache.add(path).catch(() => undefined))))
    .then(() => self.skipWaiting()));
});
self.addEventListener('activate', (event) => event.waitUntil(
  caches.keys().then((names) => Promise.all(names.filter((n) => n.startsWith('chronir-shell-') && n !== SHELL_CACHE).map((n) => caches.delete(n))))
    .then(() => self.clients.claim())));

/** Whether the worker answers `request` (the shell), or leaves it to the network as if it were not there. */
function isShell(request) {
  if (request.method !== 'GET') return false;
  const url = new URL(request.url);
  if (url.origin !== self.location.origin) return false;
  return !url.pathname.startsWith('/v1/') && url.pathname !== '/healthz' && url.pathname !== '/sw.js';
}

/** Where a fresh answer is kept, or null: a page (HTML) as /index.html, a shell file under its path. */
function shellKey(request, response) {
  if (!response.ok || response.type !== 'basic') return null;
  if (request.mode === 'navigate') return (response.headers.get('Content-Type') || '').startsWith('text/html') ? '/index.html' : null;
  const path = new URL(request.url).pathname;
  return SHELL.includes(path) ? path : null;
}

self.addEventListener('fetch', (event) => {
  if (!isShell(event.request)) return;
  event.respondWith((async () => {
    const cache = await caches.open(SHELL_CACHE);
    try {
      const response = await fetch(event.request);
      // Keep the last good copy of what the shell is made of (an app-shell route's page is index.html).
      const key = shellKey(event.request, response);
      if (key) cache.put(key, response.clone()).catch(() => undefined);
      return response;
    } catch (e) {
      const kept = await cache.match(event.request.mode === 'navigate' ? '/index.html' : event.request, { ignoreSearch: true });
      if (kept) return kept;
      throw e;
    }
  })());
});

/** The notification a push message asks for: [title, options]. A payload that is not our JSON is shown as text. */
function notificationFor(message) {
  let payload;
  try {
    payload = message ? message.json() : {};
  } catch {
    payload = { notification: { body: message.text() } };
  }
  const shown = (payload && payload.notification) || {};
  const data = payload && typeof payload.data === 'object' && payload.data ? payload.data : {};
  const options = { body: typeof shown.body === 'string' ? shown.body : '', data, timestamp: Date.now() };
  if (PER_ALARM.has(data.type) && data.alarm_id) {
    options.tag = `alarm-${data.alarm_id}`;
    options.renotify = true;
  }
  if (DEMANDS_ACTION.has(data.type)) options.requireInteraction = true;
  return [typeof shown.title === 'string' && shown.title ? shown.title : 'Chronir', options];
}

// The Push API requires every push to show a notification (userVisibleOnly): always show one.
self.addEventListener('push', (event) => {
  const [title, options] = notificationFor(event.data);
  event.waitUntil(self.registration.showNotification(title, options));
});

/** The app path a notification opens: the group (at the alarm), or my groups for an invitation. */
function pathFor(data) {
  if (data.type !== 'group_invitation' && data.group_id) {
    const alarm = data.alarm_id ? `#alarm-${encodeURIComponent(data.alarm_id)}` : '';
    return `/groups/${encodeURIComponent(data.group_id)}${alarm}`;
  }
  return '/';
}

/** Shows what a notification with `data` is about: an open Chronir window's router goes there (no reload:
 *  the session lives in that tab's sessionStorage) and the window is focused; without one, a new window
 *  opens at that path. Focusing and opening need the user's click on the notification. */
async function showInApp(data) {
  const path = pathFor(data || {});
  const windows = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
  const open = windows.find((c) => new URL(c.url).origin === self.location.origin);
  if (!open) return self.clients.openWindow(path);
  open.postMessage({ kind: 'open', path });
  return open.focus();
}

self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  event.waitUntil(showInApp(event.notification.data));
});
