package service

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// maxSegmentName bounds --segment-name: it is a label on every metric and
// a field of every report line.
const maxSegmentName = 64

// CheckSegmentName validates --segment-name: 1..64 bytes of printable
// UTF-8 (a Prometheus label value may hold anything, but one that a
// dashboard or a shell cannot show is a trap).
func CheckSegmentName(s string) error {
	if s == "" || len(s) > maxSegmentName || !utf8.ValidString(s) {
		return fmt.Errorf("--segment-name %q: want 1..%d bytes of UTF-8", s, maxSegmentName)
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("--segment-name %q: unprintable character %U", s, r)
		}
	}
	return nil
}
