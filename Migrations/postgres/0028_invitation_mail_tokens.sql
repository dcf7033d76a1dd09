-- 0028 (PostgreSQL): an email invitation's mail token (see Migrations/sqlite/0028_invitation_mail_tokens.sql).
ALTER TABLE invitations ADD COLUMN mail_token_hash BYTEA CHECK (mail_token_hash IS NULL OR length(mail_token_hash) = 32);
CREATE UNIQUE INDEX invitations_mail_token ON invitations(mail_token_hash) WHERE mail_token_hash IS NOT NULL;
