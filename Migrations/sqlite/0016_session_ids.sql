-- 0016: a public id per session (issue 18: GET /v1/me/sessions, DELETE /v1/me/sessions/{id}). The
-- token hash stays private — it is the session's lookup key, and whoever holds a token can compute
-- it; clients and operators name a session by this random id instead (32 lowercase hex characters,
-- SessionStore.create). Sessions that exist already get one here.
ALTER TABLE sessions ADD COLUMN public_id TEXT;
UPDATE sessions SET public_id = lower(hex(randomblob(16))) WHERE public_id IS NULL;
CREATE UNIQUE INDEX sessions_public_id ON sessions(public_id);
