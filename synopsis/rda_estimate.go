package synopsis

import (
	"fmt"
	"math"

	"github.com/ldafwd/ldafwd/report"
)

// rdaMinStddevPairs is the fewest collapsed cell pairs behind a std-dev
// (ldaMinStddevRows is 4). Each pair is one squared residual, so with p
// pairs σ is known to about ±1/sqrt(2p) for normal delays and worse for
// heavy tails: 16 pairs ≈ ±18 %. Past capacity the usable cells shrink
// to a handful (TestRDASweepSetDifference: 26 cells, σ off by 56 %), and
// such an interval is reported invalid rather than with a guessed σ.
const rdaMinStddevPairs = 16

// RDAStats says what the RDA decode and repair achieved for one interval,
// beyond Estimate's usable buckets and samples.
type RDAStats struct {
	Banks, Cells int

	SetDifference  int  // decoded identities, Lost + Extra (= |S_S ⊕ S_R| when DecodeComplete)
	Lost           int  // decoded sender-only packets
	Extra          int  // decoded receiver-only packets
	DecodeComplete bool // peeling emptied every cell
	ResidualCells  int  // cells peeling could not empty (decode failure)
	DecodeAborted  bool // peeling hit its step bound (false pure cells past capacity, or forged input); the usable-cell estimate stands

	Repaired   int // decoded packets whose timestamps were found and removed from their cells
	Unrepaired int // decoded packets without a timestamp: their cells are left out
	// Inconsistent: decoded identities a cache contradicts (a "lost"
	// packet the receiver saw, an "extra" one the sender saw, or one the
	// full cache of its own side should hold but does not): identical
	// frames of which one copy was lost, packets duplicated on the path,
	// or false pure cells (2^-64). Their cells are left out; they still
	// count as lost or extra (the decode compares multisets).
	Inconsistent int
	// Ambiguous: decoded packets whose own side recorded some identity
	// more than once (TSCache.Dups > 0), so the one cached timestamp may be
	// another copy's. Their cells are left out rather than repaired with a
	// timestamp that may be wrong.
	Ambiguous int
	// Coverage is Repaired / SetDifference (1 with no difference).
	Coverage float64
	// SampleFraction is the share of the hash space both caches hold
	// (2^-max(level)); 0 when a side has no cache.
	SampleFraction float64
	// MissingSender lists lost identities whose sender timestamps the
	// sender's cache holds but this RDA copy lacks (it came over the
	// wire): send them in a timestamp request (AppendTimestampRequest)
	// and feed the reply to the sender copy's AddRemoteTimestamps.
	MissingSender []uint64
	// MissingReceiver is the mirror image, for the paper's direction (the
	// receiver's RDA shipped to the sender, Sec. VIII-A): extra
	// identities whose receiver timestamps the receiver's cache holds.
	MissingReceiver []uint64

	UsableCells  int // cells with equal ID and Δ at both ends after repair, Δ > 0
	EmptyCells   int
	DamagedCells int // cells left out of the estimate

	// Exact: every problem packet was decoded and repaired and every cell
	// is usable, so MeanNs is the exact mean over all packets seen at both
	// ends (up to float64 rounding).
	Exact bool
	// MeanExact: MeanNs is exact (MeanCINs 0) — with Exact, or because one
	// bank's usable cells hold every packet seen at both ends (the damaged
	// cells there hold problem packets only).
	MeanExact bool
	// BankTotalsAgree: with Exact, every bank's total delay and count
	// agree (each bank partitions the same matched packets). A mismatch
	// means a corrupted input and makes the estimate invalid.
	BankTotalsAgree bool
	CollapsedPairs  int // Algorithm 2 pairs behind the std-dev

	// StddevAlg3Ns is the paper's own Algorithm 3, sqrt(F − μ²) over the
	// same pairs (NaN when F < μ²), for comparison; StddevNs uses the
	// centred form (see EstimateRDA).
	StddevAlg3Ns float64

	Note string // what limited the estimate, when not Exact
}

// ReasonRDABanksDisagree: the banks' repaired totals differ, which only a
// corrupted synopsis or timestamp can cause; nothing decoded from it is
// trusted.
const ReasonRDABanksDisagree = "RDA banks disagree after repair: corrupted synopsis or timestamps"

