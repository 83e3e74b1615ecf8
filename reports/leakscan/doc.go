// Package leakscan finds template or Go source text in what a report shows
// its reader: a template action, a Go statement, a fmt verb error, a nil. The
// report tests scan every rendered variant with it, and the browser tests
// scan the text of the rendered page.
package leakscan
