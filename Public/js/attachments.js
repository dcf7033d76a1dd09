// Photos and PDFs (docs/attachments.md) on any owner — a shared alarm, a shared completion (an answer),
// a personal alarm: thumbnails that open the lightbox, Remove, "Add a photo". One component; a page
// describes each owner with `AttachmentOwner` and keeps one `Attachments` for its lists and pictures.

import { apiUpload, apiBlob } from './api.js';
import { shortWhen } from './schedule.js';
import { h, confirmButton } from './dom.js';
import { tierText } from './errors.js';

/** An owner as the component needs it:
 *  - `kind`: the server's `owner_kind` (`shared_alarm`, `shared_completion`, `personal_alarm`);
 *  - `id`: the owner's id; `path`: its attachments collection (`…/attachments`);
 *  - `title`: what the labels name ("“Rent”", "Ana’s answer to “Rent”"); `noun`: "an alarm", "an answer";
 *  - `canUpload`: whether the viewer may add (the server checks again: tier, type, size, who);
 *  - `needsTier`: the viewer may not add only for their tier: the place of the file field says so and how to get it;
 *  - `canRemove(x)`: whether the viewer may remove attachment `x`;
 *  - `touch`: the element id the page highlights when the owner's list changes;
 *  - `fileName`: a downloaded PDF's name, without `.pdf`; `loadNow`: false to draw "Loading…" without fetching.
 *  An owner whose documents carry `attachments` (all three do) is never listed: `fromDocument`. */
export function ownerKey(kind, id) { return `${kind}:${id}`; }

export class Attachments {
  /** `page`: `{ api(method, path), flash(text, kind), name(userId), offline(), render(touchedIds) }`. */
  constructor(page) {
    this.page = page;
    this.lists = new Map(); // ownerKey → its attachment documents (live, oldest first)
    this.loading = new Set();
    this.pictures = new Map(); // `${attachment id}:thumb|full` → a data: URL (the CSP allows img-src data:)
  }

  has(kind, id) { return this.lists.has(ownerKey(kind, id)); }
  get(kind, id) { return this.lists.get(ownerKey(kind, id)); }
  /** The list a document carried (`attachments`), if it carried one. */
  fromDocument(kind, doc) { if (doc && doc.attachments) this.lists.set(ownerKey(kind, doc.id), doc.attachments); }

  /** Applies a feed's `attachment` change (added with its document, or removed): the owner's key, or
   *  null when the change is about an owner this page does not show. */
  applyChange(c) {
    let key = c.doc ? ownerKey(c.doc.owner_kind, c.doc.owner_id) : null;
    if (!key) key = [...this.lists.entries()].find(([, list]) => list.some((x) => x.id === c.id))?.[0];
    if (!key) return null;
    const list = (this.lists.get(key) || []).filter((x) => x.id !== c.id);
    this.lists.set(key, c.op === 'removed' || !c.doc || c.doc.deleted_at ? list : [...list, c.doc]);
    return key;
  }

  /** The owner's section: a heading, its thumbnails (or a word while they load), and the file input
   *  when the viewer may add. `compact`: no heading or empty text when there is nothing to show and
   *  nothing to add (an answer in the activity list); `heading`: the heading's element, one level
   *  below the owner's title. */
  part(owner, { compact = false, heading = 'h4' } = {}) {
    const key = ownerKey(owner.kind, owner.id);
    const list = this.lists.get(key);
    if (compact && (!list || !list.length) && !owner.canUpload) return null;
    const headingId = `att-h-${owner.id}`;
    const inputId = `att-add-${owner.id}`;
    let add = null;
    if (owner.canUpload) {
      const input = h('input', { type: 'file', id: inputId, class: 'att-input', 'data-key': inputId, accept: 'image/jpeg,image/png,image/heic,image/heif,application/pdf' });
      input.addEventListener('change', () => { if (input.files && input.files[0]) this.upload(owner, input.files[0], input); });
      add = h('div', { class: 'field att-add' }, h('label', { for: inputId }, compact ? `Add a photo or PDF to ${owner.title}` : 'Add a photo or PDF'), input,
        h('small', { class: 'hint' }, `JPEG, PNG, HEIC or PDF, up to 10 MB; at most 5 on ${owner.noun}.`));
    } else if (owner.needsTier && !compact) {
      add = h('p', { class: 'hint att-tier' }, tierText('Adding photos and files needs'));
    }
    let items;
    if (list === undefined) {
      if (owner.loadNow !== false) this.load(owner);
      items = h('p', { class: 'meta' }, this.page.offline() ? 'Photos and files show when the connection is back.' : 'Loading…');
    } else if (!list.length) {
      items = compact ? null : h('p', { class: 'meta att-empty' }, 'No photos or files yet.');
    } else {
      items = h('ul', { class: 'attachments' }, list.map((x, i) => {
        const what = x.file_type === 'application/pdf' ? 'PDF' : 'Photo';
        const label = `${what} ${i + 1} of ${owner.title}, added by ${this.page.name(x.uploaded_by)} ${shortWhen(x.created_at)}`;
        const thumb = this.pictures.get(`${x.id}:thumb`);
        const size = thumbSize(x);
        const open = h('button', { type: 'button', class: 'att-open', 'data-local': true, 'aria-label': `Open ${label}`, onclick: () => this.open(owner, x, label) },
          thumb ? h('img', { src: thumb, alt: '', width: size.width, height: size.height }) : h('span', { class: 'att-placeholder' }, what));
        if (!thumb) this.loadThumbnail(owner, x);
        return h('li', { class: 'attachment', id: `attachment-${x.id}` }, open,
          owner.canRemove(x) ? confirmButton(`Remove ${label}`, 'Remove', `att-remove-${x.id}`, () => this.remove(owner, x)) : null);
      }));
    }
    if (compact) return h('section', { class: 'att att-compact', 'aria-label': `Photos and files of ${owner.title}` }, items, add);
    return h('section', { class: 'att', 'aria-labelledby': headingId }, h(heading, { id: headingId }, 'Photos and files'), items, add);
  }

