// The HTTP API client. The session is an HttpOnly cookie the server sets at sign-in (the page asks for it
// with `X-Chronir-Session: cookie`): no script here ever holds the token, and it survives a new tab and a
// browser restart. Every request carries `X-Chronir-CSRF: 1`, which the server requires of
// cookie-authenticated writes (docs/security.md#the-web-clients-session). What the page keeps itself is
// only whether it is signed in (localStorage, so every tab knows), never a credential.

import { userMessage } from './errors.js';

const SIGNED_IN_KEY = 'chronir.signed-in';
sessionStorage.removeItem('chronir.token'); // the bearer token the client before the cookie kept here

/** A failed request: `message` is for people (errors.js), `serverMessage` is the server's own words. */
export class ApiError extends Error {
  constructor(status, body, retryAfterHeader) {
    const e = (body && body.error) || {};
    super(e.message || `request failed (${status})`);
    this.serverMessage = this.message;
    this.status = status;
    this.code = e.code;
    this.name = e.name || 'ApiError';
    this.field = e.field;
    this.current = e.current;
    this.retryAfter = e.retry_after || (retryAfterHeader ? Number(retryAfterHeader) : undefined);
    this.message = userMessage(this);
  }
}

/** Whether this browser has a session (the cookie itself is out of reach): set at sign-in, cleared at
 *  sign-out or when the server answers 401 to it. */
export const session = {
  get active() { return localStorage.getItem(SIGNED_IN_KEY) === '1'; },
  set active(value) {
    if (value) localStorage.setItem(SIGNED_IN_KEY, '1');
    else localStorage.removeItem(SIGNED_IN_KEY);
  },
};

/** Calls the API; resolves to the parsed JSON body (null for 204), rejects with ApiError. */
export async function api(method, path, body) {
  const init = { method, headers: { Accept: 'application/json' } };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  return json(await send(path, init));
}

/** Uploads a file as the raw request body (attachments): resolves to the JSON answer. The type is the
 *  file's own, or application/octet-stream (the server decides by the content either way). */
export async function apiUpload(path, file) {
  return json(await send(path, { method: 'POST', headers: { Accept: 'application/json', 'Content-Type': file.type || 'application/octet-stream' }, body: file }));
}

/** Fetches a file the API serves (an attachment, its thumbnail): resolves to a Blob. */
export async function apiBlob(path) {
  const response = await send(path, { method: 'GET', headers: {} });
  if (!response.ok) await json(response);
  return response.blob();
}

/** The request with the session cookie and the CSRF header (and, for a sign-in, the ask for a cookie);
 *  a network failure is ApiError status 0. */
async function send(path, init) {
  init.headers['X-Chronir-CSRF'] = '1';
  init.headers['X-Chronir-Session'] = 'cookie';
  try {
    return await fetch(path, { ...init, credentials: 'same-origin', cache: 'no-store' });
  } catch {
    throw new ApiError(0, { error: { message: 'The server cannot be reached. Check your connection.' } });
  }
}

async function json(response) {
  if (response.status === 204) return null;
  let body = null;
  try { body = await response.json(); } catch { /* not JSON */ }
  if (!response.ok) throw new ApiError(response.status, body, response.headers.get('Retry-After'));
  return body;
}

export const enc = encodeURIComponent;
