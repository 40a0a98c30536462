package control

import (
	"bytes"
	"testing"
)

func TestEndReader(t *testing.T) {
	s := newTestSender(t, DefaultMTU, 2, twoParts)
	w0, _ := s.NewEndWriter(0)
	w1, _ := s.NewEndWriter(1)
	rd, err := NewEndReader(testKey, false, 1)
	if err != nil {
		t.Fatal(err)
	}
	e := End{StartNs: 10, EndNs: 20, Frames: 5}
	end1 := w0.AppendEnd(nil, 1, &e)
	other := w1.AppendEnd(nil, 1, &e)
	end2 := w0.AppendEnd(nil, 2, &e)
	forged := append([]byte(nil), end2...)
	forged[len(forged)-1] ^= 1
	frag, _ := s.AppendInterval(nil, 1, 0, makeParts(1, twoParts, 10))
	wrongKey := newTestSenderKey(t, DefaultMTU, 1, twoParts, bytes.Repeat([]byte{7}, KeyLen), 0)
	wk, _ := wrongKey.NewEndWriter(0)
	restarted := newTestSenderKey(t, DefaultMTU, 1, twoParts, testKey, 0)
	rw, _ := restarted.NewEndWriter(0)
	later := End{StartNs: 20, EndNs: 30, Frames: 5}
	restartEnd := rw.AppendEnd(nil, 1, &later)
	user := append([]byte(nil), end2...)
	user[14] = 'X' // a user's frame of the control EtherType: not ours

	for _, step := range []struct {
		name string
		b    []byte
		k    uint64
		want EndStatus
	}{
		{"first end", end1, 1, EndNew},
		{"another lane's end of the same interval", other, 1, EndStale},
		{"replay", end1, 1, EndStale},
		{"forged", forged, 0, EndForeign},
		{"wrong key", wk.AppendEnd(nil, 9, &e), 0, EndForeign},
		{"user frame", user, 0, EndForeign},
		{"fragment", frag[1], 0, EndNotMarker},
		{"hello", frag[0], 0, EndNotMarker},
		{"truncated", end2[:50], 0, EndForeign},
		{"next interval", end2, 2, EndNew},
		{"restart at interval 1", restartEnd, 1, EndNew},
		{"retired session's end", end2, 2, EndStale},
		{"retired session's newer interval", w0.AppendEnd(nil, 7, &later), 7, EndStale},
	} {
		k, got, st := rd.Read(step.b, 0)
		if st != step.want || k != step.k {
			t.Fatalf("%s: status %d interval %d, want %d %d", step.name, st, k, step.want, step.k)
		}
		if st == EndNew && got.Frames != 5 {
			t.Fatalf("%s: payload %+v", step.name, got)
		}
	}
	other2 := newTestSender(t, DefaultMTU, 1, twoParts)
	other2.cfg.Direction = 2
	ow, _ := other2.NewEndWriter(0)
	if _, _, st := rd.Read(ow.AppendEnd(nil, 5, &later), 0); st != EndNotMarker {
		t.Fatalf("other direction: %d", st)
	}
	if _, err := NewEndReader(nil, false, 1); err == nil {
		t.Fatal("no key and not insecure accepted")
	}

	buf := w0.AppendEnd(nil, 100, &e)
	allocs := testing.AllocsPerRun(1000, func() {
		if _, _, st := rd.Read(buf, 0); st == EndForeign {
			panic("forged")
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocs per Read", allocs)
	}
}
