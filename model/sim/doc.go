// Package sim is the discrete-event engine: a virtual clock, an event heap
// ordered by (time, sequence), and seed derivation so that one drill seed
// decides every random stream while each component keeps its own.
package sim
