// The group page's members section (group.js owns the page and its data): who is in the group, their
// roles and who is online, the owner's and admins' role, ownership and removal tools, and leaving or
// deleting the group. Reads and changes the page's `members` and `group`; never imports group.js.

import { enc } from './api.js';
import { h, confirmButton } from './dom.js';

const ROLE_RANK = { owner: 3, admin: 2, member: 1 };

export class MembersView {
  /** `page`: the GroupPage (its ctx, groupId, me, myRole, members, group, presence, render, run, leavePage, deleteGroup). */
  constructor(page) { this.page = page; }

  section() {
    const p = this.page;
    const meId = p.me && p.me.id;
    const role = p.myRole;
    const members = [...p.members.values()].sort((a, b) => ROLE_RANK[b.role] - ROLE_RANK[a.role] || a.display_name.localeCompare(b.display_name));
    return h('section', { 'aria-labelledby': 'members-h' },
      h('h2', { id: 'members-h' }, h('span', { id: 'members-head' }, `Members (${members.length})`)),
      h('ul', { class: 'members' }, members.map((m) => {
        const self = m.user_id === meId;
        const tools = [];
        if (role === 'owner' && !self) {
          const roleSelect = h('select', { 'data-key': `role-${m.user_id}`, 'aria-label': `Role of ${m.display_name}` },
            h('option', { value: 'member', selected: m.role === 'member' }, 'member'),
            h('option', { value: 'admin', selected: m.role === 'admin' }, 'admin'));
          roleSelect.addEventListener('change', () => this.setRole(m, roleSelect.value));
          tools.push(roleSelect,
            confirmButton(`Make ${m.display_name} the owner (you become an admin)`, 'Make owner', `owner-${m.user_id}`, () => this.transfer(m)));
        }
        if (!self && (role === 'owner' || (role === 'admin' && m.role === 'member'))) {
          tools.push(confirmButton(`Remove ${m.display_name}`, 'Remove', `remove-${m.user_id}`, () => this.removeMember(m)));
        }
        return h('li', { id: `member-${m.user_id}`, class: 'member' },
          avatar(m),
          h('span', { class: 'name' }, p.presence.has(m.user_id) ? h('span', { class: 'online', title: 'online now' }, '● ') : null,
            self ? `${m.display_name} (you)` : m.display_name),
          ' ', h('span', { class: `role role-${m.role}` }, m.role),
          tools.length ? h('span', { class: 'actions' }, tools) : null);
      })));
  }

  /** Leaving (a member, an admin) or deleting the group (the owner, who must hand ownership on to leave). */
  leaveSection() {
    const p = this.page;
    if (p.myRole === 'owner') {
      return h('section', { 'aria-labelledby': 'danger-h', class: 'danger' },
        h('h2', { id: 'danger-h' }, 'Group'),
        h('p', { class: 'hint' }, 'To leave, first make someone else the owner.'),
        confirmButton(`Delete the group “${p.group.name}” for everyone`, 'Delete group', 'delete-group', () => p.deleteGroup()));
    }
    return h('section', { 'aria-labelledby': 'danger-h', class: 'danger' },
      h('h2', { id: 'danger-h' }, 'Group'),
      confirmButton(`Leave “${p.group.name}”`, 'Leave group', 'leave-group', () => this.removeMember(p.members.get(p.me.id))));
  }

  async setRole(m, role) {
    const p = this.page;
    await p.run(async () => {
      const doc = await p.ctx.api('PATCH', `/v1/groups/${enc(p.groupId)}/members/${enc(m.user_id)}`, { role });
      p.members.set(doc.user_id, doc);
      p.render([`member-${doc.user_id}`]);
    });
  }

  async transfer(m) {
    const p = this.page;
    await p.run(async () => {
      const r = await p.ctx.api('POST', `/v1/groups/${enc(p.groupId)}/transfer`, { user_id: m.user_id });
      p.group = r.group;
      p.members = new Map(r.members.map((x) => [x.user_id, x]));
      p.ctx.flash(`${m.display_name} is now the owner.`, 'ok');
      p.render(['members-head']);
    });
  }

  async removeMember(m) {
    const p = this.page;
    const self = m.user_id === p.me.id;
    await p.run(async () => {
      await p.ctx.api('DELETE', `/v1/groups/${enc(p.groupId)}/members/${enc(m.user_id)}`);
      if (self) { p.leavePage(`You left ${p.group.name}.`); return; }
      p.members.delete(m.user_id);
      p.render(['members-head']);
    });
  }
}

/** A member's initials in a coloured circle (decoration beside the name; the colour follows the id). */
function avatar(m) {
  const words = String(m.display_name || '?').trim().split(/\s+/).filter(Boolean);
  const initials = (words.length > 1 ? words[0][0] + words[words.length - 1][0] : (words[0] || '?').slice(0, 2)).toUpperCase();
  let hash = 0;
  for (const ch of String(m.user_id)) hash = (hash * 31 + ch.charCodeAt(0)) >>> 0;
  return h('span', { class: `avatar avatar-${hash % 6}`, 'aria-hidden': 'true' }, initials);
}
