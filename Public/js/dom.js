// Small DOM helpers. Text always goes in as text nodes (never innerHTML), so server data can't inject markup.

/** h('button', {class: 'x', onclick: fn}, 'text', child) → an element. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2), value);
    else if (key === 'class') el.className = value;
    else if (key === 'dataset') Object.assign(el.dataset, value);
    else if (key === 'value') el.value = value;
    else if (key === 'checked') el.checked = Boolean(value);
    else if (value === true) el.setAttribute(key, '');
    else el.setAttribute(key, String(value));
  }
  append(el, children);
  // A checkbox with role="switch" states its state in aria-checked too (older assistive technology and
  // axe's rule need it); checked set from a script must call syncSwitch.
  if (attrs && attrs.role === 'switch') {
    syncSwitch(el);
    el.addEventListener('change', () => syncSwitch(el));
  }
  return el;
}

/** Copies a switch's checked state to aria-checked. */
export function syncSwitch(el) {
  el.setAttribute('aria-checked', String(Boolean(el.checked)));
}

function append(el, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replaces the children of `el`. */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

let idCounter = 0;
/** A unique id for label/input pairs. */
export function uid(prefix = 'f') { idCounter += 1; return `${prefix}-${idCounter}`; }

/** A labelled field: <div class="field"><label for>…</label><input id …></div>. */
export function field(label, control, hint) {
  const id = control.id || uid();
  control.id = id;
  const hintEl = hint ? h('small', { id: `${id}-hint`, class: 'hint' }, hint) : null;
  if (hintEl) control.setAttribute('aria-describedby', hintEl.id);
  return h('div', { class: 'field' }, h('label', { for: id }, label), control, hintEl);
}

/** Pauses what cannot work offline under `root`: every enabled button except answers (`data-queue`,
 *  queued by outbox.js) and page-only buttons (`data-local`), and file inputs; marked `data-offline`
 *  so they come back with the connection (app.js). Also run after a re-render while offline. */
export function pauseForOffline(root) {
  for (const el of root.querySelectorAll('button:not(:disabled):not([data-queue]):not([data-local]), input[type="submit"]:not(:disabled), input[type="file"]:not(:disabled)')) {
    el.disabled = true;
    el.dataset.offline = '1';
  }
}

/** Briefly highlights an element that changed live. */
export function flashChanged(el) {
  if (!el) return;
  el.classList.remove('changed');
  void el.offsetWidth; // restart the animation
  el.classList.add('changed');
  setTimeout(() => el.classList.remove('changed'), 2500);
}

/** The icons a group or an alarm may carry (`icon_name`, a symbol name the apps share) and how the web
 *  client shows them. */
export const GROUP_ICONS = {
  house: ['🏠', 'Home'], briefcase: ['💼', 'Work'], 'person.3': ['👥', 'People'], cart: ['🛒', 'Shopping'],
  car: ['🚗', 'Car'], leaf: ['🌿', 'Garden'], pawprint: ['🐾', 'Pets'], wrench: ['🔧', 'Repairs'],
  heart: ['❤️', 'Health'], book: ['📚', 'School'],
};

/** A colour-and-icon badge (`color_tag`, `icon_name` of a group or an alarm) before a name; decoration
 *  (the name says it all), null when there is neither. An icon name the web client does not know shows
 *  the colour alone. */
function badge(doc, cls) {
  if (!doc.color_tag && !doc.icon_name) return null;
  const el = h('span', { class: cls, 'aria-hidden': 'true' }, GROUP_ICONS[doc.icon_name] ? GROUP_ICONS[doc.icon_name][0] : '');
  if (doc.color_tag) el.style.setProperty('--group-color', doc.color_tag);
  else el.classList.add('no-color');
  return el;
}

/** A group's colour and icon before its name. */
export function groupBadge(g) { return badge(g, 'group-badge'); }

/** An alarm's own colour and icon before its title (the same look, a little smaller). */
export function alarmBadge(a) { return badge(a, 'group-badge alarm-badge'); }

/** How long an armed confirm button waits for its second press. */
const ARMED_MS = 10000;
/** Armed confirm buttons by data-key → disarm timer: a live re-render draws them armed again. */
const armed = new Map();

/** A button that asks once more before acting: first press arms it, the second acts. Its armed state
 *  lives outside the element, so a re-render in between keeps it. */
export function confirmButton(label, text, key, action) {
  const button = h('button', { type: 'button', class: 'secondary small danger-button', 'data-key': key, 'aria-label': label }, text);
  const show = (on) => {
    button.textContent = on ? `Confirm: ${text.toLowerCase()}` : text;
    button.setAttribute('aria-label', on ? `Confirm: ${label}` : label);
    button.classList.toggle('armed', on);
  };
  show(armed.has(key));
  button.addEventListener('click', () => {
    if (!armed.has(key)) {
      armed.set(key, setTimeout(() => {
        armed.delete(key);
        for (const el of document.querySelectorAll(`[data-key="${CSS.escape(key)}"].armed`)) {
          el.classList.remove('armed');
          el.textContent = text;
          el.setAttribute('aria-label', label);
        }
      }, ARMED_MS));
      show(true);
      return;
    }
    clearTimeout(armed.get(key));
    armed.delete(key);
    button.disabled = true;
    action();
  });
  return button;
}