// EstimateRDA combines the sender's and the receiver's RDA of one interval
// (paper Sec. V-B, V-C): it subtracts, peels the set difference
// (Algorithm 1), repairs the cells of the decoded packets with their
// timestamps from the sender's and the receiver's caches, and estimates
// the mean delay over the usable cells of all banks and the std-dev by
// selective collapse (Algorithms 2–3). conf is the confidence level of
// MeanCINs (0 means DefaultConfidence).
//
// Within capacity (complete decode, every problem packet's timestamp
// cached) the mean is exact and MeanCINs is 0. Otherwise cells that still
// hold a problem packet are left out, the mean is that of the packets in
// the remaining cells (an unbiased sample: cells are chosen by hash) with
// a confidence bound, and RDAStats.Note says why. Neither RDA is changed.
//
// Departure from Algorithm 3: the paper's σ² = ΣY²/ΣΔ − μ² with
// Y = X_p − X_q cancels catastrophically when μ ≫ σ (every Y carries
// (Δ_p − Δ_q)·μ). We centre each collapsed pair with the exact mean,
// Y = (X_p − μΔ_p) − (X_q − μΔ_q), and divide by its expectation under a
// random split of the bank's N matched packets into cells,
// E[Y²] = σ²·(N(Δ_p+Δ_q) − (Δ_p−Δ_q)²)/(N−1) — unbiased for the
// population variance. StddevAlg3Ns keeps the paper's figure.
func EstimateRDA(sender, receiver *RDA, conf float64) (Estimate, RDAStats, error) {
	e := Estimate{Synopsis: "rda"}
	st := RDAStats{Banks: receiver.k, Cells: int(receiver.m)}
	if err := receiver.sameShape(sender); err != nil {
		return e, st, err
	}
	if conf == 0 {
		conf = DefaultConfidence
	}
	e.Conf = conf
	sent, recv := sender.net(), receiver.net()
	e.Sent, e.Received = sender.Count(), receiver.Count()
	e.TotalBuckets = len(receiver.cells)

	dec, _ := DecodeRDA(sender, receiver)
	st.Lost, st.Extra = len(dec.Lost), len(dec.Extra)
	st.SetDifference = st.Lost + st.Extra
	st.DecodeComplete, st.ResidualCells, st.DecodeAborted = dec.Complete, dec.ResidualCells, dec.Aborted

	// Repair (paper Sec. VIII-A, "Latency Aggregation"): delete the lost
	// packets from the sender's cells and the extra ones from the
	// receiver's, with their own timestamps.
	S := append([]rdaCell(nil), sender.cells...)
	R := append([]rdaCell(nil), receiver.cells...)
	damaged := make([]bool, len(R))
	lvS, haveS := sender.sampleLevel()
	lvR, haveR := receiver.sampleLevel()
	if haveS && haveR {
		st.SampleFraction = math.Ldexp(1, -int(max(lvS, lvR)))
	}
	repair := func(cells []rdaCell, id uint64, own, other *RDA, lvOwn uint8, haveOwn bool) {
		ck := rdaCheck(id)
		// An identity seen once is unambiguous whatever else was seen
		// twice (TSCache.SeenOnce). An extra packet the receiver saw
		// twice is the segment's copy: its second timestamp goes
		// (TSCache.LaterCopy). A lost identity the sender saw twice stays
		// ambiguous: which copy was lost is unknown.
		ts, ok := own.cache.Lookup(id)
		ambiguous := ok && !own.cache.SeenOnce(id)
		dupCopy := false
		if ok && own == receiver {
			if later, dup, complete := own.cache.LaterCopy(id); dup && complete {
				ts, ambiguous, dupCopy = later, false, true
			}
		}
		contradicted := false
		if other.cache != nil && !other.cache.partial && !dupCopy {
			// The other end saw it too: a false pure cell, or a packet
			// duplicated on the path whose second copy the receiver's
			// cache could not keep aside (a copy it kept was taken out
			// above, dupCopy).
			_, contradicted = other.cache.Lookup(id)
		}
		if !ok && haveOwn && Covers(id, lvOwn) {
			switch {
			case own.cache != nil && !own.cache.partial:
				contradicted = true // the full cache must hold it: not a real packet
			case own == sender:
				st.MissingSender = append(st.MissingSender, id)
			default:
				st.MissingReceiver = append(st.MissingReceiver, id)
			}
		}
		if contradicted {
			ok = false
			st.Inconsistent++
		} else if ambiguous {
			ok = false
			st.Ambiguous++
		}
		if ok {
			st.Repaired++
		} else {
			st.Unrepaired++
		}
		for b := 0; b < receiver.k; b++ {
			q := receiver.cellIndex(id, b)
			cells[q].id ^= id
			cells[q].n--
			cells[q].chk ^= ck
			if ok {
				cells[q].ts -= ts
			} else {
				damaged[q] = true
			}
		}
	}
	for _, id := range dec.Lost {
		repair(S, id, sender, receiver, lvS, haveS)
	}
	for _, id := range dec.Extra {
		repair(R, id, receiver, sender, lvR, haveR)
	}
	st.Coverage = 1
	if st.SetDifference > 0 {
		st.Coverage = float64(st.Repaired) / float64(st.SetDifference)
	}

	// Usable cells and the mean: per bank, the wrap-around sum of
	// TS_R − TS_S over usable cells is the exact delay sum of their packets
	// while it fits in 63 bits.
	k, m := receiver.k, int(receiver.m)
	bankDelay := make([]uint64, k)
	bankCount := make([]int64, k)
	usable := func(i int) bool {
		return !damaged[i] && S[i].id == R[i].id && S[i].chk == R[i].chk && S[i].n == R[i].n && S[i].n > 0
	}
	for i := range R {
		switch {
		case usable(i):
			st.UsableCells++
			bankDelay[i/m] += R[i].ts - S[i].ts
			bankCount[i/m] += R[i].n
		case !damaged[i] && S[i] == (rdaCell{}) && R[i] == (rdaCell{}):
			st.EmptyCells++
		default:
			st.DamagedCells++
		}
	}
	e.UsableBuckets = st.UsableCells
	// The mean pools the usable cells of all banks: its error is the
	// banks' own errors averaged with weights C_b/ΣC (the bound below
	// is built the same way).
	var sumDelay float64
	var sumCount int64
	best := 0
	for b := 0; b < k; b++ {
		sumDelay += float64(int64(bankDelay[b]))
		sumCount += bankCount[b]
		if bankCount[b] > bankCount[best] {
			best = b
		}
	}
	maxCount := bankCount[best]
	if sumCount > 0 {
		e.MeanNs = sumDelay / float64(sumCount)
	}
	// Samples: distinct packets behind the mean; a bank's cells are
	// disjoint, so the best bank's count is a lower bound on the union.
	e.Samples = uint64(maxCount)
	st.Exact = dec.Complete && st.Unrepaired == 0 && st.Inconsistent == 0 && st.Ambiguous == 0 && st.DamagedCells == 0
	st.BankTotalsAgree = true
	for b := 1; b < k; b++ {
		if bankDelay[b] != bankDelay[0] || bankCount[b] != bankCount[0] {
			st.BankTotalsAgree = false
		}
	}
	if st.Exact && st.BankTotalsAgree && bankCount[0] > 0 {
		e.MeanNs = float64(int64(bankDelay[0])) / float64(bankCount[0])
	}

	// Loss: exact from the decode when complete (a multiset difference:
	// one of two identical frames lost is a loss; a duplicate made on the
	// path is an extra, not a negative loss). Incomplete: Sent − Received
	// plus the decoded extras, exact unless undecoded extras remain, which
	// residual cells with Δ ≥ 0 prove (then the loss is not claimed).
	e.Extra = uint64(st.Extra)
	switch {
	case dec.Complete:
		e.Lost = uint64(st.Lost)
	case sent+int64(st.Extra) > recv:
		e.Lost = uint64(sent + int64(st.Extra) - recv)
	}
	if !dec.Complete {
		e.ExtraBuckets = dec.ResidualExtraCells
	}
	// N: packets seen at both ends; exact when the decode is complete,
	// else bounded above by sent − decoded lost (undecoded lost packets
	// hide in the damaged cells). The upper bound keeps the
	// finite-population factor of the confidence bound conservative.
	nMatched := math.Max(float64(sent-int64(st.Lost)), float64(maxCount))
	// Usable cells hold matched packets only, so a bank counting nMatched
	// of them holds every one: its mean is exact.
	st.MeanExact = st.Exact || maxCount > 0 && float64(maxCount) >= nMatched
	if st.MeanExact && !st.Exact {
		// The other banks' partial means would move the pooled one off
		// the exact value its bound of 0 claims.
		e.MeanNs = float64(int64(bankDelay[best])) / float64(maxCount)
	}

	// Std-dev: Algorithm 2 (selective collapse: per bank, pair the
	// usable non-empty cells in index order) and the centred Algorithm 3.
	var sumY2, sumW, sumX2, sumC float64
	var maxPairCount int64
	for b := 0; b < k; b++ {
		N := float64(bankCount[b])
		if st.Exact {
			N = float64(bankCount[0])
		} else {
			N = math.Max(nMatched, N)
		}
		p := -1
		var pairCount int64
		for i := b * m; i < (b+1)*m; i++ {
			if !usable(i) {
				continue
			}
			if p < 0 {
				p = i
				continue
			}
			q := i
			np, nq := float64(R[p].n), float64(R[q].n)
			xp, xq := float64(int64(R[p].ts-S[p].ts)), float64(int64(R[q].ts-S[q].ts))
			y := (xp - e.MeanNs*np) - (xq - e.MeanNs*nq)
			sumY2 += y * y
			if N > 1 {
				sumW += (N*(np+nq) - (np-nq)*(np-nq)) / (N - 1)
			} else {
				sumW += np + nq
			}
			sumX2 += (xp - xq) * (xp - xq)
			sumC += np + nq
			pairCount += R[p].n + R[q].n
			st.CollapsedPairs++
			p = -1
		}
		maxPairCount = max(maxPairCount, pairCount)
	}
	e.StddevSamples = uint64(maxPairCount)
	if sumW > 0 {
		e.StddevNs = math.Sqrt(sumY2 / sumW)
	}
	st.StddevAlg3Ns = math.NaN()
	if sumC > 0 {
		if v := sumX2/sumC - e.MeanNs*e.MeanNs; v >= 0 {
			st.StddevAlg3Ns = math.Sqrt(v)
		}
	}

	// Confidence bound: 0 when the mean is exact; otherwise per bank the
	// LDA's Hoeffding form (eq. 1 solved for εμ, σ standing in for the
	// range) with the finite-population factor sqrt(1 − C_b/N) (the
	// left-out cells are a hash-random part of the same N packets),
	// averaged with the pooled mean's weights C_b/ΣC: the pooled error is
	// that average of the banks' errors, so it is within the bound
	// whenever every bank's is. (The best bank's bound alone is not
	// enough: at C_b = N it is 0 while the other banks still move the
	// pooled mean.)
	if !st.MeanExact && sumCount > 0 && e.StddevNs > 0 && conf > 0 && conf < 1 {
		z := e.StddevNs * math.Sqrt(2*math.Log(2/(1-conf)))
		for b := 0; b < k; b++ {
			c := float64(bankCount[b])
			if c == 0 {
				continue
			}
			fpc := 1.0
			if nMatched > 0 {
				fpc = math.Max(0, 1-c/nMatched)
			}
			e.MeanCINs += c / float64(sumCount) * z * math.Sqrt(fpc/c)
		}
	}

	if !st.Exact {
		switch {
		case dec.Aborted:
			st.Note = fmt.Sprintf("peeling stopped at its step bound (false pure cells past capacity, or forged cells); mean from %d of %d cells", st.UsableCells, len(R))
		case !dec.Complete:
			st.Note = fmt.Sprintf("decode incomplete: %d cells unpeeled (set difference beyond the capacity of %d×%d cells); mean from %d of %d cells", dec.ResidualCells, k, m, st.UsableCells, len(R))
		case st.Inconsistent > 0:
			st.Note = fmt.Sprintf("%d decoded identities contradict the caches (identical frames, duplicated packets or false pure cells); their cells left out", st.Inconsistent)
		case st.Ambiguous > 0:
			st.Note = fmt.Sprintf("%d decoded packets share their identity with another packet of the same end (identical frames): the cached timestamp may be another copy's; their cells left out", st.Ambiguous)
		case len(st.MissingSender)+len(st.MissingReceiver) > 0:
			st.Note = fmt.Sprintf("%d lost and %d extra packets await the other end's timestamps (request them); their cells left out", len(st.MissingSender), len(st.MissingReceiver))
		case st.Unrepaired > 0:
			st.Note = fmt.Sprintf("%d of %d problem packets outside the timestamp caches (coverage %.3g); their cells left out", st.Unrepaired, st.SetDifference, st.Coverage)
		}
	}

	switch {
	case !(conf > 0 && conf < 1):
		e.Reason, e.Code = fmt.Sprintf("confidence %v not in (0,1)", conf), report.Decode
	case sent <= 0 && recv <= 0:
		e.Reason, e.Code = "no packets in the interval", report.NoPackets
	case st.Exact && !st.BankTotalsAgree:
		e.Reason, e.Code = ReasonRDABanksDisagree, report.BanksDisagree
	case !dec.Complete && dec.ResidualExtraCells > 0:
		// The checks after this one did not run: the delay is not
		// known clear of them either.
		e.Reason, e.Code = fmt.Sprintf("RDA decode incomplete and %d undecoded cells hold packets only the receiver saw (duplicated, injected or remarked inside the segment, or reordered across the interval boundary); loss cannot be counted", dec.ResidualExtraCells), report.ExtrasUnchecked
	case st.UsableCells == 0:
		e.Reason, e.Code = fmt.Sprintf("no usable RDA cell: set difference beyond capacity (%d cells unpeeled, %d decoded)", dec.ResidualCells, st.SetDifference), report.FewSamples
	case st.CollapsedPairs < rdaMinStddevPairs:
		e.Reason, e.Code = fmt.Sprintf("only %d collapsed cell pairs, need %d for a std-dev and confidence bound", st.CollapsedPairs, rdaMinStddevPairs), report.FewSamples
	default:
		e.Valid = true
	}
	return e, st, nil
}

