// The group page's invite panel for owners and admins (group.js owns the page): the invite code (a new
// one, disabled), one-use links and email invitations, pending invitations. Drawn into its own slot, which
// re-renders of the rest of the page move but never rebuild while someone types in it. The code or link
// just created (`shownSecret`) shows once. Never imports group.js.

import { enc } from './api.js';
import { h, replace, field, confirmButton } from './dom.js';
import { shortWhen } from './schedule.js';

export class InvitesView {
  /** `page`: the GroupPage (its ctx, groupId, myRole, members, render, run). */
  constructor(page) {
    this.page = page;
    this.slot = h('div', { id: 'invite-slot' });
    this.invitations = null; // null: not loaded (or not mine to see)
    this.loadingInvitations = false;
    this.shownSecret = null; // {label, url} shown once after creating a code or link invitation
    this.inviteOpen = undefined; // the panel's folded state, once the owner chose
  }

  /** Draws the panel for an owner or admin (loading the invitations the first time, also after a
   *  promotion), or forgets what a member may not see. Returns the slot. */
  section(canManage) {
    if (!canManage) { this.invitations = null; this.shownSecret = null; return null; }
    this.draw();
    if (this.invitations === null && !this.loadingInvitations) this.load();
    return this.slot;
  }

  draw() {
    const p = this.page;
    const isOwner = p.myRole === 'owner';
    const secret = this.shownSecret
      ? h('div', { class: 'secret', role: 'status' },
        h('p', {}, this.shownSecret.label),
        field('Link to share', h('input', { type: 'text', readonly: true, value: this.shownSecret.url, id: 'share-link', 'data-key': 'share-link' }),
          'Shown only now. Anyone with the link can use it until it expires.'),
        h('div', { class: 'actions' },
          h('button', { type: 'button', id: 'copy-link', 'data-key': 'copy-link', onclick: (e) => copyText(this.shownSecret.url, e.target) }, 'Copy link')))
      : null;
    const email = h('input', { type: 'email', 'data-key': 'invite-email' });
    const role = h('select', { 'data-key': 'invite-role' }, h('option', { value: 'member' }, 'member'), isOwner ? h('option', { value: 'admin' }, 'admin') : null);
    const invForm = h('form', { class: 'stack', 'aria-labelledby': 'invite-form-h' },
      h('h3', { id: 'invite-form-h' }, 'Invite someone'),
      field('Their email (leave empty for a one-use link)', email), field('Role', role),
      h('button', { type: 'submit', 'data-key': 'invite-submit' }, 'Create invitation'));
    invForm.addEventListener('submit', (event) => { event.preventDefault(); this.createInvitation(email.value.trim(), role.value); });

    const invitations = this.invitations === null ? h('p', { class: 'meta' }, 'Loading invitations…')
      : h('ul', { class: 'invitations' }, this.invitations.filter((i) => i.status === 'pending').map((i) => h('li', { id: `invitation-${i.id}` },
        i.invitee_email ? `${i.invitee_email}` : 'Link invitation', ` · ${i.role} · expires ${shortWhen(i.expires_at)} `,
        h('button', { type: 'button', class: 'secondary small', 'data-key': `revoke-${i.id}`, onclick: () => this.revokeInvitation(i) }, 'Revoke'))));

    // Folded away unless asked for: open at first on a group of one (inviting is what comes next),
    // folded on a group that has people; whatever the owner chose stays; a new secret opens it.
    if (this.inviteOpen === undefined) this.inviteOpen = p.members.size <= 1;
    if (this.shownSecret) this.inviteOpen = true;
    const pending = (this.invitations || []).filter((i) => i.status === 'pending').length;
    const panel = h('details', { class: 'card invite-panel', id: 'invite-panel', open: this.inviteOpen },
      h('summary', {}, h('span', { class: 'summary-title' }, 'Invite people'),
        pending ? h('span', { class: 'meta' }, ` · ${pending} pending invitation${pending === 1 ? '' : 's'}`) : null),
      h('div', { id: 'invite-code' },
        h('h3', {}, 'Invite code'),
        h('p', { class: 'hint' }, 'A 6-character code anyone can use for 7 days. Creating a new one replaces the old one at once.'),
        h('div', { class: 'actions' },
          h('button', { type: 'button', id: 'rotate-code', 'data-key': 'rotate-code', onclick: () => this.rotateCode() }, 'New invite code'),
          confirmButton('Disable the invite code', 'Disable code', 'disable-code', () => this.disableCode()))),
      secret,
      invForm,
      h('h3', {}, 'Pending invitations'),
      this.invitations && !this.invitations.some((i) => i.status === 'pending') ? h('p', { class: 'meta', id: 'no-invitations' }, 'None.') : invitations);
    panel.addEventListener('toggle', () => { this.inviteOpen = panel.open; });
    replace(this.slot, h('section', { 'aria-label': 'Invite people' }, panel));
  }

