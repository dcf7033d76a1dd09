// Web Push on this browser (docs/notifications.md#web-client): the service worker (/sw.js), the
// "Notifications on this browser" switch, and the browser's push subscription registered as a device of
// the signed-in account (PUT /v1/me/devices/{device_id}, platform web, provider webpush).
//
// The switch is on when the account has this browser's device on the server: logging out drops the
// devices that session registered, so after a new sign-in it is off until turned on again (the browser's
// subscription is reused then).

import { api, enc } from './api.js';
import { h, syncSwitch } from './dom.js';

/** This browser's device id, chosen here once and kept in localStorage (shared by every account that signs in here). */
const DEVICE_KEY = 'chronir.push-device';
const WORKER_URL = '/sw.js';
/** How long a push service may take to answer a subscribe. Real ones answer within seconds; a browser that cannot
 *  reach one (no network, or a build without a push service, as headless Chromium) may never settle the promise. */
const SUBSCRIBE_TIMEOUT_MS = 15000;
/** The server refuses a longer or non-ASCII locale (DeviceRules.maxLocaleBytes); then none is sent. */
const LOCALE = /^[\x20-\x7e]{1,35}$/;

/** Why Web Push cannot be turned on; `reason` is one of the keys below, `message` says what to do. */
export class PushUnavailable extends Error {
  constructor(reason) {
    super(REASONS[reason]);
    this.reason = reason;
  }
}

const REASONS = {
  unsupported: 'This browser cannot show notifications from websites (it lacks service workers or the Push API).',
  insecure: 'Notifications need a secure connection: open this site over https.',
  denied: 'Notifications are blocked for this site. Allow them in your browser’s site settings, then turn this on again.',
  dismissed: 'Notifications were not allowed. Turn this on again to be asked once more.',
  not_configured: 'This server does not send Web Push notifications.',
  subscribe_failed: 'This browser could not get a subscription from its push service.',
};

/** The reason this browser cannot do Web Push at all, or null. */
export function unsupportedReason() {
  if (!window.isSecureContext) return 'insecure';
  if (!('serviceWorker' in navigator) || !('PushManager' in window) || !('Notification' in window)) return 'unsupported';
  return null;
}

/** Registers (or updates) the service worker for the whole site; null where unsupported. */
export async function registerWorker() {
  if (unsupportedReason()) return null;
  return navigator.serviceWorker.register(WORKER_URL, { scope: '/' });
}

function deviceId(create) {
  let id = localStorage.getItem(DEVICE_KEY);
  if (!id && create) {
    id = `web-${crypto.randomUUID()}`;
    localStorage.setItem(DEVICE_KEY, id);
  }
  return id;
}

/** Whether the signed-in account has this browser's device. */
export async function isRegistered() {
  const id = deviceId(false);
  if (!id) return false;
  const { devices } = await api('GET', '/v1/me/devices');
  return devices.some((d) => d.device_id === id);
}

/** Registers `subscription` (PushSubscription.toJSON()) as this browser's device; resolves to the device. */
export async function register(subscription) {
  const body = {
    platform: 'web',
    provider: 'webpush',
    subscription: { endpoint: subscription.endpoint, keys: { p256dh: subscription.keys.p256dh, auth: subscription.keys.auth } },
  };
  if (LOCALE.test(navigator.language || '')) body.locale = navigator.language;
  return api('PUT', `/v1/me/devices/${enc(deviceId(true))}`, body);
}

