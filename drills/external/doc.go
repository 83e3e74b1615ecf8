// Package external runs drills against somebody else's delivery pipeline
// (`mode = "external"`) and runs `stormdrill verify`, the release checklist
// of a retrying pipeline, against one.
//
// The harness optionally builds and starts the system as a child process,
// injects the drill's events into it on the drill's arrival schedule (an
// HTTP POST per event, a command per event, or JSON Lines), and plays the
// fake partners its deliveries go to. Every attempt is observed at the
// partner and identified by its idempotency key; those records and the
// injector's (each delivery's scheduled arrival, and whether the ingest
// refused it) feed reports/tally, the instrument sim and live mode feed,
// which assembles every figure they share. Beside it comes what only the
// outside can see: Retry-After compliance, the observed backoff schedule,
// calls made to a partner while it was down and the concurrency each
// partner saw. External runs are wall time: a third-party system cannot be
// sped up.
package external
