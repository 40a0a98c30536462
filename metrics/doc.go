// Package metrics exports a running appliance to Prometheus (docs/reports.md):
// per direction, measurement class (MEC) and synopsis, counters of the
// valid intervals' packets and of their delays' first and second moments
// (packet-weighted, so that any window and any set of appliances gives the
// mean and standard deviation of the delay: docs/metrics.md), counters of
// intervals by validity and reason, the last interval's validity and
// number, and — read at scrape time — the port, lane and control-frame
// counters. Every metric carries the segment's name as the label segment.
// It also serves /healthz for liveness checks.
//
// Units follow Prometheus conventions: delays in seconds (the reports'
// *_ns fields divided by 1e9), packets and bytes as plain counts, every
// monotonic count a counter with the _total suffix; every name has the
// ldafwd_ prefix.
//
// Lifetimes: one Metrics per appliance, created before the appliance
// starts (SetState("starting")) and served until the process exits. The
// sources (ports, lanes, control counters) are attached with SetSources
// once they exist; until then the scrape-time families are absent.
//
// Concurrency: Observe is called from the appliance's control goroutine
// (its Reports callback), scrapes and /healthz from HTTP goroutines, and
// SetState/SetSources from main. Everything is safe for concurrent use;
// nothing here is on the packet path — the lane and port counters are
// atomics the workers update anyway, read only when Prometheus scrapes.
//
// Hazards: report reasons are sentences with measured numbers in them; the
// reason label is the leading cause's code instead (report.Code, a fixed
// table), so its values are bounded by that table and "ok".
package metrics
