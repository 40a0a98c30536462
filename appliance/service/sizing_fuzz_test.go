package service

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ldafwd/ldafwd/synopsis"
)

// FuzzLDABanks: --lda-banks takes any text without panicking; what it
// accepts is exactly the banks the text lists, and the LDA it configures
// either builds or is refused with an error, never a panic.
func FuzzLDABanks(f *testing.F) {
	for _, s := range []string{"512:3,512:7", "2:0", " 1024:1 , 8:2", "512:", ":3", "512:300", "-2:1", "3:1", "1048576:0", ",", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l := LDAFlags{Banks: s}
		cfg, err := l.Config()
		if s == "" || err != nil {
			return
		}
		parts := strings.Split(s, ",")
		if len(cfg.Banks) != len(parts) {
			t.Fatalf("%q: %d banks from %d items", s, len(cfg.Banks), len(parts))
		}
		rows := 0
		for i, b := range cfg.Banks {
			if got := fmt.Sprintf("%d:%d", b.Rows, b.SampleLog2); !sameBank(parts[i], got) {
				t.Fatalf("%q: bank %d parsed as %s", s, i, got)
			}
			if b.Rows > 0 {
				rows += b.Rows
			}
		}
		if rows <= 1<<16 { // large ones only cost memory
			synopsis.NewLDA(cfg)
		}
	})
}

// sameBank: item (as typed) and parsed agree up to spaces, signs and
// leading zeros.
func sameBank(item, parsed string) bool {
	var r1, r2 int
	var k1, k2 uint64
	_, e1 := fmt.Sscanf(strings.TrimSpace(item), "%d:%d", &r1, &k1)
	_, e2 := fmt.Sscanf(parsed, "%d:%d", &r2, &k2)
	return e1 == nil && e2 == nil && r1 == r2 && k1 == k2
}
