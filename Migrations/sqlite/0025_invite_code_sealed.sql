-- 0025: owners and admins can see the current invite code again (issue 33; docs/design.md#invite-codes).
-- Beside the keyed hash every lookup uses, a copy sealed with AES-128-GCM under a key derived from the
-- server secret (`InviteCode.sealed`): a leaked database file still reveals no code. Codes made before
-- this migration have none (NULL) until they are rotated.
ALTER TABLE invite_codes ADD COLUMN code_sealed BLOB;
