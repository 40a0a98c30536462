package synopsis

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// goldenPackets are fixed identities and times (one identity twice:
// identical frames) for the RDA and LDS golden vectors.
var goldenPackets = []uint64{0x8000_0000_0000_0001, 0x0fff_0000_0000_0002, 0x0fff_0000_0000_0002, 0x0000_1234_5678_9abd, 0x4000_0000_0000_0000, 0x1357_9bdf_2468_ace0}

// TestGoldenRDALDSEncodings pins the bytes (their SHA-256) of the RDA's
// and the LDS's wire encodings of fixed synopses: both ends of a segment
// must agree on them, so a change of layout, hashing or cell order must
// come with a new version byte and new vectors, not pass every round-trip
// test unnoticed.
func TestGoldenRDALDSEncodings(t *testing.T) {
	const t0 = 1_700_000_000_000_000_000
	rda, err := NewRDA(RDAConfig{Banks: 2, Cells: 8})
	if err != nil {
		t.Fatal(err)
	}
	lds, err := NewLDS(LDSConfig{Rows: 2, Cols: 8, CellsPerFlow: 2, MaxFlows: 4})
	if err != nil {
		t.Fatal(err)
	}
	// dense: two cells, both used (rda, 12 of 16 cells used, is sparse).
	dense, err := NewRDA(RDAConfig{Banks: 1, Cells: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range goldenPackets {
		ts := t0 + uint64(i)*1000
		rda.Add(h, ts)
		dense.Add(h, ts)
		key := FlowKeyBytes{}
		key[0] = byte(i & 1)
		// Stamp uncertainties of 0, 7, 14, … ns: the cells' errSum field.
		lds.AddFlow(0xF10_0000+uint64(i&1), h, ts, uint64(i)*7, 1, &key)
	}
	folded, err := lds.FoldCols(4)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		enc  func() ([]byte, error)
		want string
	}{
		{"rda", func() ([]byte, error) { return rda.AppendBinary(nil) }, goldenRDA},
		{"rda-dense", func() ([]byte, error) { return dense.AppendBinary(nil) }, goldenRDADense},
		{"lds", func() ([]byte, error) { return lds.AppendBinary(nil) }, goldenLDS},
		{"lds-folded", func() ([]byte, error) { return folded.AppendBinary(nil) }, goldenLDSFolded},
	} {
		b, err := tc.enc()
		if err != nil {
			t.Fatal(err)
		}
		if tc.name != "rda" && tc.name != "rda-dense" {
			// The stamp errors ride along: each of the 2 rows holds every
			// packet, 7·(0+1+…+5) = 105 ns per row.
			var d LDS
			if err := d.UnmarshalBinary(b); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			var errSum uint64
			for _, c := range d.cells {
				errSum += c.errSum
			}
			if errSum != 210 {
				t.Errorf("%s: cells' stamp error %d ns decoded, want 210", tc.name, errSum)
			}
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != tc.want {
			t.Errorf("%s: encoding changed (%d bytes): sha256 %s, want %s", tc.name, len(b), got, tc.want)
		}
	}
}

const (
	goldenRDA      = "e5414abf6a199f87b4d0c0161d34df662068737046bf6e1c3131d2a695e02148"
	goldenRDADense = "36b966c90e752c2c6d82602804f4409303e218142a2ba08b54993142543d9c80"
	// LDS version 3: per-cell stamp error, fold always written.
	goldenLDS       = "a53270173d3e26e7aa4420a080dd8a54a695b09f3c02a37a7923d3443f115e39"
	goldenLDSFolded = "096d91efca98a8329156cd5083675c2309b8bc392c538c1996aaab3adca3b4bc"
)

// TestRDASparseEncoding: an RDA with few used cells encodes only those
// (an empty one in a few bytes), and decodes to the same cells; every
// truncation of the encoding is an error, not a different RDA.
func TestRDASparseEncoding(t *testing.T) {
	for _, packets := range []int{0, 1, 50, 3000} {
		r := MustNewRDA(RDAConfig{Banks: 3, Cells: 1024})
		for i := 0; i < packets; i++ {
			r.Add(Remix(uint64(i)+1, 7), 1_700_000_000_000_000_000+uint64(i)*977)
		}
		b, err := r.AppendBinary(nil)
		if err != nil {
			t.Fatal(err)
		}
		if packets == 0 && len(b) > 32 {
			t.Errorf("empty RDA of 3×1024 cells encodes in %d bytes", len(b))
		}
		if dense := 3 * 1024 * rdaMinCellSize; packets <= 50 && len(b) > dense/10 {
			t.Errorf("%d packets: %d bytes, dense would be ≥ %d", packets, len(b), dense)
		}
		var d RDA
		if err := d.UnmarshalBinary(b); err != nil {
			t.Fatalf("%d packets: %v", packets, err)
		}
		if len(d.cells) != len(r.cells) {
			t.Fatalf("%d packets: %d cells decoded, want %d", packets, len(d.cells), len(r.cells))
		}
		for i := range r.cells {
			if d.cells[i] != r.cells[i] {
				t.Fatalf("%d packets: cell %d decoded %+v, want %+v", packets, i, d.cells[i], r.cells[i])
			}
		}
		for cut := 0; cut < len(b); cut++ {
			var e RDA
			if e.UnmarshalBinary(b[:cut]) == nil {
				t.Fatalf("%d packets: the first %d of %d bytes decode", packets, cut, len(b))
			}
		}
	}
}
