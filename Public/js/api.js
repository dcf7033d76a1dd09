// The HTTP API client. The bearer token lives in sessionStorage (per tab, gone when the tab closes)
// and only ever travels in the Authorization header — never in a URL.

import { userMessage } from './errors.js';

const TOKEN_KEY = 'chronir.token';

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

export const session = {
  get token() { return sessionStorage.getItem(TOKEN_KEY); },
  set token(value) {
    if (value) sessionStorage.setItem(TOKEN_KEY, value);
    else sessionStorage.removeItem(TOKEN_KEY);
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

/** The request with the session's credentials; a network failure is ApiError status 0. */
async function send(path, init) {
  const token = session.token;
  if (token) init.headers.Authorization = `Bearer ${token}`;
  try {
    return await fetch(path, { ...init, credentials: 'omit', cache: 'no-store' });
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
