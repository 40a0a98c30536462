package sim

import (
	"testing"

	"github.com/ldafwd/ldafwd/model"
	"github.com/ldafwd/ldafwd/synopsis"
)

// BenchmarkReplay is the simulator's cost per packet: identity hash, loss,
// truth, and both ends of a single-bank LDA.
func BenchmarkReplay(b *testing.B) {
	d, _ := model.NewWeibull(200, 0.6)
	const n = 1 << 20
	tr := NewTrace(d, n, 1)
	loss, _ := model.NewUniformLoss(0.01)
	spec, err := LDASpec("lda", TunedLDA(n, []int{1024}, []float64{0.01}, 0.5), 0)
	if err != nil {
		b.Fatal(err)
	}
	ms := []Method{spec.New()}
	buf := new(batchBuf)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		ms[0].Start(0, n)
		replay(tr, loss.Clone(), ms, runSeeds{hash: uint64(i), loss: uint64(i)}, buf)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/pkt")
}

// BenchmarkLDAAdd2 is the LDA part alone (both ends), for comparison.
func BenchmarkLDAObserve(b *testing.B) {
	const n = BatchSize
	spec, _ := LDASpec("lda", synopsis.LDAConfig{Banks: []synopsis.BankConfig{{Rows: 1024, SampleLog2: 3}}}, 0)
	m := spec.New()
	buf := new(batchBuf)
	for i := range buf.hash {
		buf.hash[i] = splitmix(uint64(i))
		buf.send[i] = uint64(i) * 200
		buf.recv[i] = uint64(i)*200 + 100
	}
	bt := &Batch{Hash: buf.hash[:], SendNs: buf.send[:], RecvNs: buf.recv[:], Lost: buf.lost[:]}
	b.ReportAllocs()
	for b.Loop() {
		m.Observe(bt)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/pkt")
}
