// Package demo is `ldafwd demo` and the appliance's test bench: two
// appliances in one process, joined by an impaired ring link, with a
// generator in front of the first and a sink behind the second.
//
//	generator ─ring─ [a  ldafwd#1  b] ═impaired segment═ [a  ldafwd#2  b] ─ring─ sink
//
// The impairment stage (dataplane.Impairer) keeps every packet's exact
// fate and delay, so each report line carries its truth (true_* fields):
// the fault, property and accuracy tests hold the appliance's lines to it.
//
// Run drives the appliances on the wall clock, each with its workers and
// control goroutine, or, with Config.SimulatedTime, on one goroutine and
// one simulated clock (simdemo.go): the workers are never started (the
// driver turns them, Appliance.SimTurn), the control sides have no
// goroutine (the driver steps them, Appliance.SimStep, and advances Stop's
// phases), and the same seed and configuration give the same report lines
// byte for byte. Sender restarts (Config.RestartAt) and clock steps
// (Config.ClockStepAt) are placed on simulated time; several queues,
// captures and rate 0 run on the wall clock only.
package demo
