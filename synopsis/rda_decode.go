package synopsis

// RDADecoding is the result of peeling a subtraction RDA (receiver −
// sender): the identities of the set difference S_S ⊕ S_R (paper Sec.
// IV-A), split by side.
type RDADecoding struct {
	Lost  []uint64 // seen by the sender only (Δ = −1 in receiver − sender): lost, or late past the interval end
	Extra []uint64 // seen by the receiver only (Δ = +1): reordered in from the previous interval, or rewritten in transit
	// Complete: every cell peeled to empty (ID 0, Δ 0, chk 0), so Lost and Extra
	// are the whole set difference (up to a 2^-64 chance of cancelling
	// identities).
	Complete bool
	// ResidualCells: cells still non-empty after peeling — the decode
	// failure (a 2-core of the hypergraph: too many problem packets for m,
	// duplicates, or forged cells).
	ResidualCells int
	// Aborted: the peeling stopped at its step bound (adversarial input).
	Aborted bool
	// Repeats: pure-looking cells whose identity was already decoded
	// (forged or 2^-64-unlucky cells; left unpeeled).
	Repeats int
	// ResidualExtraCells: residual cells that prove undecoded receiver-only
	// packets (Δ > 0, or Δ = 0 with something left in them). Undecoded
	// extra packets hide from them only by sharing, in every bank, a cell
	// with more undecoded lost ones.
	ResidualExtraCells int
}

// pure is the paper's pure-cell test (Sec. V-B (ii)) — |Δ| = 1 and the
// bank's hash of the cell's ID field points back at this very cell —
// plus the check field: chk == rdaCheck(ID). Without the check a cell
// holding several identities passes with probability 1/m (its ID XOR
// points anywhere), and peeling it lists a wrong identity and corrupts
// k more cells; with it, with probability 2^-64 (see rdaCheck). ID 0 is
// never pure: it is an empty cell or a duplicate.
func (r *RDA) pure(i int) bool {
	c := &r.cells[i]
	if (c.n != 1 && c.n != -1) || c.id == 0 || c.chk != rdaCheck(c.id) {
		return false
	}
	b := i / int(r.m)
	return r.cellIndex(c.id, b) == i
}

// Peel decodes a subtraction RDA in place (paper Algorithm 1): it finds
// pure cells, records each one's identity as lost (Δ = −1) or extra
// (Δ = +1) and removes it from its cell in every bank, which may make
// other cells pure, until no pure cell is left. r must be a receiver RDA
// from which the sender's was subtracted (Subtract); afterwards it holds
// the residual. TS fields are left alone: repair needs the timestamps of
// the listed packets from the caches (EstimateRDA).
//
// Departures from Algorithm 1: the pure-cell test also checks chk (see
// rdaCheck); the sign convention (its line 13 calls
// Δ = 1 lost, its Sec. IV-C calls it reordered; we subtract sender from
// receiver, so +1 is receiver-only = extra); a popped cell is re-tested
// for purity, not only for emptiness (another peel may have changed it);
// an identity is peeled at most once; and the loop is bounded, so false
// or forged pure cells cannot make it run forever.
func (r *RDA) Peel() RDADecoding {
	var d RDADecoding
	stack := make([]int32, 0, 64)
	seen := make(map[uint64]struct{})
	for i := range r.cells {
		if r.pure(i) {
			stack = append(stack, int32(i))
		}
	}
	// Every true peel empties one cell per bank; 2 × cells steps is more
	// than any honest decode needs.
	budget := 2*len(r.cells) + 16
	for len(stack) > 0 {
		i := int(stack[len(stack)-1])
		stack = stack[:len(stack)-1]
		if !r.pure(i) {
			continue
		}
		if budget == 0 {
			d.Aborted = true
			break
		}
		budget--
		id, delta, ck := r.cells[i].id, r.cells[i].n, r.cells[i].chk
		if _, again := seen[id]; again {
			// An honest decode lists an identity once; a second time
			// means false pure cells feeding each other (past
			// capacity, or forged). Leave it in place.
			d.Repeats++
			continue
		}
		seen[id] = struct{}{}
		if delta < 0 {
			d.Lost = append(d.Lost, id)
		} else {
			d.Extra = append(d.Extra, id)
		}
		for b := 0; b < r.k; b++ {
			q := r.cellIndex(id, b)
			c := &r.cells[q]
			c.id ^= id
			c.n -= delta
			c.chk ^= ck
			if r.pure(q) {
				stack = append(stack, int32(q))
			}
		}
	}
	for i := range r.cells {
		if c := &r.cells[i]; c.id != 0 || c.n != 0 || c.chk != 0 {
			d.ResidualCells++
			if c.n >= 0 {
				d.ResidualExtraCells++
			}
		}
	}
	d.Complete = d.ResidualCells == 0 && !d.Aborted
	return d
}

// DecodeRDA subtracts sender from receiver (in a scratch copy; neither
// is changed) and peels the difference.
func DecodeRDA(sender, receiver *RDA) (RDADecoding, error) {
	if err := receiver.sameShape(sender); err != nil {
		return RDADecoding{}, err
	}
	d := &RDA{cells: append([]rdaCell(nil), receiver.cells...), m: receiver.m, k: receiver.k, chunk: receiver.chunk}
	_ = d.Subtract(sender)
	return d.Peel(), nil
}
