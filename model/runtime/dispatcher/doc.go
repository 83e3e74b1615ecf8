// Package dispatcher is the dispatcher runtime: the real system a live drill
// exercises. It claims due deliveries from a durable queue (queue.Store)
// with a lease, feeds them to a model/dispatchcore core, makes the attempts with
// a bounded pool of HTTP workers, persists every transition, renews the
// leases of what it holds, and posts rate-limited dead-letter alerts.
//
// It is configured by its own Config (workers, leases, claim batch, attempt
// timeout, partners with their retry policy, breaker and budget in model's
// types, the alert sink and the clock), never by a drill: Config.Validate
// checks every field against a documented range, and ReadFile reads the
// same configuration from a JSON file, naming each bad key
// ("FILE: key: what is wrong"). Run refuses an invalid Config before it
// claims anything. The `stormdrill dispatch` command runs it as a process;
// the live runner writes its configuration file from a drill.
//
// Ingest is its HTTP ingest, for a dispatcher that serves as a system of
// its own (an external drill's, say): POST /events takes an event
// (IngestEvent, the body an external drill's HTTP ingest sends) and
// enqueues its deliveries durably in one transaction, each under the
// endpoint its URL names; a queue at capacity answers 503 with a
// Retry-After.
//
// An attempt's outcome is its HTTP status only when the whole answer
// arrived: redirects are not followed (a 3xx is the outcome), and a body
// that fails to arrive (cut short, or still coming at the attempt timeout)
// makes the attempt a transport failure (reset, or timeout) whatever its
// status line said. A refused connection is also reported on Config.Events
// (EventRefused), since no partner sees it.
//
// Time: the store and the policy see drill time, on a Clock that runs Speed
// times faster than the wall clock from Start (Speed 1 for a real system).
// This package reads the wall clock through that Clock; it is not part of
// the pure core. A Retry-After off the wire is wall time (delta-seconds or
// an HTTP-date), and is multiplied by Speed into drill time.
package dispatcher
