package synopsis_test

import (
	"fmt"

	"github.com/ldafwd/ldafwd/synopsis"
)

// Two appliances size their LDS alike, record every packet with its flow,
// and at the end of the interval the sender's LDS travels to the receiver,
// which names and measures every flow. The link loses packets, so each
// flow gets virtual LDAs of 4 cells and the rows sample from 4/200 to 1.
func ExampleEstimateLDSFlows() {
	cfg, _ := synopsis.DimensionLDS(synopsis.LDSDimensioning{ExpectedFlows: 1000, MaxFlows: 2000,
		CellsPerFlow: 4, Rows: 4, MaxLossesPerFlow: 200})
	sender, _ := synopsis.NewLDS(cfg)
	receiver, _ := synopsis.NewLDS(cfg)

	web := synopsis.PackFlowKey([16]byte{10: 0xff, 11: 0xff, 12: 10, 15: 1}, [16]byte{10: 0xff, 11: 0xff, 12: 10, 15: 2}, 443, 50000, 6, false)
	dns := synopsis.PackFlowKey([16]byte{10: 0xff, 11: 0xff, 12: 10, 15: 1}, [16]byte{10: 0xff, 11: 0xff, 12: 10, 15: 3}, 53, 40000, 17, false)
	const t0 = 1_700_000_000_000_000_000 // ns
	for i := uint64(0); i < 1000; i++ {
		h := synopsis.Remix(i, 1) // the packet identity (classifier.Meta.Hash)
		sender.AddFlow(0xAAAA, h, t0+i*1000, 0, 1, &web)
		receiver.AddFlow(0xAAAA, h, t0+i*1000+250_000, 0, 1, &web) // 250 µs
		h = synopsis.Remix(i, 2)
		sender.AddFlow(0xBBBB, h, t0+i*1000, 0, 1, &dns)
		if i%100 != 0 { // one DNS packet in 100 is lost
			receiver.AddFlow(0xBBBB, h, t0+i*1000+40_000, 0, 1, &dns) // 40 µs
		}
	}

	wire, _ := sender.MarshalBinary() // in-band to the receiver
	var shipped synopsis.LDS
	if err := shipped.UnmarshalBinary(wire); err != nil {
		panic(err)
	}
	// Every delay lies within 0 … 1 ms: what bounds the error of a mean
	// taken from a sample of a flow's packets (k > 1, sampled rows).
	receiver.SetBound(synopsis.LDSBound{MinDelayNs: 0, MaxDelayNs: 1_000_000})
	flows, _ := synopsis.EstimateLDSFlows(&shipped, receiver)
	for _, f := range flows {
		_, _, sp, dp, proto, _ := synopsis.UnpackFlowKey(&f.Key)
		fmt.Printf("proto %d %d>%d: sent %d lost %d valid %v mean %.0f ± %.0f ns\n", proto, sp, dp, f.Sent, f.Lost, f.Valid, f.MeanNs, f.MeanCINs)
	}
	// The averaged cells include sampled rows, which bound neither how
	// much of a cell is the flow's nor which of its packets it holds:
	// the bound is the whole delay range.
	//
	// Output:
	// proto 6 443>50000: sent 1000 lost 0 valid true mean 250000 ± 1000000 ns
	// proto 17 53>40000: sent 1000 lost 10 valid true mean 40000 ± 1000000 ns
}
