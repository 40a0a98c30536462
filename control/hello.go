package control

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// PartKey names one per-interval payload: the synopsis Kind of one MEC.
type PartKey struct {
	MEC  uint16 // index into Hello.MECs
	Kind Kind
}

func (p PartKey) String() string { return fmt.Sprintf("mec%d/%s", p.MEC, p.Kind) }

// Hello is a session's configuration, sent as the payload of a TypeHello
// frame at the start of every interval's batch (so a receiver that starts
// or restarts late learns it within one interval). It never changes within
// a session: a sender with a new configuration starts a new session.
//
// Payload encoding (big-endian, docs/protocol.md):
//
//	0   8  SentNs      sender clock when the frame was built, ns since the Unix epoch
//	8   8  IntervalNs  interval length, ns (> 0)
//	16  8  ConfigHash  hash of the synopsis configurations (the receiver must match it)
//	24  2  Lanes       End markers per interval (sender workers), ≥ 1
//	26  1  len(Clock), then Clock bytes
//	    2  len(MECs), then per MEC: 1 length byte, name bytes (≥ 1)
//	    2  len(Parts), then per part: 2 MEC index (< len(MECs)), 1 Kind
//	    optional: 2 len(Config), then Config bytes (absent from older senders)
type Hello struct {
	SentNs     int64
	IntervalNs int64
	ConfigHash uint64
	Lanes      uint16
	Clock      string   // clock source, e.g. "CLOCK_REALTIME", "phc:/dev/ptp0"
	MECs       []string // MEC names; a MEC id is an index into this slice
	Parts      []PartKey
	// Config is the sender's synopsis configuration as space-separated
	// key=value items. Optional; when ConfigHash differs from the
	// receiver's, ConfigDiff names the settings that differ.
	Config string
}

// helloFixedLen is the Hello payload before its variable parts.
const helloFixedLen = 8 + 8 + 8 + 2

// AppendBinary appends the encoded Hello. It returns an error for a Hello
// that UnmarshalBinary would reject.
func (h *Hello) AppendBinary(dst []byte) ([]byte, error) {
	if err := h.validate(); err != nil {
		return dst, err
	}
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.SentNs))
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.IntervalNs))
	dst = binary.BigEndian.AppendUint64(dst, h.ConfigHash)
	dst = binary.BigEndian.AppendUint16(dst, h.Lanes)
	dst = append(dst, byte(len(h.Clock)))
	dst = append(dst, h.Clock...)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(h.MECs)))
	for _, m := range h.MECs {
		dst = append(dst, byte(len(m)))
		dst = append(dst, m...)
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(h.Parts)))
	for _, p := range h.Parts {
		dst = binary.BigEndian.AppendUint16(dst, p.MEC)
		dst = append(dst, byte(p.Kind))
	}
	if h.Config != "" {
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(h.Config)))
		dst = append(dst, h.Config...)
	}
	return dst, nil
}

func (h *Hello) validate() error {
	switch {
	case h.IntervalNs <= 0:
		return fmt.Errorf("control: hello: interval %d ns must be > 0", h.IntervalNs)
	case h.Lanes == 0:
		return fmt.Errorf("control: hello: lanes must be ≥ 1")
	case len(h.Clock) > 255:
		return fmt.Errorf("control: hello: clock name longer than 255 bytes")
	case len(h.MECs) == 0 || len(h.MECs) > 0xFFFF:
		return fmt.Errorf("control: hello: %d MECs, want 1..65535", len(h.MECs))
	case len(h.Parts) > 0xFFFF:
		return fmt.Errorf("control: hello: %d parts, want ≤ 65535", len(h.Parts))
	case len(h.Config) > 0xFFFF:
		return fmt.Errorf("control: hello: configuration longer than 65535 bytes")
	}
	for _, m := range h.MECs {
		if len(m) == 0 || len(m) > 255 {
			return fmt.Errorf("control: hello: MEC name %q must be 1..255 bytes", m)
		}
	}
	seen := make(map[PartKey]bool, len(h.Parts))
	for _, p := range h.Parts {
		if int(p.MEC) >= len(h.MECs) || p.Kind > maxKind {
			return fmt.Errorf("control: hello: part %v names no MEC or kind", p)
		}
		if seen[p] {
			return fmt.Errorf("control: hello: part %v listed twice", p)
		}
		seen[p] = true
	}
	return nil
}

