// Package queue holds the durable delivery stores behind one interface: an
// in-memory store for tests, SQLite (pure Go, WAL) as the embedded default
// for live drills, and PostgreSQL for several dispatcher processes on one
// queue (claims with FOR UPDATE SKIP LOCKED). Schema migrations are
// embedded.
//
// A dispatcher claims due deliveries with a lease, works on them and hands
// back a batch of completions; each batch is one transaction, and a
// completion from an owner whose lease was taken over is ignored as stale
// (at-least-once delivery). Dead letters stay replayable by reason, in
// bounded batches at a bounded rate, with an audit record per batch.
//
// Times are whatever clock the writer runs on: a live drill at a speed
// other than 1 writes drill-clock instants and records that Clock
// (SetClock), so a reader can turn them into wall-clock instants.
//
// Open picks a store by DSN: "sqlite:PATH", "postgres://USER:PASS@127.0.0.1:PORT/DB" or "memory:".
package queue