// AddRemoteTimestamps feeds a timestamp reply (the other end's answer to
// a request for ids, see TSCache.AppendReply) into r, the local copy of
// the other end's RDA decoded from the wire (usually the sender's), so
// the next EstimateRDA can repair those packets. Errors wrap
// ErrBadEncoding; r is unchanged on error.
func (r *RDA) AddRemoteTimestamps(reply []byte, ids []uint64) error {
	ts := make([]uint64, len(ids))
	ok := make([]bool, len(ids))
	if err := ParseReply(reply, ids, ts, ok); err != nil {
		return err
	}
	if r.cache != nil && !r.cache.partial {
		return fmt.Errorf("%w: RDA has its own full timestamp cache; remote timestamps are for a copy decoded from the wire", ErrConfigMismatch)
	}
	level, _ := r.sampleLevel()
	nc := newPartialTSCache(r.cache.Len()+len(ids), level)
	if r.cache != nil {
		for _, e := range r.cache.slots {
			if e.h != 0 {
				nc.put(e.h, Remix(e.h, SaltSampling), e.ts, 0, false)
			}
		}
		if r.cache.hasZero {
			nc.hasZero, nc.zero = true, r.cache.zero
		}
	}
	for i, id := range ids {
		if !ok[i] {
			continue
		}
		if id == 0 {
			nc.hasZero, nc.zero = true, ts[i]
			continue
		}
		nc.put(id, Remix(id, SaltSampling), ts[i], 0, false)
	}
	r.cache = nc
	return nil
}