// UnmarshalBinary decodes a Hello payload; on error h is unchanged. After
// the parts comes either nothing or exactly one length-prefixed
// configuration; any other trailing bytes are an error.
func (h *Hello) UnmarshalBinary(p []byte) error {
	if len(p) < helloFixedLen+1 {
		return ErrBadPayload
	}
	var n Hello
	n.SentNs = int64(binary.BigEndian.Uint64(p[0:]))
	n.IntervalNs = int64(binary.BigEndian.Uint64(p[8:]))
	n.ConfigHash = binary.BigEndian.Uint64(p[16:])
	n.Lanes = binary.BigEndian.Uint16(p[24:])
	r := p[helloFixedLen:]
	cl := int(r[0])
	r = r[1:]
	if len(r) < cl+2 {
		return ErrBadPayload
	}
	n.Clock = string(r[:cl])
	r = r[cl:]
	nm := int(binary.BigEndian.Uint16(r))
	r = r[2:]
	// Each MEC takes ≥ 2 bytes: bound the allocation by what is there.
	if nm > len(r)/2 {
		return ErrBadPayload
	}
	n.MECs = make([]string, 0, nm)
	for i := 0; i < nm; i++ {
		if len(r) < 1 || len(r) < 1+int(r[0]) {
			return ErrBadPayload
		}
		l := int(r[0])
		n.MECs = append(n.MECs, string(r[1:1+l]))
		r = r[1+l:]
	}
	if len(r) < 2 {
		return ErrBadPayload
	}
	np := int(binary.BigEndian.Uint16(r))
	r = r[2:]
	if len(r) < 3*np {
		return ErrBadPayload
	}
	n.Parts = make([]PartKey, np)
	for i := range n.Parts {
		n.Parts[i] = PartKey{MEC: binary.BigEndian.Uint16(r[3*i:]), Kind: Kind(r[3*i+2])}
	}
	if r = r[3*np:]; len(r) > 0 {
		if len(r) < 2 || len(r) != 2+int(binary.BigEndian.Uint16(r)) || len(r) == 2 {
			return ErrBadPayload
		}
		n.Config = string(r[2:])
	}
	if n.validate() != nil {
		return ErrBadPayload
	}
	*h = n
	return nil
}

// ConfigDiff names the settings in which two configurations (Hello.Config
// form: space-separated key=value items) differ, e.g. "lds: sender 4x512,
// ours 4x1024". A setting only one side has shows as "none" on the other.
// "" when the descriptions are equal (the difference, if any, is in
// something neither describes).
func ConfigDiff(sender, ours string) string {
	parse := func(s string) (map[string]string, []string) {
		m := map[string]string{}
		var keys []string
		for _, it := range strings.Fields(s) {
			k, v, _ := strings.Cut(it, "=")
			if _, dup := m[k]; !dup {
				keys = append(keys, k)
			}
			m[k] = v
		}
		return m, keys
	}
	sm, sk := parse(sender)
	om, ok := parse(ours)
	for _, k := range ok {
		if _, in := sm[k]; !in {
			sk = append(sk, k)
		}
	}
	var out []string
	for _, k := range sk {
		sv, sin := sm[k]
		ov, oin := om[k]
		if sin && oin && sv == ov {
			continue
		}
		if !sin {
			sv = "none"
		}
		if !oin {
			ov = "none"
		}
		out = append(out, fmt.Sprintf("%s: sender %s, ours %s", k, sv, ov))
	}
	return strings.Join(out, "; ")
}
