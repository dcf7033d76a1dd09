-- 0034: anonymous accounts (docs/apps.md#anonymous-start). `anonymous_ms`: when the account was started
-- without email or password (POST /v1/auth/anonymous), NULL for every other account; its `email` is a
-- placeholder (`anonymous+<id>@invalid`) that no sign-in or mail uses, its password hash empty.
-- `migrated_ms`: when it became a real account in place (POST /v1/me/upgrade), keeping its id.
ALTER TABLE users ADD COLUMN anonymous_ms BIGINT;
ALTER TABLE users ADD COLUMN migrated_ms BIGINT;
-- The idle-anonymous purge finds them without a scan.
CREATE INDEX users_anonymous ON users(anonymous_ms) WHERE anonymous_ms IS NOT NULL AND deleted_ms IS NULL;