// ReportFields is st for report.Interval.Extra (docs/reports.md: added fields,
// snake_case, "rda_" prefix).
func (st RDAStats) ReportFields() map[string]any {
	f := map[string]any{
		"rda_banks":           st.Banks,
		"rda_cells":           st.Cells,
		"rda_set_difference":  st.SetDifference,
		"rda_lost":            st.Lost,
		"rda_extra":           st.Extra,
		"rda_decode_complete": st.DecodeComplete,
		"rda_residual_cells":  st.ResidualCells,
		"rda_repaired":        st.Repaired,
		"rda_unrepaired":      st.Unrepaired,
		"rda_inconsistent":    st.Inconsistent,
		"rda_ambiguous":       st.Ambiguous,
		"rda_coverage":        st.Coverage,
		"rda_sample_fraction": st.SampleFraction,
		"rda_usable_cells":    st.UsableCells,
		"rda_damaged_cells":   st.DamagedCells,
		"rda_exact":           st.Exact,
		"rda_mean_exact":      st.MeanExact,
	}
	if len(st.MissingSender) > 0 {
		f["rda_missing_sender_ts"] = len(st.MissingSender)
	}
	if len(st.MissingReceiver) > 0 {
		f["rda_missing_receiver_ts"] = len(st.MissingReceiver)
	}
	if st.Note != "" {
		f["rda_note"] = st.Note
	}
	return f
}
