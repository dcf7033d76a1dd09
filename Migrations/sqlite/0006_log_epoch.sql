-- 0006: the change log's epoch — a random id naming this database's history. Realtime snapshots
-- carry it and a client resumes with it (`subscribe … since, epoch`): when the server answers with
-- another epoch (a database restored from a backup, whose seqs may be reused for different changes),
-- the client gets a fresh `reset` snapshot instead of a replay. One row, made here; every
-- `chronir-admin db backup` gives its copy a new one (LogEpoch.rotate), so a restore never
-- continues an old history.
CREATE TABLE log_epoch (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    epoch TEXT NOT NULL CHECK (length(epoch) = 32)
) STRICT;
INSERT INTO log_epoch (id, epoch) VALUES (1, lower(hex(randomblob(16))));
