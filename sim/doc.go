// Package sim reproduces the accuracy experiments of the ToN LDA paper
// (Sec. IV, Figs. 4–6) and is the framework later synopses' simulations
// plug into: it replays synthetic intervals of packets with known delays
// and losses through measurement methods at both ends of a segment and
// holds every estimate against the exact truth.
//
// # Model of an interval (paper Sec. IV)
//
// A Trace is N packet delays drawn once from a model.Delay (the paper:
// "we first generate a packet trace … and then impose varying levels of
// loss"). A run replays it: every packet gets a fresh random 64-bit
// identity hash, is lost or not by a model.Loss, leaves the sender one
// nanosecond after the previous packet reached the receiver (one packet in
// flight, so no reordering — the paper's choice), and carries absolute
// nanosecond timestamps from 2025, so the LDA's wrap-around sums wrap as
// they do on the wire. Delays are rounded to integer ns, as a NIC clock
// would; the truth is computed from the same integers, exactly (128-bit
// sums), as the mean and population std-dev over the received packets.
//
// Methods see the packets in batches of BatchSize (Batch: hash, send and
// receive timestamps, lost flag): the LDA method feeds a synopsis.LDA at
// each end and estimates with synopsis.EstimateLDA; the probe method is the
// paper's Poisson active-probe baseline (Sec. IV-C). All methods of a run
// see the same packets and losses, so their errors are a paired comparison.
// RDA and LDS simulations add a Method and a MethodSpec, nothing else.
//
// # Experiments
//
// Build("fig4"|"fig5"|"fig6", Options) returns the Scenarios of a figure
// (fig6's LDA is tuned for Options.DesignLosses, the paper's 0.005 and 0.1
// by default; "custom" runs Options.Delay and Options.LossKind against the LDA tuned
// for Options.DesignLosses, the appliance's default LDA and the probes);
// Runner.Run runs one (its runs in parallel) and returns a Point per
// method: relative errors of mean and std-dev (average, standard error,
// maximum over runs), effective sample size, the most conservative 98 %
// Hoeffding bound and how many runs it missed, whether loss was exact.
// CheckClaims holds points against the paper's claims. WriteTable, WriteCSV and WritePlots render points.
//
// Departures from the paper, each commented where it is made: sampling
// probabilities are powers of two (the one maximising p·e^(−p/p*) around
// p* = α·m/(L+1), in effect the nearest in log scale, see TunedSampleLog2); the three-bank LDA of Sec. IV-B has 1/4, 1/2, 1/4 of
// the counters (rows are powers of two), not thirds; the std-dev estimator
// is the synopsis package's centred form of eq. 5.
//
// # Concurrency and cost
//
// A Runner uses Workers goroutines, each with its own methods, batch
// buffers and random streams; results depend only on the seeds, not on
// the number of workers. The trace is shared read-only (8 bytes per
// packet: 40 MB at N = 5·10^6). Replay costs ≈ 10–20 ns per packet and
// method (BenchmarkReplay); nothing per packet allocates. A Runner itself
// is not safe for concurrent use.
package sim
