// Package report defines the JSON lines ldafwd prints (docs/reports.md) —
// "type":"interval", "port", "status", "demo_summary" and "bench" here;
// analyze and sim define their summary and point records — and a Writer
// that copies each line to stdout and to --report files, with
// "schema":SchemaVersion after the type. The field names are a contract
// with users' scripts and the tests: fields are added, never renamed;
// schema.json is that contract as a JSON Schema, and a test validates
// every command's output against it. A delay without an estimate (an
// invalid line, no sample, NaN, the LDS's standard deviation) is written
// as null, never 0, so averages over lines skip it. '>' is not
// HTML-escaped because directions ("a>b") and flows ("6 a:1>b:2") are
// grepped for literally. A Writer is safe for concurrent use.
//
// An interval line's validity is a Verdict: the causes it is not valid
// for, each a Code from one fixed table (verdict.go) with the scope it
// leaves unknown (the loss, the delay or both) and a place in one
// precedence order. valid, reason (the leading cause's sentence),
// reason_code, loss_valid and delay_valid are rendered from it
// (Interval.Invalidate, Clear, SetVerdict); which cause leads is decided
// by the table, never by comparing sentences, and metric labels take the
// code, which carries no number.
package report
