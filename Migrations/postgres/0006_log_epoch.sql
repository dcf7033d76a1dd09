-- 0006 (PostgreSQL): the change log's epoch, a random id naming this database's history (see
-- Migrations/sqlite/0006). 32 lowercase hex digits from a random UUID's 122 random bits plus its
-- fixed version/variant digits: unique per database, which is all the epoch must be.
CREATE TABLE log_epoch (
    id BIGINT PRIMARY KEY CHECK (id = 1),
    epoch TEXT COLLATE "C" NOT NULL CHECK (length(epoch) = 32)
);
INSERT INTO log_epoch (id, epoch) VALUES (1, replace(gen_random_uuid()::text, '-', ''));
