// Package pcapfile reads pcap and pcapng captures strictly: every record
// is checked as it is read (block trailers, lengths against their blocks,
// impossible timestamps, link types), and damage is a *DamageError naming
// the record and byte offset, never a silent end of the stream that would
// read as loss. It is the one capture reader of the project: the pcap port
// (package dataplane) replays captures through it and the offline analysis
// (package analyze) measures them with it. Reading a good record into a
// caller's buffer allocates nothing.
package pcapfile
