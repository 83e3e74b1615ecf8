-- 0001: the delivery queue, its attempt history, the dead-letter queue and
-- the replay audit. Times are unix nanoseconds (0 = unset), durations ns.

CREATE TABLE deliveries (
    id          TEXT PRIMARY KEY,           -- idempotency key, e.g. evt-000123:acme-0
    event       TEXT NOT NULL DEFAULT '',
    partner     TEXT NOT NULL DEFAULT '',   -- subscriber endpoint name
    cohort      TEXT NOT NULL DEFAULT '',
    payload     BLOB,
    attempt     INTEGER NOT NULL DEFAULT 0, -- attempts made so far
    first_seen  INTEGER NOT NULL DEFAULT 0,
    created     INTEGER NOT NULL DEFAULT 0, -- scheduled arrival time
    run_at      INTEGER NOT NULL,
    prev_delay  INTEGER NOT NULL DEFAULT 0,
    lease_owner TEXT NOT NULL DEFAULT '',
    lease_until INTEGER NOT NULL DEFAULT 0,
    state       TEXT NOT NULL CHECK (state IN ('ready', 'leased', 'delivered', 'dead')),
    last_error  TEXT NOT NULL DEFAULT '',
    updated     INTEGER NOT NULL DEFAULT 0
);

-- Claim reads due rows in run_at order; id breaks ties deterministically.
CREATE INDEX deliveries_state_run_at ON deliveries (state, run_at, id);

CREATE TABLE attempts (
    delivery_id TEXT NOT NULL,
    ordinal     INTEGER NOT NULL,
    started     INTEGER NOT NULL DEFAULT 0,
    ended       INTEGER NOT NULL DEFAULT 0,
    status      INTEGER NOT NULL DEFAULT 0,
    error       TEXT NOT NULL DEFAULT '',
    owner       TEXT NOT NULL DEFAULT ''
);

CREATE INDEX attempts_delivery ON attempts (delivery_id);

CREATE TABLE dead_letters (
    id         TEXT PRIMARY KEY,            -- the delivery id
    event      TEXT NOT NULL DEFAULT '',
    partner    TEXT NOT NULL DEFAULT '',
    cohort     TEXT NOT NULL DEFAULT '',
    reason     TEXT NOT NULL,
    last_error TEXT NOT NULL DEFAULT '',
    attempts   INTEGER NOT NULL DEFAULT 0,
    created    INTEGER NOT NULL DEFAULT 0,
    first_seen INTEGER NOT NULL DEFAULT 0,
    dead_at    INTEGER NOT NULL DEFAULT 0,
    payload    BLOB
);

CREATE INDEX dead_letters_reason ON dead_letters (reason, dead_at);

CREATE TABLE replays (
    id      INTEGER PRIMARY KEY,
    at      INTEGER NOT NULL,
    who     TEXT NOT NULL DEFAULT '',
    filter  TEXT NOT NULL,                  -- JSON
    count   INTEGER NOT NULL,
    batch   INTEGER NOT NULL,
    dry_run INTEGER NOT NULL DEFAULT 0
);
