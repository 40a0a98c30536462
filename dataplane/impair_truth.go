package dataplane

import (
	"sync/atomic"

	"github.com/ldafwd/ldafwd/ring"
)

// TruthLog collects TruthRecords from an impairment stage for another
// goroutine (a test, the demo's reporter) without locks or allocation: a
// preallocated SPSC ring. The stage's goroutine is the only producer
// (pass log.Record as ImpairConfig.Truth); one reader calls Drain. When the
// reader falls behind, records are counted in Overflow and dropped —
// the aggregate ImpairStats stay exact regardless.
type TruthLog struct {
	r        *ring.SPSC[TruthRecord]
	overflow atomic.Uint64
}

// NewTruthLog returns a log holding up to size records (a power of two).
func NewTruthLog(size int) (*TruthLog, error) {
	r, err := ring.NewSPSC[TruthRecord](size)
	if err != nil {
		return nil, err
	}
	return &TruthLog{r: r}, nil
}

// Record appends one record; it is a TruthFunc.
func (l *TruthLog) Record(_ []byte, rec *TruthRecord) {
	one := [1]TruthRecord{*rec}
	if l.r.EnqueueBurst(one[:]) == 0 {
		l.overflow.Add(1)
	}
}

// Drain moves up to len(out) records into out and returns how many.
func (l *TruthLog) Drain(out []TruthRecord) int { return l.r.DequeueBurst(out) }

// Overflow is the number of records dropped because the log was full.
func (l *TruthLog) Overflow() uint64 { return l.overflow.Load() }
