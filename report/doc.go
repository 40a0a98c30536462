// Package report defines the JSON lines ldafwd prints (docs/reports.md) —
// "type":"interval", "type":"port" and "type":"bench" — and a Writer that
// copies each line to stdout and to --report files. The field names are a
// contract with users' scripts and the tests: fields are added, never
// renamed. Values JSON cannot carry (NaN, ±Inf) are written as 0 on lines
// whose valid:false and reason say why; '>' is not HTML-escaped because
// directions ("a>b") and flows ("6 a:1>b:2") are grepped for literally.
// A Writer is safe for concurrent use.
package report
