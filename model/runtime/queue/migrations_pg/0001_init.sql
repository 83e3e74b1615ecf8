-- 0001: the delivery queue, its attempt history, the dead-letter queue and
-- the replay audit, as in the SQLite schema. Times are unix nanoseconds
-- (0 = unset), durations ns. Ids sort bytewise (COLLATE "C"), as in SQLite,
-- so claim order does not depend on the database's locale.

CREATE TABLE deliveries (
    id          TEXT COLLATE "C" PRIMARY KEY, -- idempotency key, e.g. evt-000123:acme-0
    event       TEXT NOT NULL DEFAULT '',
    partner     TEXT NOT NULL DEFAULT '',     -- subscriber endpoint name
    cohort      TEXT NOT NULL DEFAULT '',
    payload     BYTEA,
    attempt     INTEGER NOT NULL DEFAULT 0,   -- attempts made so far
    first_seen  BIGINT NOT NULL DEFAULT 0,
    created     BIGINT NOT NULL DEFAULT 0,    -- scheduled arrival time
    run_at      BIGINT NOT NULL,
    prev_delay  BIGINT NOT NULL DEFAULT 0,
    lease_owner TEXT NOT NULL DEFAULT '',
    lease_until BIGINT NOT NULL DEFAULT 0,
    state       TEXT NOT NULL CHECK (state IN ('ready', 'leased', 'delivered', 'dead')),
    last_error  TEXT NOT NULL DEFAULT '',
    updated     BIGINT NOT NULL DEFAULT 0
);

-- Claim reads due rows in run_at order; id breaks ties deterministically.
CREATE INDEX deliveries_state_run_at ON deliveries (state, run_at, id);

-- Expired leases are found by expiry, however many live leases there are
-- (a dispatcher holds delayed deliveries leased).
CREATE INDEX deliveries_lease_until ON deliveries (lease_until) WHERE state = 'leased';

CREATE TABLE attempts (
    seq         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- insertion order
    delivery_id TEXT COLLATE "C" NOT NULL,
    ordinal     INTEGER NOT NULL,
    started     BIGINT NOT NULL DEFAULT 0,
    ended       BIGINT NOT NULL DEFAULT 0,
    status      INTEGER NOT NULL DEFAULT 0,
    error       TEXT NOT NULL DEFAULT '',
    owner       TEXT NOT NULL DEFAULT ''
);

CREATE INDEX attempts_delivery ON attempts (delivery_id);

CREATE TABLE dead_letters (
    id         TEXT COLLATE "C" PRIMARY KEY, -- the delivery id
    event      TEXT NOT NULL DEFAULT '',
    partner    TEXT NOT NULL DEFAULT '',
    cohort     TEXT NOT NULL DEFAULT '',
    reason     TEXT NOT NULL,
    last_error TEXT NOT NULL DEFAULT '',
    attempts   INTEGER NOT NULL DEFAULT 0,
    created    BIGINT NOT NULL DEFAULT 0,
    first_seen BIGINT NOT NULL DEFAULT 0,
    dead_at    BIGINT NOT NULL DEFAULT 0,
    payload    BYTEA
);

CREATE INDEX dead_letters_reason ON dead_letters (reason, dead_at);
CREATE INDEX dead_letters_dead_at ON dead_letters (dead_at, id);

CREATE TABLE replays (
    id      BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at      BIGINT NOT NULL,
    who     TEXT NOT NULL DEFAULT '',
    filter  TEXT NOT NULL,                  -- JSON
    count   INTEGER NOT NULL,
    batch   INTEGER NOT NULL,
    dry_run BOOLEAN NOT NULL DEFAULT false
);
