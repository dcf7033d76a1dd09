-- 0022: attachments — photos and PDFs on shared alarms (issue 20; docs/attachments.md). The file itself
-- lives outside the database, content-addressed under <data-dir>/attachments/ab/cd/<sha256>; a row
-- names it by its SHA-256. The file is written (temp file, fsync, rename) before the row's transaction,
-- so a committed row always has its file; a file no live row names is removed by the orphan sweep once
-- it is older than its grace (Sweeper job `attachment_orphans`). Same bytes uploaded twice: two rows, one file.
CREATE TABLE attachments (
    id                TEXT PRIMARY KEY NOT NULL,    -- UUID, lowercase
    owner_kind        TEXT NOT NULL CHECK (owner_kind IN ('shared_alarm', 'personal_alarm', 'shared_completion')),
    owner_id          TEXT NOT NULL,                -- the alarm's (or completion's) id
    group_id          TEXT REFERENCES groups(id) ON DELETE CASCADE,  -- shared owners; NULL for personal ones
    uploaded_by       TEXT NOT NULL,                -- user id (no foreign key, like shared_alarms.created_by)
    file_type         TEXT NOT NULL,                -- MIME type of the stored bytes (image/jpeg, image/png, application/pdf)
    uploaded_type     TEXT NOT NULL,                -- what the upload was (image/heic is stored as image/jpeg)
    size_bytes        INTEGER NOT NULL CHECK (size_bytes > 0),
    width             INTEGER NOT NULL CHECK (width > 0),
    height            INTEGER NOT NULL CHECK (height > 0),
    sha256            TEXT NOT NULL CHECK (length(sha256) = 64),   -- hex of the stored file
    thumbnail_sha256  TEXT NOT NULL CHECK (length(thumbnail_sha256) = 64),
    thumbnail_width   INTEGER NOT NULL,
    thumbnail_height  INTEGER NOT NULL,
    created_ms        INTEGER NOT NULL,
    deleted_ms        INTEGER                       -- soft delete: no longer listed or served; the file goes with the sweep
) STRICT;
CREATE INDEX attachments_owner ON attachments(owner_kind, owner_id, created_ms, id);
CREATE INDEX attachments_sha256 ON attachments(sha256) WHERE deleted_ms IS NULL;
CREATE INDEX attachments_thumbnail ON attachments(thumbnail_sha256) WHERE deleted_ms IS NULL;
CREATE INDEX attachments_uploader ON attachments(uploaded_by, created_ms);

-- A frozen group's attachments are read-only like its other rows (0005).
CREATE TRIGGER attachments_frozen_insert BEFORE INSERT ON attachments
WHEN (SELECT frozen_ms FROM groups WHERE id = NEW.group_id) IS NOT NULL
BEGIN SELECT RAISE(ABORT, 'group_frozen'); END;
CREATE TRIGGER attachments_frozen_update BEFORE UPDATE ON attachments
WHEN (SELECT frozen_ms FROM groups WHERE id = NEW.group_id) IS NOT NULL
BEGIN SELECT RAISE(ABORT, 'group_frozen'); END;
