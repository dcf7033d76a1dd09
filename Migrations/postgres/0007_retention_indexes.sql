-- 0007 (PostgreSQL, as Migrations/sqlite/0007). Issue 13: the retention sweep's deletes scanned whole tables, so each run cost more as sessions,
-- login failures and completions accumulated (and held the write lock longer). Each delete's
-- predicate now has an index (found by Tests/AppTests/QueryPlanTests.swift).
CREATE INDEX login_failures_at ON login_failures(at_ms);
CREATE INDEX sessions_revoked ON sessions(revoked_ms) WHERE revoked_ms IS NOT NULL;
CREATE INDEX shared_completions_completed ON shared_completions(completed_ms);
