package dataplane_test

import (
	"encoding/binary"
	"encoding/hex"
	"github.com/ldafwd/ldafwd/dataplane/traffic"
	"testing"

	"github.com/ldafwd/ldafwd/control"
	"github.com/ldafwd/ldafwd/dataplane"
)

// The verification suite of Microsoft's RSS specification ("Verifying
// the RSS hash calculation"): the default key, IPv4 tuples with and
// without ports.
func TestToeplitzMicrosoftVectors(t *testing.T) {
	var key [40]byte
	k, _ := hex.DecodeString("6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa")
	copy(key[:], k)
	for _, c := range []struct {
		src, dst     [4]byte
		sport, dport uint16
		l3, l4       uint32
	}{
		{[4]byte{66, 9, 149, 187}, [4]byte{161, 142, 100, 80}, 2794, 1766, 0x323e8fc2, 0x51ccc178},
		{[4]byte{199, 92, 111, 2}, [4]byte{65, 69, 140, 83}, 14230, 4739, 0xd718262a, 0xc626b0ea},
		{[4]byte{24, 19, 198, 95}, [4]byte{12, 22, 207, 184}, 12898, 38024, 0xd2d0a5de, 0x5c2b394a},
	} {
		in := append(append([]byte{}, c.src[:]...), c.dst[:]...)
		if h := dataplane.Toeplitz(&key, in); h != c.l3 {
			t.Errorf("%v→%v: %08x, want %08x", c.src, c.dst, h, c.l3)
		}
		in = binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(in, c.sport), c.dport)
		if h := dataplane.Toeplitz(&key, in); h != c.l4 {
			t.Errorf("%v:%d→%v:%d: %08x, want %08x", c.src, c.sport, c.dst, c.dport, h, c.l4)
		}
	}
}

// Every frame of a flow steers to one queue; flows spread over the
// queues; End markers steer by lane, with or without VLAN tags.
func TestSteerQueue(t *testing.T) {
	gen, _ := traffic.NewGen(traffic.GenConfig{Flows: 64})
	buf := make([]byte, 256)
	for _, n := range []int{2, 4} {
		perFlow := map[int]int{}
		count := make([]int, n)
		for id := uint64(1); id <= 640; id++ {
			q := dataplane.SteerQueue(gen.Frame(buf, id), n)
			if q < 0 || q >= n {
				t.Fatalf("queue %d of %d", q, n)
			}
			f := gen.Flow(id)
			if old, ok := perFlow[f]; ok && old != q {
				t.Fatalf("flow %d on queues %d and %d", f, old, q)
			}
			perFlow[f] = q
			count[q]++
		}
		for q, c := range count {
			if c < 640/n/3 {
				t.Errorf("%d queues: queue %d got %d of 640 frames", n, q, c)
			}
		}
	}
	s, err := control.NewSender(control.SenderConfig{Insecure: true, Direction: 1,
		Hello: control.Hello{IntervalNs: 1e9, ConfigHash: 1, Lanes: 4, Clock: "c", MECs: []string{"all"}, Parts: []control.PartKey{{MEC: 0, Kind: control.KindLDA}}}})
	if err != nil {
		t.Fatal(err)
	}
	for lane := uint16(0); lane < 4; lane++ {
		w, _ := s.NewEndWriter(lane)
		f := w.AppendEnd(nil, 7, &control.End{StartNs: 1, EndNs: 2})
		if q := dataplane.SteerQueue(f, 4); q != int(lane) {
			t.Errorf("End of lane %d on queue %d", lane, q)
		}
		// With its per-class counts the End is longer: still its lane's.
		counted := w.AppendEnd(nil, 7, &control.End{StartNs: 1, EndNs: 2, Frames: 300, Classes: []uint64{300}})
		if len(counted) <= len(f) {
			t.Fatalf("End with counts %d bytes, without %d", len(counted), len(f))
		}
		if q := dataplane.SteerQueue(counted, 4); q != int(lane) {
			t.Errorf("End with counts of lane %d on queue %d", lane, q)
		}
		if q := dataplane.SteerQueue(f, 2); q != int(lane)%2 {
			t.Errorf("End of lane %d on queue %d of 2", lane, q)
		}
		tagged := append(append(append([]byte{}, f[:12]...), 0x81, 0, 0, 5), f[12:]...)
		if q := dataplane.SteerQueue(tagged, 4); q != int(lane) {
			t.Errorf("tagged End of lane %d on queue %d", lane, q)
		}
	}
	if dataplane.SteerQueue(nil, 4) != 0 || dataplane.SteerQueue(make([]byte, 13), 4) != 0 || dataplane.SteerQueue(buf, 1) != 0 {
		t.Error("short frames or one queue: want queue 0")
	}
}

func TestSteerQueueAllocs(t *testing.T) {
	gen, _ := traffic.NewGen(traffic.GenConfig{Flows: 8})
	f := gen.Frame(make([]byte, 256), 3)
	if n := testing.AllocsPerRun(100, func() { dataplane.SteerQueue(f, 2) }); n != 0 {
		t.Errorf("%v allocations", n)
	}
}

// FuzzSteerQueue: any bytes give a queue in range, never a panic.
func FuzzSteerQueue(f *testing.F) {
	gen, _ := traffic.NewGen(traffic.GenConfig{Flows: 8})
	for id := uint64(1); id < 5; id++ {
		f.Add(append([]byte(nil), gen.Frame(make([]byte, 128), id)...), uint8(2))
	}
	f.Add([]byte{}, uint8(3))
	f.Fuzz(func(t *testing.T, b []byte, n uint8) {
		q := dataplane.SteerQueue(b, int(n))
		if q < 0 || (n > 1 && q >= int(n)) || (n <= 1 && q != 0) {
			t.Fatalf("queue %d of %d", q, n)
		}
	})
}
