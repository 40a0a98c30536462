// Package classifier turns a raw Ethernet frame into what every synopsis
// needs to record it: the packet identity (one 64-bit hash over the
// packet's invariant bytes), the flow key (5-tuple) and its
// hash, and the packet's measurement equivalence class (MEC, ToN paper
// Sec. II: flows a router treats alike — same VLAN, QoS class, prefixes,
// ports — whose latency is reported together).
//
// # Roles
//
//   - Parse(frame, &meta) fills a Meta once per packet. Meta.Hash is the
//     identity both ends of a measured segment must agree on, so it covers
//     only bytes no router, switch or NIC changes on the way: IPv4/IPv6
//     addresses, protocol, IPv4 identification, total length and fragment
//     field, IPv6 payload length and flow label, and a 32-byte window of
//     the L4 header and payload with the L4 checksum zeroed. Never MAC
//     addresses, VLAN tags, TTL/hop limit, DSCP/ECN or the IPv4 header
//     checksum. Through one level of GRE, VXLAN, Geneve or MPLS it also
//     covers the inner IPv4/IPv6 packet's identity (tunnel.go): tunnel
//     endpoints often write a constant outer IP identification. The exact
//     byte layout is in parse.go and tunnel.go; it is a contract between
//     two appliances.
//   - Meta.FlowHash hashes the 5-tuple for per-flow synopses (LDS); it is
//     0 for frames that are not IP.
//   - FlagLinkLocal marks frames a segment's own devices originate or
//     consume (STP, LLDP, LACP, ARP, OSPF to 224.0.0.5, NDP…; the list is
//     in linklocal.go). Classifier.Measure leaves them out of every class
//     unless a rule with linklocal:yes claims them: a switch's BPDU would
//     otherwise be a packet the sender never sent, a router's ARP reply a
//     loss.
//   - ParseLean(frame, &meta) is Parse for a consumer that reads only the
//     identity (a lane with the default MEC and no LDS): on the common
//     frame it writes Hash, Flags and Len and skips the flow key and its
//     hash, about a fifth of Parse's instructions. ParseNoFlowHash is
//     Parse without the flow hash (FlowHash 0 on the common frame), for a
//     lane that classifies by MEC rules but keeps no LDS; ParseLevel
//     picks one of the three at run time.
//   - ParseMEC parses one `--mec name=key:value,…` rule (syntax in its doc
//     comment and docs/mec.md); NewClassifier compiles the rules and
//     Classifier.Classify returns the MEC id of a parsed packet: the first
//     rule that matches, 0 ("all") when none does.
//
// # Lifetimes and concurrency
//
// Parse is a pure function of the frame: it keeps no state, so any number
// of workers may call it at once. Meta is plain data, meant to live in a
// per-burst array a worker preallocates; Parse overwrites every field
// (ParseLean, on the IP fast path, only the three it promises;
// ParseNoFlowHash all but the flow hash, which it sets to 0).
// A Classifier is immutable after NewClassifier and may be shared by all
// workers without locks; to change rules, build a new one and hand it to
// the workers at an interval boundary (reports name MECs by
// Classifier.Names, so the ids must not change inside an interval).
//
// # Cost
//
// Parse and Classify run per packet: no allocation, no lock, no map, no
// interface call, no error value (TestParseZeroAllocs,
// TestClassifyZeroAllocs). Parse has straight-line fast paths for
// untagged IPv4/IPv6 TCP/UDP and for untagged non-IP frames, held against
// the general path by TestParseFastIsGeneral and FuzzParseFast. Parse walks at most 8 VLAN tags and 8 IPv6
// extension headers whatever the frame claims. Classify returns at once
// when there are no rules; otherwise it looks each field up in exact
// tables of the rules that accept its value and combines them
// (tables.go), so its cost does not grow with the number of rules:
// with up to 4 rules it ANDs block-level bit vectors and tests the rare
// partial-block candidate (bitsets.go), up to 64 it ANDs one word per
// field, above that it reads
// precomputed cross-products of the field classes down to a table of
// first matches (BenchmarkClassifyScale; TestTablesMatchReference holds
// every way of building them to first-match over the rule list). The
// reads of that path skip Go's bounds checks (unchecked.go): the tables
// keep every index in range whatever the packet, which the same tests
// verify over every value each read's inputs can take. BenchmarkMeasure sets the full
// per-packet measurement (Parse + Classify + LDA.Add) against hashing the
// invariant bytes alone, timed by thread CPU time in one run.
//
// # Hazards
//
//   - Malformed or truncated frames never panic: they get a hash of the
//     invariant bytes that are there (missing bytes count as zero) and
//     FlagTruncated or FlagMalformed, which the caller counts. A frame cut
//     by a short capture snaplen after the 32-byte L4 window keeps the
//     identity of the whole frame.
//   - Different packets can share an identity when every invariant byte
//     is equal, e.g. IPv6 retransmissions of identical segments (IPv6 has
//     no identification field). The synopses tolerate this; exact
//     per-packet matching (analyze --truth) should treat duplicates with
//     care.
//   - Rewrites the identity does not survive: NAT (addresses, ports),
//     IPv6 routing headers (the destination changes at each segment),
//     middleboxes that renumber TCP sequence numbers or change the IPv4
//     identification. TCP SYN options are left out because MSS clamping
//     rewrites them.
//   - The identity layout and the flow hash are part of the wire contract
//     between two ldafwd appliances: changing either makes appliances of
//     different versions disagree on every packet. IdentityRevision names
//     the layout; the appliances compare it in their configuration, so a
//     pair that computes identities differently reports a configuration
//     mismatch naming "identity", never a loss that did not happen.
//   - FlowHash is fast, not keyed: an adversary who can choose flows can
//     make them collide.
package classifier
