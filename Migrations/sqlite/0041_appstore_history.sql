-- 0041: the App Store Get Notification History catch-up (docs/subscriptions.md#app-store-server-api).
-- One row (id = 1). caught_up_ms: the end of the last catch-up that read every page; the next one asks
-- from a little before it. window_start_ms / window_end_ms / page_token: a catch-up that stopped at its
-- page cap, continued from page_token by the next pass (NULL: none in progress).
CREATE TABLE appstore_history (
    id                 INTEGER PRIMARY KEY CHECK (id = 1),
    caught_up_ms       INTEGER,
    window_start_ms    INTEGER,
    window_end_ms      INTEGER,
    page_token         TEXT
);
