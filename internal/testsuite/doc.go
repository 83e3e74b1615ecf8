// Package testsuite is what the tests of every package share: which tier
// runs them (the quick `make test`, or the full `make check`), a record of
// the tests that could not run for want of PostgreSQL or Chromium (so the
// run names them instead of skipping them quietly), a wait for a
// condition with a deadline in place of a sleep, and the process's CPU
// time for benchmarks that report it. Only tests import it.
package testsuite
