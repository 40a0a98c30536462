// Package wireshark holds ldafwd.lua, a Wireshark/tshark dissector for
// ldafwd's control frames (docs/protocol.md), and its test: control frames
// of every type, written by package control's own encoder (Sender,
// EndWriter, AppendExchange) into a pcap, decoded by tshark with the
// dissector and compared field by field with control.ParseFrame. The
// package has no non-test code.
package wireshark
