package service

import (
	"sync"
	"sync/atomic"

	"github.com/ldafwd/ldafwd/report"
	"github.com/rs/zerolog"
)

// reportQueueLen is how many interval lines may wait for the sink: a few
// seconds of lines at a 10 ms interval with every synopsis and class and
// the top flows, so that a sink that stalls for a moment (a full pipe on
// stdout, a slow disk) never holds up the control goroutine, which pairs
// synopses and answers the peer's requests on time.
const reportQueueLen = 8192

// reportQueue takes interval lines from the appliance's control goroutine
// and hands them, in the order they came, to write on a goroutine of its
// own. It is bounded: when the sink is so slow that the queue is full, put
// waits for room (counted in Stalls) rather than drop a line, since a lost
// report line is a lost measurement. close waits until every line put
// before it has been written, so a stop loses nothing.
type reportQueue struct {
	lines  chan *report.Interval
	write  func(*report.Interval)
	log    zerolog.Logger
	done   chan struct{}
	once   sync.Once
	mu     sync.RWMutex // put (read side) against close (write side): no send on a closed channel
	closed bool
	// Stalls counts the lines put had to wait for: the sink fell behind
	// by a whole queue.
	Stalls atomic.Uint64
}

func newReportQueue(n int, write func(*report.Interval), log zerolog.Logger) *reportQueue {
	q := &reportQueue{lines: make(chan *report.Interval, n), write: write, log: log, done: make(chan struct{})}
	go q.run()
	return q
}

func (q *reportQueue) run() {
	defer close(q.done)
	for iv := range q.lines {
		q.write(iv)
	}
}

// put queues one line; after close it writes the line itself, once the
// queue is written, so a caller still reporting after the stop loses
// nothing and the order holds.
func (q *reportQueue) put(iv *report.Interval) {
	q.mu.RLock()
	if q.closed {
		q.mu.RUnlock()
		<-q.done
		q.write(iv)
		return
	}
	select {
	case q.lines <- iv:
	default:
		if n := q.Stalls.Add(1); n == 1 || n%1000 == 0 {
			q.log.Warn().Uint64("stalls", n).Int("queue", cap(q.lines)).
				Msg("report sink is slow: the control side waited for room in the report queue")
		}
		q.lines <- iv
	}
	q.mu.RUnlock()
}

// close writes what is queued and returns once it is written.
func (q *reportQueue) close() {
	q.once.Do(func() {
		q.mu.Lock()
		q.closed = true
		close(q.lines)
		q.mu.Unlock()
	})
	<-q.done
}
