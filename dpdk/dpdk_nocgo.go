//go:build !dpdk

package dpdk

import "github.com/ldafwd/ldafwd/dataplane"

// Built reports whether this binary links DPDK.
const Built = false

// ErrNoDevice is wrapped when a device cannot be found or probed.
var ErrNoDevice = ErrNotBuilt

// Init returns ErrNotBuilt: this binary has no DPDK.
func Init(args []string) error { return ErrNotBuilt }

// InitEAL returns ErrNotBuilt: this binary has no DPDK.
func InitEAL(cfg EALConfig) error { return ErrNotBuilt }

// EALArgv returns nil: this binary has no DPDK.
func EALArgv() []string { return nil }

// Cleanup does nothing without DPDK.
func Cleanup() error { return nil }

// RegisterThread returns ErrNotBuilt: this binary has no DPDK.
func RegisterThread(cpu int) (int, error) { return -1, ErrNotBuilt }

// UnregisterThread does nothing without DPDK.
func UnregisterThread() {}

// LcoreID is -1 without DPDK.
func LcoreID() int { return -1 }

// Port is never opened in a build without DPDK.
type Port struct{ dataplane.Port }

// Open returns ErrNotBuilt after checking the spec, so a bad spec is still
// reported as such.
func Open(spec string, cfg Config) (*Port, error) {
	if _, err := ParseSpec(spec); err != nil {
		return nil, err
	}
	return nil, ErrNotBuilt
}

// TimestampSource is "none" without DPDK.
func (p *Port) TimestampSource() string { return "none" }

// The methods below keep the API the same in both builds; a Port is never
// opened without DPDK, so they are never reached.

// ID is 0 without DPDK.
func (p *Port) ID() uint16 { return 0 }

// Queues is 0 without DPDK.
func (p *Port) Queues() int { return 0 }

// Link returns ErrNotBuilt.
func (p *Port) Link() (bool, uint32, error) { return false, 0, ErrNotBuilt }

// MAC returns ErrNotBuilt.
func (p *Port) MAC() ([6]byte, error) { return [6]byte{}, ErrNotBuilt }

// XStats returns ErrNotBuilt.
func (p *Port) XStats() (map[string]uint64, error) { return nil, ErrNotBuilt }

// EthStats returns ErrNotBuilt.
func (p *Port) EthStats() (dataplane.Stats, error) { return dataplane.Stats{}, ErrNotBuilt }

// LastTxNs is 0 without DPDK (dataplane.TxStamper, as in the DPDK build).
func (p *Port) LastTxNs() uint64 { return 0 }

// ForwardTo forwards nothing without DPDK (dataplane.Forwarder, as in the
// DPDK build): ok false, the caller falls back to RxBurst/TxBurst.
func (p *Port) ForwardTo(to dataplane.Port, kept []*dataplane.Packet) (int, uint64, int, bool) {
	return 0, 0, 0, false
}

// Queue is a Port without DPDK (the DPDK build's is one queue pair).
type Queue = Port

// Queue returns p without DPDK.
func (p *Port) Queue(i int) *Queue { return p }
