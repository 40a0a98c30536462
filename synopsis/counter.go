package synopsis

// Counter is the one way every synopsis says how many packets it holds:
// Count, the number of packets added (for the RDA, net of Deletes), what a
// sender reports as sent and a receiver as received. A collector can read
// it without knowing which synopsis it has.
type Counter interface {
	Count() uint64
}

// Every synopsis is a Counter; the build fails if one drifts.
var (
	_ Counter = (*LDA)(nil)
	_ Counter = (*CompactLDA)(nil)
	_ Counter = (*RDA)(nil)
	_ Counter = (*LDS)(nil)
)
