-- 0024 (PostgreSQL): answers withdrawn by their author (see Migrations/sqlite/0024_completion_withdrawal.sql).
ALTER TABLE shared_completions ADD COLUMN withdrawn_ms BIGINT;
DROP INDEX shared_completions_one_answer;
CREATE UNIQUE INDEX shared_completions_one_answer ON shared_completions(alarm_id, scheduled_ms, user_id)
    WHERE withdrawn_ms IS NULL;
