// The Chronir service worker (scope /): shows each Web Push message as a notification and, when one is
// clicked, brings the app to the screen it is about. No fetch handler: pages always come from the server.
//
// A push message is what WebPushSender encrypts (docs/notifications.md#web-push-sender--built):
//   {"notification": {"title": "…", "body": "…"}, "data": {"type": "alarm_fired", "group_id": "…", "alarm_id": "…", …}}
// `data` holds only strings: `type` (docs/notifications.md#what-is-sent-to-whom) and the ids of what it is about.

/** Types that ask to be acted on: they stay on screen until the person answers them. */
const DEMANDS_ACTION = new Set(['alarm_fired', 'missed_alarm_followup']);
/** Types about one occurrence of an alarm: a later one replaces the earlier (the fire replaces its pre-alarm). */
const PER_ALARM = new Set(['pre_alarm', 'alarm_fired', 'missed_alarm_followup']);

self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

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
