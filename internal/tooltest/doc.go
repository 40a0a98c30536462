// Package tooltest finds the real programs that tests run against
// (promtool, prometheus, tshark, …): a test without the program is skipped
// with the package to install, except under CI (CI set), where
// scripts/deps.sh has installed it and a missing program is a failure, so
// that no check goes quietly unrun.
package tooltest
