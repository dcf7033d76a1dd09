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
  const headers = { Accept: 'application/json' };
  const token = session.token;
  if (token) headers.Authorization = `Bearer ${token}`;
  const init = { method, headers, credentials: 'omit', cache: 'no-store' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch {
    throw new ApiError(0, { error: { message: 'The server cannot be reached. Check your connection.' } });
  }
  if (response.status === 204) return null;
  let json = null;
  try { json = await response.json(); } catch { /* not JSON */ }
  if (!response.ok) throw new ApiError(response.status, json, response.headers.get('Retry-After'));
  return json;
}

export const enc = encodeURIComponent;
