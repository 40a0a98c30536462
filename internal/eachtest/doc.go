// Package eachtest checks a counter set's Each method: the stable names
// exporters (Prometheus, logs) take from it instead of a list of their
// own.
package eachtest
