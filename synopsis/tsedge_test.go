package synopsis

import (
	"bytes"
	"errors"
	"slices"
	"testing"
)

// memberCache is a cache holding ids 1..5 at timestamps 100..500, id 0 at
// 50, id 3 twice (its second copy at 900).
func memberCache(t testing.TB) *TSCache {
	c, err := NewTSCache(TSCacheMinBudget)
	if err != nil {
		t.Fatal(err)
	}
	c.Insert(0, 50)
	for id := uint64(1); id <= 5; id++ {
		c.Insert(id, 100*id)
	}
	c.Insert(3, 900)
	return c
}

func TestMemberRoundTrip(t *testing.T) {
	c := memberCache(t)
	ids := []uint64{1, 3, 7, 0, 5, 9, 2, 8, 4}
	req := AppendMemberRequest(nil, ids)
	if len(req) != MemberRequestBytes(len(ids)) || !IsMemberRequest(req) {
		t.Fatalf("request of %d bytes, MemberRequestBytes %d", len(req), MemberRequestBytes(len(ids)))
	}
	got, err := ParseMemberRequest(req)
	if err != nil || !slices.Equal(got, ids) {
		t.Fatalf("request: %v %v", got, err)
	}
	a, err := ParseMemberReply(c.AppendMemberReply(nil, ids), ids)
	if err != nil {
		t.Fatal(err)
	}
	wantOnce := []bool{true, false, false, true, true, false, true, false, true}
	wantMore := []bool{false, true, false, false, false, false, false, false, false}
	if !a.Complete || a.Dups != 1 || !slices.Equal(a.Once, wantOnce) || !slices.Equal(a.More, wantMore) {
		t.Fatalf("answer %+v", a)
	}
	// A reply to another request is refused.
	if _, err := ParseMemberReply(c.AppendMemberReply(nil, ids), ids[1:]); !errors.Is(err, ErrBadEncoding) {
		t.Fatalf("reply to another request: %v", err)
	}
	other := slices.Clone(ids)
	other[0] = 11
	if _, err := ParseMemberReply(c.AppendMemberReply(nil, ids), other); !errors.Is(err, ErrBadEncoding) {
		t.Fatalf("reply checked against other ids: %v", err)
	}
	// A sampled cache says it is not complete.
	s := memberCache(t)
	s.raiseLevel(1)
	if a, err := ParseMemberReply(s.AppendMemberReply(nil, ids), ids); err != nil || a.Complete {
		t.Fatalf("sampled cache: complete %v, %v", a.Complete, err)
	}
	// A cache no longer kept says so.
	if a, err := ParseMemberReply(GoneTSCache().AppendMemberReply(nil, ids), ids); err != nil || a.Complete || !a.Gone {
		t.Fatalf("gone: %+v, %v", a, err)
	}
	// No ids: a reply of empty bitmaps.
	if a, err := ParseMemberReply(c.AppendMemberReply(nil, nil), nil); err != nil || len(a.Once) != 0 {
		t.Fatalf("empty: %+v %v", a, err)
	}
}

func TestAppendWindow(t *testing.T) {
	c := memberCache(t)
	for _, tc := range []struct {
		lo, hi uint64
		want   []uint64
	}{
		{0, 1000, []uint64{0, 1, 2, 3, 4, 5}},
		{200, 400, []uint64{2, 3, 4}},
		{50, 50, []uint64{0}},
		{800, 1000, []uint64{3}}, // the second copy's time
		{501, 899, nil},
	} {
		got := c.AppendWindow(nil, tc.lo, tc.hi)
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("[%d, %d]: %v, want %v", tc.lo, tc.hi, got, tc.want)
		}
	}
	var nilCache *TSCache
	if got := nilCache.AppendWindow(nil, 0, 1); got != nil {
		t.Errorf("nil cache: %v", got)
	}
}

func TestMemberWireBad(t *testing.T) {
	ids := []uint64{1, 2, 3}
	good := memberCache(t).AppendMemberReply(nil, ids)
	for name, b := range map[string][]byte{
		"empty":         nil,
		"magic":         append([]byte{'X'}, good[1:]...),
		"version":       append([]byte{good[0], 9}, good[2:]...),
		"flags":         append([]byte{good[0], good[1], 0x80}, good[3:]...),
		"truncated":     good[:len(good)-1],
		"trailing":      append(slices.Clone(good), 0),
		"bit past last": func() []byte { b := slices.Clone(good); b[len(b)-1] |= 0x80; return b }(),
		"once and more": func() []byte { b := slices.Clone(good); b[len(b)-2] |= 1; b[len(b)-1] |= 1; return b }(),
	} {
		if _, err := ParseMemberReply(b, ids); !errors.Is(err, ErrBadEncoding) {
			t.Errorf("reply %s: %v", name, err)
		}
	}
	req := AppendMemberRequest(nil, ids)
	for name, b := range map[string][]byte{
		"empty":       nil,
		"magic":       append([]byte{'Q'}, req[1:]...),
		"short":       req[:len(req)-1],
		"long":        append(slices.Clone(req), 0),
		"huge count":  {memberRequestMagic, memberVersion, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"non-minimal": {memberRequestMagic, memberVersion, 0x80, 0x00},
	} {
		if _, err := ParseMemberRequest(b); !errors.Is(err, ErrBadEncoding) {
			t.Errorf("request %s: %v", name, err)
		}
	}
}

// FuzzMemberWire: membership requests and replies from arbitrary bytes
// fail cleanly or round trip.
func FuzzMemberWire(f *testing.F) {
	ids := []uint64{1, 3, 7, 0, 5, 9, 2, 8, 4}
	c := memberCache(f)
	f.Add(AppendMemberRequest(nil, ids))
	f.Add(c.AppendMemberReply(nil, ids))
	f.Add(c.AppendMemberReply(nil, nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		if req, err := ParseMemberRequest(b); err == nil {
			if !bytes.Equal(AppendMemberRequest(nil, req), b) {
				t.Fatal("request round trip changed the bytes")
			}
		} else if !errors.Is(err, ErrBadEncoding) {
			t.Fatal(err)
		}
		a, err := ParseMemberReply(b, ids)
		if err != nil {
			if !errors.Is(err, ErrBadEncoding) {
				t.Fatal(err)
			}
			return
		}
		// A cache holding what the reply says answers the same.
		fc, _ := NewTSCache(TSCacheMinBudget)
		for i, id := range ids {
			if a.Once[i] || a.More[i] {
				fc.Insert(id, uint64(i+1))
			}
			if a.More[i] {
				fc.Insert(id, uint64(i+1))
			}
		}
		fc.dups = a.Dups
		if !a.Complete {
			fc.level = 1
		}
		fc.gone = a.Gone
		if got := fc.AppendMemberReply(nil, ids); !bytes.Equal(got, b) {
			t.Fatalf("reply round trip changed the bytes:\n%x\n%x", b, got)
		}
	})
}
