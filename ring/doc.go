// Package ring provides lock-free fixed-size rings in DPDK's vocabulary
// (rte_ring): SPSC for one producer and one consumer, MPMC for any number
// of each. ldafwd uses them between workers and the control goroutine
// (synopsis hand-off), inside the in-process ring port (one SPSC
// ring per link direction) and as the free list of packet pools (MPMC).
//
// # Semantics
//
// Sizes are powers of two, validated by NewSPSC / NewMPMC (ErrSize). A ring
// of size N holds N elements (Cap); DPDK's default rings hold N-1, its
// RING_F_EXACT_SZ rings N — we keep free-running 32-bit indices and tell
// full from empty by their difference, so no slot is wasted.
//
//   - EnqueueBulk / DequeueBulk move all of the slice or nothing and
//     return len or 0 (rte_ring_enqueue_bulk).
//   - EnqueueBurst / DequeueBurst move as many as fit / as are there and
//     return the count (rte_ring_enqueue_burst).
//   - Count, FreeCount, Empty, Full are snapshots; with other goroutines
//     active they may be stale when used.
//   - SPSC additionally has Peek / Skip for a consumer that takes only a
//     prefix that passes a test (the ring port's delivery time).
//
// Elements are copied in and out by value; nothing is allocated after the
// constructor, and no call takes a lock or returns an error.
//
// # Concurrency
//
// SPSC: at most one goroutine in Enqueue* and at most one in Dequeue*/Peek/
// Skip at any moment. Using it with two producers corrupts it silently —
// use MPMC. MPMC: any number of goroutines on both sides. Publication uses
// sync/atomic loads and stores, so the slot writes of a producer happen
// before the reads of the consumer that sees its tail (race-detector clean).
//
// The MPMC algorithm is DPDK's: reserve by CAS on the head, copy, wait for
// earlier reservations to publish, publish. A producer preempted between
// its CAS and its publication stalls later producers on the same side (they
// spin, then runtime.Gosched); this is why DPDK warns against preemptible
// MP/MC threads, and why ldafwd gives each worker its own SPSC where it can.
//
// # Hazards
//
// Dequeued slots are not cleared: a ring of pointers keeps the last
// Cap values reachable for the garbage collector until overwritten. That is
// harmless for pooled packet buffers, which live for the program anyway.
package ring