/** Asks permission, subscribes with the server's VAPID key and registers the subscription. Rejects with PushUnavailable or ApiError. */
export async function enable() {
  const unsupported = unsupportedReason();
  if (unsupported) throw new PushUnavailable(unsupported);
  const permission = await Notification.requestPermission();
  if (permission === 'denied') throw new PushUnavailable('denied');
  if (permission !== 'granted') throw new PushUnavailable('dismissed');
  let key;
  try {
    key = fromBase64url((await api('GET', '/v1/push/vapid-public-key')).public_key);
  } catch (e) {
    if (e.status === 404) throw new PushUnavailable('not_configured');
    throw e;
  }
  await registerWorker();
  const registration = await navigator.serviceWorker.ready; // subscribing needs an active worker
  let subscription = await registration.pushManager.getSubscription();
  if (subscription && !sameBytes(subscription.options.applicationServerKey, key)) {
    await subscription.unsubscribe(); // made with another server key: pushes signed with ours would be refused
    subscription = null;
  }
  if (!subscription) {
    try {
      subscription = await withTimeout(
        registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key }), SUBSCRIBE_TIMEOUT_MS);
    } catch (e) {
      const failure = new PushUnavailable('subscribe_failed');
      failure.message = `${failure.message} (${e.name}: ${e.message})`;
      throw failure;
    }
  }
  await register(subscription.toJSON());
}

/** Removes this browser's device from the account and ends the browser's subscription. */
export async function disable() {
  const id = deviceId(false);
  if (id) {
    try {
      await api('DELETE', `/v1/me/devices/${enc(id)}`);
    } catch (e) {
      if (e.status !== 404) throw e; // already gone (a push service answered 410, or another sign-out)
    }
  }
  if (unsupportedReason()) return;
  const registration = await navigator.serviceWorker.getRegistration('/');
  const subscription = registration && await registration.pushManager.getSubscription();
  if (subscription) await subscription.unsubscribe();
}

/** `promise`, or a TimeoutError after `ms`. */
function withTimeout(promise, ms) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new DOMException(`no answer within ${ms / 1000} s`, 'TimeoutError')), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function fromBase64url(text) {
  const b64 = text.replace(/-/g, '+').replace(/_/g, '/');
  return Uint8Array.from(atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4)), (c) => c.charCodeAt(0));
}

function sameBytes(buffer, bytes) {
  if (!buffer) return false;
  const a = new Uint8Array(buffer);
  return a.length === bytes.length && a.every((x, i) => x === bytes[i]);
}

const ON_TEXT = 'On: this browser shows Chronir notifications, even when the page is closed.';
const OFF_TEXT = 'Off: this browser shows no Chronir notifications.';

/** The settings card: a labelled switch and a status line that says what is going on or what went wrong. */
export function pushSettings() {
  const input = h('input', { type: 'checkbox', role: 'switch', id: 'push-switch', 'aria-describedby': 'push-status', disabled: true });
  const status = h('p', { id: 'push-status', class: 'hint', role: 'status' }, 'Checking…');
  const show = (on, text, state = 'ok') => {
    input.checked = on;
    syncSwitch(input);
    input.disabled = state === 'unsupported';
    status.textContent = text;
    status.dataset.state = state;
  };
  input.addEventListener('change', async () => {
    const wanted = input.checked;
    input.disabled = true;
    status.textContent = wanted ? 'Turning on… (asking for permission, then subscribing at this browser’s push service)' : 'Turning off…';
    status.dataset.state = 'busy';
    try {
      if (wanted) await enable(); else await disable();
      show(wanted, wanted ? ON_TEXT : OFF_TEXT);
    } catch (e) {
      show(!wanted, e.message, 'error');
    }
  });
  (async () => {
    const unsupported = unsupportedReason();
    if (unsupported) return show(false, REASONS[unsupported], 'unsupported');
    try {
      const on = await isRegistered();
      if (on && Notification.permission !== 'granted') show(true, `${REASONS.denied} Or turn this off.`, 'error');
      else show(on, on ? ON_TEXT : OFF_TEXT);
    } catch (e) {
      show(false, e.message, 'error');
    }
  })();
  return h('section', { class: 'card', id: 'push-settings', 'aria-labelledby': 'push-h' },
    h('h2', { id: 'push-h' }, 'Notifications'),
    h('div', { class: 'check switch' }, input, h('label', { for: 'push-switch' }, 'Notifications on this browser')),
    status);
}
