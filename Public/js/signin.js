// Sign in with Apple and Google on the web (docs/sign-in.md#the-web-client). The sign-in page asks the
// server which providers it accepts (GET /v1/auth/providers) and shows a button only for those with a
// web client id. A button runs the provider's own redirect flow — no provider script is loaded (the
// CSP allows scripts from this origin only): the page leaves for the provider's authorize URL with a
// fresh nonce and state kept in sessionStorage, the provider sends the browser back to /login with the
// ID token in the URL fragment (never sent to any server by the browser), and the page hands it to
// POST /v1/auth/oidc with the raw nonce. The redirect URI, <origin>/login, must be registered with the
// provider for that client id.

import { h } from './dom.js';

const PENDING_KEY = 'chronir.oidc';

/** Each provider's authorize endpoint and how its ID token carries the nonce. */
const PROVIDERS = {
  apple: {
    label: 'Sign in with Apple',
    authorize: 'https://appleid.apple.com/auth/authorize',
    // Apple's token carries the nonce it was given; the server expects SHA-256 hex of the raw nonce.
    params: async (clientId, nonce, state, redirect) => ({
      client_id: clientId, redirect_uri: redirect, response_type: 'code id_token', response_mode: 'fragment',
      nonce: await sha256Hex(nonce), state,
    }),
  },
  google: {
    label: 'Sign in with Google',
    authorize: 'https://accounts.google.com/o/oauth2/v2/auth',
    params: async (clientId, nonce, state, redirect) => ({
      client_id: clientId, redirect_uri: redirect, response_type: 'id_token', scope: 'openid email profile',
      nonce, state, prompt: 'select_account',
    }),
  },
};

/** The buttons for a `GET /v1/auth/providers` answer: one per known provider with a web client id,
 *  in the server's order. */
export function buttonsFor(listing) {
  return ((listing && listing.providers) || [])
    .filter((p) => PROVIDERS[p.provider] && p.web_client_id)
    .map((p) => h('button', { type: 'button', class: `secondary provider provider-${p.provider}`, 'data-provider': p.provider,
      onclick: () => start(p.provider, p.web_client_id) }, PROVIDERS[p.provider].label));
}

/** A container the sign-in page shows; filled with the buttons once the server answered (empty, and
 *  `data-state="none"`, when no provider has a web client id or the server cannot be asked). */
export function providerSignIn(api) {
  const box = h('div', { class: 'provider-signin', id: 'provider-signin', 'data-state': 'loading' });
  api('GET', '/v1/auth/providers').then((listing) => {
    const buttons = buttonsFor(listing);
    box.dataset.state = buttons.length ? 'shown' : 'none';
    if (buttons.length) box.append(h('p', { class: 'meta' }, 'Or:'), h('div', { class: 'actions' }, buttons));
  }, () => { box.dataset.state = 'none'; });
  return box;
}

/** Leaves for the provider's sign-in with a fresh nonce and state, kept for the return. */
async function start(provider, clientId) {
  const nonce = randomText(32);
  const state = randomText(16);
  sessionStorage.setItem(PENDING_KEY, JSON.stringify({ provider, nonce, state }));
  const params = await PROVIDERS[provider].params(clientId, nonce, state, `${location.origin}/login`);
  location.assign(`${PROVIDERS[provider].authorize}?${new URLSearchParams(params)}`);
}

/** The provider sent the browser back (/login#id_token=…&state=…): the body for POST /v1/auth/oidc, or
 *  an Error to show. Either way the fragment is removed from the address and the pending sign-in ends. */
export function returnedSignIn() {
  const fragment = new URLSearchParams(location.hash.slice(1));
  history.replaceState(null, '', location.pathname);
  let pending = null;
  try { pending = JSON.parse(sessionStorage.getItem(PENDING_KEY) || 'null'); } catch { /* none */ }
  sessionStorage.removeItem(PENDING_KEY);
  if (fragment.get('error')) return new Error(`The sign-in was not completed (${fragment.get('error')}).`);
  if (!pending || fragment.get('state') !== pending.state) return new Error('This sign-in was not started here: please try again.');
  return { provider: pending.provider, id_token: fragment.get('id_token'), nonce: pending.nonce };
}

/** Whether the address is a provider's answer (an ID token or an error in the fragment). */
export function isProviderReturn() {
  const fragment = new URLSearchParams(location.hash.slice(1));
  return fragment.has('id_token') || (fragment.has('error') && fragment.has('state'));
}

function randomText(bytes) {
  const raw = crypto.getRandomValues(new Uint8Array(bytes));
  return btoa(String.fromCharCode(...raw)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

async function sha256Hex(text) {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
  return [...digest].map((b) => b.toString(16).padStart(2, '0')).join('');
}
