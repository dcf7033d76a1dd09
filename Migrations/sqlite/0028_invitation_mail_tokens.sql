-- 0028: an email invitation's mail links to /invite/{token} (docs/apps.md#deep-links), so the app (or the
-- web client) that opens the link can preview and answer it. The token is the mail's alone: its hash is
-- kept here, apart from token_hash (a link invitation's, tied to method = 'link' by 0002's CHECK), and it
-- names the invitation for its addressee only (InvitationStore.resolve checks the address as before).
ALTER TABLE invitations ADD COLUMN mail_token_hash BLOB CHECK (mail_token_hash IS NULL OR length(mail_token_hash) = 32);
CREATE UNIQUE INDEX invitations_mail_token ON invitations(mail_token_hash) WHERE mail_token_hash IS NOT NULL;
