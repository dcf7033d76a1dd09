-- 0029: the per-recipient cap on invitation mails (issue 37, finding 9; docs/mail.md#limits) counts an
-- address's recent mails of one kind from the outbox; this index answers it (and the once-an-hour
-- account_exists notice) without reading the whole outbox.
CREATE INDEX mail_outbox_recipient ON mail_outbox(recipient, kind, created_ms);