  /** Fetches the owner's list once (not while offline: a render after the connection is back does). */
  async load(owner) {
    const key = ownerKey(owner.kind, owner.id);
    if (this.lists.has(key) || this.loading.has(key) || this.page.offline()) return;
    this.loading.add(key);
    try {
      const page = await this.page.api('GET', owner.path);
      this.lists.set(key, page.attachments);
    } catch (e) {
      this.lists.set(key, []);
      if (e.status !== 0) this.page.flash(e.message, 'error');
    } finally {
      this.loading.delete(key);
    }
    this.page.render([]);
  }

  async loadThumbnail(owner, x) {
    const key = `${x.id}:thumb`;
    if (this.pictures.has(key)) return;
    this.pictures.set(key, null); // one fetch at a time
    try {
      this.pictures.set(key, await dataURL(await apiBlob(`${owner.path}/${encodeURIComponent(x.id)}/thumbnail`)));
      this.page.render([]);
    } catch {
      this.pictures.delete(key);
    }
  }

  async upload(owner, file, input) {
    const key = ownerKey(owner.kind, owner.id);
    input.disabled = true;
    try {
      const doc = await apiUpload(owner.path, file);
      this.lists.set(key, [...(this.lists.get(key) || []).filter((x) => x.id !== doc.id), doc]);
      this.page.flash(`Added ${file.name} to ${owner.title}.`, 'ok');
    } catch (e) {
      this.page.flash(e.message, 'error');
    }
    this.page.render([owner.touch]);
    const again = document.getElementById(`att-add-${owner.id}`);
    if (again) again.focus();
  }

  async remove(owner, x) {
    const key = ownerKey(owner.kind, owner.id);
    try {
      await this.page.api('DELETE', `${owner.path}/${encodeURIComponent(x.id)}`);
      this.lists.set(key, (this.lists.get(key) || []).filter((y) => y.id !== x.id));
      this.pictures.delete(`${x.id}:thumb`);
      this.pictures.delete(`${x.id}:full`);
    } catch (e) {
      this.page.flash(e.message, 'error');
    }
    this.page.render([owner.touch]);
  }

  /** The lightbox: a modal dialog with the whole photo (Esc or Close returns focus to the thumbnail);
   *  a PDF is downloaded instead (the server sends it as an attachment). */
  async open(owner, x, label) {
    const opener = document.activeElement;
    try {
      const blob = await apiBlob(`${owner.path}/${encodeURIComponent(x.id)}`);
      if (x.file_type === 'application/pdf') {
        const url = URL.createObjectURL(blob);
        const link = h('a', { href: url, download: `${owner.fileName || 'attachment'}.pdf` });
        document.body.append(link);
        link.click();
        link.remove();
        setTimeout(() => URL.revokeObjectURL(url), 10000);
        return;
      }
      const full = await dataURL(blob);
      const close = h('button', { type: 'button', class: 'secondary lightbox-close' }, 'Close');
      const dialog = h('dialog', { class: 'lightbox', id: 'lightbox', 'aria-label': label },
        h('figure', {}, h('img', { src: full, alt: label, width: x.width, height: x.height }),
          h('figcaption', {}, label, ` · ${x.width} × ${x.height}`)),
        close);
      close.addEventListener('click', () => dialog.close());
      dialog.addEventListener('close', () => { dialog.remove(); if (opener && opener.isConnected) opener.focus(); });
      // In the labelled messages region (a landmark re-renders never replace), not loose in <body>.
      (document.querySelector('.flash-region') || document.body).append(dialog);
      dialog.showModal();
      close.focus();
    } catch (e) {
      this.page.flash(e.message, 'error');
    }
  }
}

function dataURL(blob) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(blob);
  });
}

/** The thumbnail's size: the photo scaled to at most 256 px on its longer side (the server's). */
function thumbSize(x) {
  const scale = Math.min(1, 256 / Math.max(x.width || 1, x.height || 1));
  return { width: Math.round((x.width || 256) * scale), height: Math.round((x.height || 256) * scale) };
}
