// Package queuetest is test support for the queue stores: a fresh
// PostgreSQL schema per test on the server that STORMDRILL_TEST_POSTGRES
// names. Only tests import it.
package queuetest
