package synopsis

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// BucketSet is a synopsis seen as banks of buckets of (timestamp sum,
// count, XOR digest): the LDA (banks × rows) and the LDS (rows × cells)
// both are. DetectMicrobursts reads a sender's and a receiver's BucketSet
// through it; bucket (b, i) must be the same bucket at both sides.
type BucketSet interface {
	NumBanks() int
	BankSize(bank int) int
	Bucket(bank, i int) (tsSum, count, digest uint64)
}

// LossTime is the estimated send time of one lost packet, recovered from a
// bucket that lost exactly one packet (Varghese, Kompella et al., slides
// "Detecting microbursts"): with the bucket's sender sum T_A over n+1
// packets and receiver sum T_B over the n that arrived,
//
//	T_B − T_A = Σ d_i − a_l ≈ n·d̄ − a_l   ⇒   a_l ≈ T_A − (T_B − n·d̄)
//
// where d̄ is the mean delay. Its error is Σ(d_i − d̄) over the bucket's n
// received packets, about √n·σ: buckets should be small (the slides: enough
// buckets that each has at most one loss w.h.p.).
type LossTime struct {
	SendNs uint64 // estimated send time of the lost packet, ns, sender clock
	// ID is the lost packet's identity recovered from the bucket's sender
	// and receiver digests (LDA: DigestMixInverse of their difference; LDS:
	// their XOR), right when the bucket lost one packet and nothing else
	// moved; 0 when the synopsis keeps no digests.
	ID uint64
	// Estimates is the number of buckets that saw this loss (an LDS records
	// a packet in every row, so one loss shows in up to Rows buckets with
	// the same ID; their send-time estimates are averaged).
	Estimates int
	// Received is the number of received packets in those buckets, the n
	// whose delay spread makes up the estimate's error.
	Received uint64
}

// Microburst is a series of closely spaced losses.
type Microburst struct {
	StartNs, EndNs uint64 // estimated send times of the first and last loss, ns
	Losses         int    // single-loss buckets (distinct lost packets) in it
}

var errBucketShape = fmt.Errorf("%w: sender and receiver bucket sets differ in shape", ErrConfigMismatch)

// lossIDer is a BucketSet whose digests are not XORs of identities: it
// recovers the identity of a single lost packet from the sender's and the
// receiver's digest.
type lossIDer interface {
	lossID(senderDigest, receiverDigest uint64) uint64
}

// SingleLossTimes appends to dst the estimated send time of the lost packet
// of every bucket pair that lost exactly one packet (sender count =
// receiver count + 1; an LDS cell of a flow with weight > 1 never
// qualifies), using meanDelayNs as d̄ (the interval's mean delay from the
// LDA, or a flow's from the LDS). Estimates with the same non-zero ID are
// one packet and are averaged. The result is sorted by SendNs.
func SingleLossTimes(dst []LossTime, sender, receiver BucketSet, meanDelayNs float64) ([]LossTime, error) {
	if sender.NumBanks() != receiver.NumBanks() {
		return dst, errBucketShape
	}
	if math.IsNaN(meanDelayNs) || math.IsInf(meanDelayNs, 0) {
		return dst, errors.New("synopsis: mean delay must be finite")
	}
	start := len(dst)
	for b := 0; b < sender.NumBanks(); b++ {
		if sender.BankSize(b) != receiver.BankSize(b) {
			return dst[:start], errBucketShape
		}
		for i := 0; i < sender.BankSize(b); i++ {
			sa, na, da := sender.Bucket(b, i)
			sb, nb, db := receiver.Bucket(b, i)
			if na != nb+1 {
				continue
			}
			// Wrap-around arithmetic: sums of absolute ns timestamps
			// overflow, their differences do not.
			nd := uint64(int64(math.Round(float64(nb) * meanDelayNs)))
			id := da ^ db
			if li, ok := sender.(lossIDer); ok {
				id = li.lossID(da, db)
			}
			dst = append(dst, LossTime{SendNs: sa - (sb - nd), ID: id, Estimates: 1, Received: nb})
		}
	}
	out := dst[start:]
	// One packet seen in several buckets (LDS rows): average by ID.
	sort.Slice(out, func(a, b int) bool {
		if out[a].ID != out[b].ID {
			return out[a].ID < out[b].ID
		}
		return out[a].SendNs < out[b].SendNs
	})
	w := 0
	for i := 0; i < len(out); {
		j := i + 1
		if out[i].ID != 0 {
			for j < len(out) && out[j].ID == out[i].ID {
				j++
			}
		}
		m := out[i]
		var off float64
		for _, x := range out[i+1 : j] {
			off += float64(int64(x.SendNs - m.SendNs))
			m.Received += x.Received
		}
		m.Estimates = j - i
		m.SendNs += uint64(int64(math.Round(off / float64(j-i))))
		out[w] = m
		w++
		i = j
	}
	out = out[:w]
	sort.Slice(out, func(a, b int) bool { return out[a].SendNs < out[b].SendNs })
	return dst[:start+w], nil
}

// DetectMicrobursts groups losses (sorted by SendNs, as SingleLossTimes
// returns them) into microbursts: runs in which consecutive losses are at
// most gapNs apart and that hold at least minLosses losses (0 means 2).
func DetectMicrobursts(losses []LossTime, gapNs uint64, minLosses int) []Microburst {
	if minLosses <= 0 {
		minLosses = 2
	}
	var out []Microburst
	for i := 0; i < len(losses); {
		j := i + 1
		for j < len(losses) && losses[j].SendNs-losses[j-1].SendNs <= gapNs {
			j++
		}
		if j-i >= minLosses {
			out = append(out, Microburst{StartNs: losses[i].SendNs, EndNs: losses[j-1].SendNs, Losses: j - i})
		}
		i = j
	}
	return out
}

// FindMicrobursts is SingleLossTimes followed by DetectMicrobursts.
func FindMicrobursts(sender, receiver BucketSet, meanDelayNs float64, gapNs uint64, minLosses int) ([]Microburst, error) {
	losses, err := SingleLossTimes(nil, sender, receiver, meanDelayNs)
	if err != nil {
		return nil, err
	}
	return DetectMicrobursts(losses, gapNs, minLosses), nil
}

// LDABuckets presents an LDA as a BucketSet for SingleLossTimes and
// FindMicrobursts. Each packet of an LDA is in at most one bank, so every
// single-loss bucket is a distinct lost packet. Enable LDAConfig.Digest to
// get the lost packets' identities in LossTime.ID.
func LDABuckets(l *LDA) BucketSet {
	cfg := l.Config()
	rows := make([]int, len(cfg.Banks))
	for i, b := range cfg.Banks {
		rows[i] = b.Rows
	}
	return ldaBucketSet{l: l, rows: rows}
}

type ldaBucketSet struct {
	l    *LDA
	rows []int
}

func (s ldaBucketSet) NumBanks() int { return len(s.rows) }

func (s ldaBucketSet) BankSize(bank int) int {
	if bank < 0 || bank >= len(s.rows) {
		return 0
	}
	return s.rows[bank]
}

// lossID: an LDA bucket's digest is a sum of DigestMix(h).
func (s ldaBucketSet) lossID(da, db uint64) uint64 {
	if da == db {
		return 0
	}
	return DigestMixInverse(da - db)
}

func (s ldaBucketSet) Bucket(bank, i int) (tsSum, count, digest uint64) {
	return s.l.Bucket(bank, i)
}
