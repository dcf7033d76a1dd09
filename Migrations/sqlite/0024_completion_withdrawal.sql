-- 0024: an answer can be taken back by its author for a short window (issue 33; docs/design.md#answers-
-- retries-and-undo). The row stays, marked withdrawn: the completion log is an audit trail, not an edit.
-- One standing answer per member per occurrence: a withdrawn one no longer holds the place, so the
-- member can answer again.
ALTER TABLE shared_completions ADD COLUMN withdrawn_ms INTEGER;
DROP INDEX shared_completions_one_answer;
CREATE UNIQUE INDEX shared_completions_one_answer ON shared_completions(alarm_id, scheduled_ms, user_id)
    WHERE withdrawn_ms IS NULL;
