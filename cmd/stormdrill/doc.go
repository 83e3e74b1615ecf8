// Command stormdrill runs failure drills against a retrying delivery
// pipeline and reports what happened: run, validate, compare, plan,
// capacity, sweep, partner, dispatch, dlq, keys and bench. It holds only
// flags, wiring and exit codes; the logic lives in the packages it calls.
package main