  async load() {
    const p = this.page;
    this.loadingInvitations = true;
    try {
      const page = await p.ctx.api('GET', `/v1/groups/${enc(p.groupId)}/invitations?limit=100`);
      this.invitations = page.invitations;
      // A one-use link that was used (or revoked) is no use to show any more.
      const shown = this.shownSecret && this.shownSecret.invitationId;
      if (shown && !this.invitations.some((i) => i.id === shown && i.status === 'pending')) {
        const used = this.invitations.find((i) => i.id === shown);
        this.shownSecret = null;
        if (used && used.status === 'accepted') p.ctx.flash('Your one-use invitation link was used: they are in the group now.', 'ok');
      }
    } catch {
      this.invitations = [];
    } finally {
      this.loadingInvitations = false;
    }
    p.render();
  }

  async rotateCode() {
    const p = this.page;
    await p.run(async () => {
      const r = await p.ctx.api('POST', `/v1/groups/${enc(p.groupId)}/invite-code`);
      this.shownSecret = { label: `New invite code: ${r.code} (valid until ${shortWhen(r.expires_at)}).`, url: r.join_url, code: r.code };
      p.render(['invite-code']);
      const input = document.getElementById('share-link');
      if (input) input.focus();
    });
  }

  async disableCode() {
    const p = this.page;
    await p.run(async () => {
      await p.ctx.api('DELETE', `/v1/groups/${enc(p.groupId)}/invite-code`);
      this.shownSecret = null;
      p.ctx.flash('The invite code is disabled.', 'ok');
      p.render();
    });
  }

  async createInvitation(email, role) {
    const p = this.page;
    await p.run(async () => {
      const body = { role };
      if (email) body.invitee_email = email;
      const r = await p.ctx.api('POST', `/v1/groups/${enc(p.groupId)}/invitations`, body);
      if (r.invite_url) this.shownSecret = { label: 'One-use invitation link created.', url: r.invite_url, invitationId: r.invitation.id };
      else p.ctx.flash(`Invitation sent to ${r.invitation.invitee_email}. They will see it when they sign in.`, 'ok');
      await this.load();
    });
  }

  async revokeInvitation(i) {
    const p = this.page;
    await p.run(async () => {
      await p.ctx.api('DELETE', `/v1/invitations/${enc(i.id)}`);
      if (this.shownSecret && this.shownSecret.invitationId === i.id) this.shownSecret = null;
      await this.load();
    });
  }
}

async function copyText(text, button) {
  let ok = false;
  try { await navigator.clipboard.writeText(text); ok = true; } catch {
    const input = document.getElementById('share-link');
    if (input) { input.select(); ok = document.execCommand('copy'); }
  }
  const old = button.textContent;
  button.textContent = ok ? 'Copied' : 'Select the link and copy it';
  setTimeout(() => { button.textContent = old; }, 2000);
}
