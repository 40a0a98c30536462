package synopsis_test

import (
	"fmt"

	"github.com/ldafwd/ldafwd/synopsis"
)

// The LDA cycle: both ends record every packet (its identity and a
// timestamp) into LDAs of the same configuration; a sender with several
// workers merges their LDAs (sums: exact); at the end of the interval the
// sender's LDA travels to the receiver in the compact encoding, and the
// receiver estimates mean delay and loss from the buckets that lost
// nothing.
func ExampleEstimateLDACompact() {
	cfg := synopsis.DefaultLDAConfig()
	sender, other := synopsis.MustNewLDA(cfg), synopsis.MustNewLDA(cfg) // two sender workers
	receiver := synopsis.MustNewLDA(cfg)
	const t0 = 1_700_000_000_000_000_000 // ns since the epoch
	var sum, n float64
	for i := uint64(0); i < 10_000; i++ {
		h := synopsis.Remix(i, 1) // the packet's identity (classifier.Meta.Hash)
		w := sender
		if i%2 == 1 {
			w = other
		}
		w.Add(h, t0+i*10_000)
		if i%1000 == 7 {
			continue // the link loses 10 packets
		}
		d := 50_000 + (i%7)*1_000 // 50–56 µs
		receiver.Add(h, t0+i*10_000+d)
		sum, n = sum+float64(d), n+1
	}
	if err := sender.Merge(other); err != nil {
		panic(err)
	}

	wire, err := sender.AppendCompact(nil, synopsis.DefaultCompactBounds()) // in-band to the receiver
	if err != nil {
		panic(err)
	}
	var shipped synopsis.CompactLDA
	if err := shipped.UnmarshalBinary(wire); err != nil {
		panic(err)
	}
	e, err := synopsis.EstimateLDACompact(&shipped, receiver, 0.98)
	if err != nil {
		panic(err)
	}
	fmt.Printf("sent %d, received %d, lost %d, valid %v\n", e.Sent, e.Received, e.Lost, e.Valid)
	fmt.Printf("mean within its bound of the truth: %v\n", abs(e.MeanNs-sum/n) <= e.MeanCINs)
	// Output:
	// sent 10000, received 9990, lost 10, valid true
	// mean within its bound of the truth: true
}

// The RDA cycle: both ends record packets (identity, timestamp) into RDAs
// of one shape; the receiver subtracts the sender's RDA from its own and
// peels the difference into the lost (and extra) packets' identities;
// with the timestamps of those packets (the sender's cache: in-band, the
// appliance asks for them; offline, both caches are at hand) their cells
// are repaired and the mean is exact.
func ExampleEstimateRDA() {
	cfg := synopsis.RDAConfig{Banks: 3, Cells: 256, CacheBudget: 1 << 20}
	sender, receiver := synopsis.MustNewRDA(cfg), synopsis.MustNewRDA(cfg)
	const t0 = 1_700_000_000_000_000_000
	var sum, n float64
	for i := uint64(0); i < 20_000; i++ {
		h := synopsis.Remix(i, 2)
		sender.Add(h, t0+i*5_000)
		if i%500 == 3 {
			continue // 40 lost
		}
		d := 30_000 + (i%11)*700
		receiver.Add(h, t0+i*5_000+d)
		sum, n = sum+float64(d), n+1
	}
	// The sender's RDA crosses the wire without its cache; the repair
	// uses the sender's cache directly here, as offline analysis does.
	e, st, err := synopsis.EstimateRDA(sender, receiver, 0.98)
	if err != nil {
		panic(err)
	}
	fmt.Printf("decoded %d lost, %d extra, complete %v, repaired %d\n", st.Lost, st.Extra, st.DecodeComplete, st.Repaired)
	fmt.Printf("valid %v, mean exact: %v\n", e.Valid, abs(e.MeanNs-sum/n) < 1e-6*sum/n)
	// Output:
	// decoded 40 lost, 0 extra, complete true, repaired 40
	// valid true, mean exact: true
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
