-- 0002: the drill clock the store's times were written on (one row, or
-- none for a store written on the wall clock), so that tools reading the
-- store after the run can show its times as wall-clock instants.

CREATE TABLE drill_clock (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    start_ns BIGINT NOT NULL,                            -- wall instant of drill time 0
    speed    DOUBLE PRECISION NOT NULL CHECK (speed > 0) -- drill time per wall time
);
