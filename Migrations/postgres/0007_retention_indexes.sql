-- Issue 13 (PostgreSQL 15): each retention delete's predicate has an index, as in
-- Migrations/sqlite/0007_retention_indexes.sql (found there by Tests/AppTests/QueryPlanTests.swift).
CREATE INDEX login_failures_at ON login_failures(at_ms);
CREATE INDEX sessions_revoked ON sessions(revoked_ms) WHERE revoked_ms IS NOT NULL;
CREATE INDEX shared_completions_completed ON shared_completions(completed_ms);
