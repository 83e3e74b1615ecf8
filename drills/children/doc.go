// Package children keeps the processes a run starts (the dispatcher
// processes of a live drill; the build, the system and the commands of an
// external one), each in a process group of its own, so that the harness
// stops every one of them, and whatever they started, when it is told to
// stop (SIGINT, SIGTERM) at any moment of the run.
package children
