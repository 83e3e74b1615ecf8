-- 0003: the claim index also carries partner and created, so a sample of
-- the pending rows (ready and leased: counts by due and held partner, the
-- oldest created) reads the index alone and looks up no table row; under
-- overload the due backlog is tens of thousands of rows, read every sample.
DROP INDEX deliveries_state_run_at;
CREATE INDEX deliveries_state_run_at ON deliveries (state, run_at, id, partner, created);
