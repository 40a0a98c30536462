// Package rules writes the Prometheus recording and alerting rules of a
// fleet of ldafwd appliances from a paths file: per segment the mean and
// standard deviation of the one-way delay and the loss ratio over a window,
// computed from the appliances' counters; per path (an ordered list of
// segments) the same composed from its segments; and the alerts. See
// docs/fleet.md. `ldafwd rules` is its command:
//
//	ldafwd rules --paths scripts/prometheus/paths.conf --out scripts/prometheus/ldafwd-rules.yml
//
// The rules depend on nothing but the metric names of docs/metrics.md and
// Prometheus's own functions; promtool check rules and promtool test rules
// (scripts/prometheus/ldafwd-rules_test.yml) cover what they compute.
package rules
