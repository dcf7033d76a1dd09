-- 0009 (PostgreSQL): the fingerprint of the server secret the database's invite codes are keyed
-- with (see Migrations/sqlite/0009). With several instances on one database it is what makes an
-- instance started with another server.secret refuse to start: copy the first instance's file.
CREATE TABLE server_secret_fingerprint (
    id              BIGINT PRIMARY KEY CHECK (id = 1),
    fingerprint     BYTEA NOT NULL CHECK (length(fingerprint) = 32),
    created_ms      BIGINT NOT NULL
);
