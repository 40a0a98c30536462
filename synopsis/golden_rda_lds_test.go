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
	for i, h := range goldenPackets {
		ts := t0 + uint64(i)*1000
		rda.Add(h, ts)
		key := FlowKeyBytes{}
		key[0] = byte(i & 1)
		lds.AddFlow(0xF10_0000+uint64(i&1), h, ts, 1, &key)
	}
	for _, tc := range []struct {
		name string
		enc  func() ([]byte, error)
		want string
	}{
		{"rda", func() ([]byte, error) { return rda.AppendBinary(nil) }, goldenRDA},
		{"lds", func() ([]byte, error) { return lds.AppendBinary(nil) }, goldenLDS},
	} {
		b, err := tc.enc()
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != tc.want {
			t.Errorf("%s: encoding changed (%d bytes): sha256 %s, want %s", tc.name, len(b), got, tc.want)
		}
	}
}

const (
	goldenRDA = "41a678ea3924c430b240cdd754246223841a1ebc1b1966fdcc2ce6c82c4143b2"
	goldenLDS = "07470d93985409e34fe0dee8d28683a5c482fb3d9f75ee8efdcc8d57b4607094"
)
