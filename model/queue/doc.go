// Package queue holds the durable delivery stores behind one interface: an
// in-memory store for tests and the simulation, and SQLite (pure Go, WAL) as
// the embedded default for live drills. Schema migrations are embedded.
package queue
