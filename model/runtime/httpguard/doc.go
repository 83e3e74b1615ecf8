// Package httpguard refuses the HTTP requests that a web page open in a
// browser on the same machine could make to one of stormdrill's loopback
// servers: the fake partner's control API and alert sink, the dispatcher's
// event ingest and every /metrics. One Policy, one check, for all of them.
package httpguard
