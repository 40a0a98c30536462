package netns

import "testing"

func TestParseFrame(t *testing.T) {
	f := Frame(nil, nil, 1, 99, 70)
	if tag, seq, ok := ParseFrame(f); !ok || tag != 1 || seq != 99 {
		t.Fatalf("ParseFrame = %d %d %v", tag, seq, ok)
	}
	u := UDPFrame(nil, nil, 2, 77, 90, 1234)
	if tag, seq, ok := ParseFrame(u); !ok || tag != 2 || seq != 77 {
		t.Fatalf("ParseFrame(UDP) = %d %d %v", tag, seq, ok)
	}
	u[60]++
	if _, _, ok := ParseFrame(u); ok {
		t.Fatal("corrupted UDP payload accepted")
	}
	f[40]++
	if _, _, ok := ParseFrame(f); ok {
		t.Fatal("corrupted payload accepted")
	}
	if _, _, ok := ParseFrame(f[:20]); ok {
		t.Fatal("short frame accepted")
	}
}
