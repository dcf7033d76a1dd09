-- 0002: groups, memberships, invite codes and their attempt records, invitations.
-- Same conventions as 0001: STRICT tables, epoch-ms *_ms columns, CHECK'd canonical enum strings,
-- lowercase UUID ids, soft deletes via deleted_ms.

CREATE TABLE groups (
    id              TEXT PRIMARY KEY NOT NULL,
    name            TEXT NOT NULL,                 -- 1…100 characters
    description     TEXT,                          -- ≤ 500 characters
    icon_name       TEXT,
    color_tag       TEXT,                          -- '#RRGGBB'
    owner_id        TEXT NOT NULL REFERENCES users(id),
    max_members     INTEGER NOT NULL CHECK (max_members >= 1),
    member_count    INTEGER NOT NULL CHECK (member_count >= 0 AND member_count <= max_members),
    version         INTEGER NOT NULL DEFAULT 1,
    created_ms      INTEGER NOT NULL,
    updated_ms      INTEGER NOT NULL,
    deleted_ms      INTEGER                        -- soft delete: members' access ends at once
) STRICT;
CREATE INDEX groups_owner ON groups(owner_id) WHERE deleted_ms IS NULL;

-- One row per (group, user) ever admitted. Leaving or removal keeps the row (status, removed_ms).
CREATE TABLE group_members (
    group_id        TEXT NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
    user_id         TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    display_name    TEXT NOT NULL,                 -- cached from users at join time
    role            TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
    status          TEXT NOT NULL CHECK (status IN ('active', 'removed', 'left')),
    joined_ms       INTEGER NOT NULL,              -- latest (re)join
    removed_ms      INTEGER,                       -- when the membership ended (removed or left)
    removed_by      TEXT,                          -- who removed the member (NULL when they left)
    PRIMARY KEY (group_id, user_id),
    CHECK ((status = 'active') = (removed_ms IS NULL))
) STRICT, WITHOUT ROWID;
CREATE INDEX group_members_user ON group_members(user_id, status);
-- At most one owner per group.
CREATE UNIQUE INDEX group_members_one_owner ON group_members(group_id) WHERE role = 'owner' AND status = 'active';

-- A group's current invite code. Only HMAC-SHA-256(server secret, normalised code) is stored, so the
-- file reveals no code. Rotation replaces the row's hash; DELETE sets disabled_ms.
CREATE TABLE invite_codes (
    group_id        TEXT PRIMARY KEY NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
    code_hash       BLOB NOT NULL UNIQUE CHECK (length(code_hash) = 32),
    created_by      TEXT NOT NULL,
    created_ms      INTEGER NOT NULL,
    expires_ms      INTEGER NOT NULL,
    disabled_ms     INTEGER,
    locked_until_ms INTEGER                        -- set when failures reach the per-code limit
) STRICT, WITHOUT ROWID;

-- Failed join attempts, counted per subject by AttemptWindow: 'code:<group_id>', 'user:<id>',
-- 'ip:<address>'. Kept 24 hours by the retention sweeper (index on at_ms).
CREATE TABLE invite_attempts (
    id              INTEGER PRIMARY KEY,
    subject         TEXT NOT NULL,
    at_ms           INTEGER NOT NULL
) STRICT;
CREATE INDEX invite_attempts_subject ON invite_attempts(subject, at_ms);
CREATE INDEX invite_attempts_at ON invite_attempts(at_ms);

-- Invitations by email or by link. Link tokens are stored only as SHA-256(token bytes).
CREATE TABLE invitations (
    id              TEXT PRIMARY KEY NOT NULL,
    group_id        TEXT NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
    invited_by      TEXT NOT NULL REFERENCES users(id),
    invitee_email   TEXT,                          -- normalised; NULL for a link invitation
    token_hash      BLOB UNIQUE CHECK (token_hash IS NULL OR length(token_hash) = 32),
    method          TEXT NOT NULL CHECK (method IN ('email', 'link')),
    role            TEXT NOT NULL CHECK (role IN ('admin', 'member')),
    status          TEXT NOT NULL CHECK (status IN ('pending', 'accepted', 'declined', 'expired', 'revoked')),
    accepted_by     TEXT,
    created_ms      INTEGER NOT NULL,
    expires_ms      INTEGER NOT NULL,
    responded_ms    INTEGER,
    CHECK ((method = 'email') = (invitee_email IS NOT NULL)),
    CHECK ((method = 'link') = (token_hash IS NOT NULL))
) STRICT;
CREATE INDEX invitations_group ON invitations(group_id, created_ms);
CREATE INDEX invitations_invitee ON invitations(invitee_email, status) WHERE invitee_email IS NOT NULL;
CREATE INDEX invitations_inviter ON invitations(invited_by, created_ms);
CREATE INDEX invitations_expires ON invitations(expires_ms);
