// Package progress draws one-line progress reports on a terminal's stderr
// for the long offline commands (analyze, bench, sim).
//
// A Meter is on only when its writer is a terminal and the user did not
// ask for quiet (--quiet): a pipe, a file or a CI log gets nothing, so
// scripts that read stderr see only the commands' own messages. The line
// is redrawn in place ("\r" + erase to end of line) at most every Every,
// and erased by Clear before the command writes a row of its own on the
// same terminal, so rows on stdout never carry a stale progress line.
//
// A Meter is safe for use by several goroutines (bench suites and sim
// workers report from where they run); it never blocks on anything but
// its writer.
package progress
