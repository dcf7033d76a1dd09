-- 0022 (PostgreSQL): attachments (see Migrations/sqlite/0022_attachments.sql).
CREATE TABLE attachments (
    id                TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    owner_kind        TEXT COLLATE "C" NOT NULL
                      CHECK (owner_kind IN ('shared_alarm', 'personal_alarm', 'shared_completion')),
    owner_id          TEXT COLLATE "C" NOT NULL,
    group_id          TEXT COLLATE "C" REFERENCES groups(id) ON DELETE CASCADE,
    uploaded_by       TEXT COLLATE "C" NOT NULL,
    file_type         TEXT COLLATE "C" NOT NULL,
    uploaded_type     TEXT COLLATE "C" NOT NULL,
    size_bytes        BIGINT NOT NULL CHECK (size_bytes > 0),
    width             BIGINT NOT NULL CHECK (width > 0),
    height            BIGINT NOT NULL CHECK (height > 0),
    sha256            TEXT COLLATE "C" NOT NULL CHECK (length(sha256) = 64),
    thumbnail_sha256  TEXT COLLATE "C" NOT NULL CHECK (length(thumbnail_sha256) = 64),
    thumbnail_width   BIGINT NOT NULL,
    thumbnail_height  BIGINT NOT NULL,
    created_ms        BIGINT NOT NULL,
    deleted_ms        BIGINT
);
CREATE INDEX attachments_owner ON attachments(owner_kind, owner_id, created_ms, id);
CREATE INDEX attachments_sha256 ON attachments(sha256) WHERE deleted_ms IS NULL;
CREATE INDEX attachments_thumbnail ON attachments(thumbnail_sha256) WHERE deleted_ms IS NULL;
CREATE INDEX attachments_uploader ON attachments(uploaded_by, created_ms);

CREATE TRIGGER attachments_frozen_insert BEFORE INSERT ON attachments
FOR EACH ROW EXECUTE FUNCTION reject_if_group_frozen();
CREATE TRIGGER attachments_frozen_update BEFORE UPDATE ON attachments
FOR EACH ROW EXECUTE FUNCTION reject_if_group_frozen();
