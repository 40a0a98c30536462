//go:build dpdk

package dpdk

/*
#cgo pkg-config: libdpdk
#cgo CFLAGS: -O3
#cgo LDFLAGS: -lrte_bus_vdev
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/ldafwd/ldafwd/dataplane"
)

// ErrNoDevice is wrapped when the device of a spec cannot be found or
// probed (no such PCI device, unknown vdev driver, missing interface).
var ErrNoDevice = errors.New("dpdk: no such device")

var poolSeq atomic.Uint32

// Port is an ethdev (NIC or vdev) opened from a "dpdk:" spec. As a
// dataplane.Port it is its queue 0; Queue(i) gives the other queues.
type Port struct {
	name   string
	dev    Device
	id     uint16
	cfg    Config
	pool   *C.struct_rte_mempool
	clk    *C.struct_ldaf_clock // C memory: passed to ldaf_rx each burst
	hwTS   bool
	queues []*Queue
	drops  dataplane.Stats // last drop/error counters read from ethdev
	// net_af_packet: its packet sockets (afpacket.go) and the frames they
	// dropped so far.
	pktSocks  []int
	sockDrops uint64
	gone      dataplane.Stats // packet/byte counters of queues freed by Close

	mu     sync.Mutex  // serialises Stats/XStats/Close
	closed atomic.Bool // set by Close; bursts on a closed port return 0
}

var _ dataplane.Port = (*Port)(nil)
var _ dataplane.Port = (*Queue)(nil)
var _ dataplane.Forwarder = (*Port)(nil)
var _ dataplane.Forwarder = (*Queue)(nil)

// Open probes the device of spec (a vdev is created, a PCI device taken by
// address), creates its mbuf pool, configures Queues rx and tx queues
// (RSS over them when more than one), enables hardware rx timestamps when
// the PMD offers them, and starts it. Init must have been called.
func Open(spec string, cfg Config) (*Port, error) {
	if err := ealReady(); err != nil {
		return nil, err
	}
	dev, err := ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	if cfg, err = cfg.withDefaults(); err != nil {
		return nil, err
	}
	p := &Port{name: "dpdk:" + dev.Devargs(), dev: dev, cfg: cfg}
	cname := C.CString(dev.Name)
	defer C.free(unsafe.Pointer(cname))
	var id C.uint16_t
	if C.rte_eth_dev_get_port_by_name(cname, &id) != 0 {
		cargs := C.CString(dev.Devargs())
		ret := C.rte_dev_probe(cargs)
		C.free(unsafe.Pointer(cargs))
		if ret < 0 && ret != -C.EEXIST {
			return nil, fmt.Errorf("%w %q: rte_dev_probe: %s%s", ErrNoDevice, spec, C.GoString(C.rte_strerror(-ret)), probeHint(dev))
		}
		if C.rte_eth_dev_get_port_by_name(cname, &id) != 0 {
			return nil, fmt.Errorf("%w %q: probed, but no ethdev is named %q", ErrNoDevice, spec, dev.Name)
		}
	}
	p.id = uint16(id)
	socket := C.rte_eth_dev_socket_id(id)
	if socket < 0 {
		socket = 0
	}
	pname := C.CString(fmt.Sprintf("ldaf_mb%d_%d", p.id, poolSeq.Add(1)))
	defer C.free(unsafe.Pointer(pname))
	var perr C.int
	p.pool = C.ldaf_pool_create(pname, C.uint(cfg.Mbufs), socket, &perr)
	if p.pool == nil {
		p.remove()
		return nil, fmt.Errorf("dpdk: %s: mbuf pool of %d: %s", p.name, cfg.Mbufs, C.GoString(C.rte_strerror(perr)))
	}
	p.clk = (*C.struct_ldaf_clock)(C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_ldaf_clock{}))))
	p.clk.ts_off = -1
	p.clk.soft = C.int(boolInt(!cfg.NoSoftTimestamps))
	if !cfg.NoHWTimestamps {
		var off C.int
		var flag C.uint64_t
		if C.rte_mbuf_dyn_rx_timestamp_register(&off, &flag) == 0 {
			p.clk.ts_off = off
			p.clk.ts_flag = flag
		}
	}
	var hw C.int
	ret := C.ldaf_port_setup(id, C.uint16_t(cfg.Queues), C.uint16_t(cfg.RxDesc), C.uint16_t(cfg.TxDesc),
		p.pool, C.int(boolInt(p.clk.ts_off >= 0)), &hw)
	if ret != 0 {
		p.free()
		return nil, fmt.Errorf("dpdk: %s: configure %d queues: %s", p.name, cfg.Queues, C.GoString(C.rte_strerror(-ret)))
	}
	if hw != 0 && C.ldaf_calibrate(id, p.clk) == 0 {
		p.hwTS = true
	} else {
		p.clk.ts_off = -1
	}
	for q := 0; q < cfg.Queues; q++ {
		p.queues = append(p.queues, newQueue(p, uint16(q)))
	}
	if iface := afPacketIface(dev); iface != "" {
		// Without its sockets the port reports the PMD's counters alone
		// (no drop is lost from them: the kernel keeps counting).
		if p.pktSocks, err = packetSockets(iface); err != nil {
			p.pktSocks = nil
		}
		for _, fd := range p.pktSocks {
			_, _ = socketDrops(fd) // whatever dropped before the start
		}
	}
	return p, nil
}

func probeHint(d Device) string {
	if d.PCI {
		return " (is it bound to vfio-pci and allowed with -a, and was EAL started without --no-pci?)"
	}
	if strings.HasPrefix(d.Name, "net_af_packet") {
		// DPDK 22.11's net_af_packet names its PACKET_FANOUT group pid XOR
		// ifindex, and a group belongs to one interface of the network
		// namespace: another process's group can take the number.
		return " (does iface name an existing interface? If the PMD logged \"could not set PACKET_FANOUT\", another process's" +
			" af_packet socket in this network namespace holds the fanout group this process's pid and the interface give:" +
			" start it again)"
	}
	return " (is the driver name right and its PMD loaded with -d, and do its arguments name an existing interface?)"
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Name is the port's spec, "dpdk:net_null0,copy=1".
func (p *Port) Name() string { return p.name }

// ID is the DPDK ethdev port id.
func (p *Port) ID() uint16 { return p.id }

// Queues is the number of rx/tx queue pairs.
func (p *Port) Queues() int { return len(p.queues) }

// Queue returns the view of queue pair i, used by one worker at a time.
func (p *Port) Queue(i int) *Queue { return p.queues[i] }

// TimestampSource says where rx timestamps come from: "hardware" (the NIC
// clock through the mbuf timestamp dynfield, converted to Unix ns by a
// line fitted at start) or "software" (CLOCK_REALTIME once per burst).
func (p *Port) TimestampSource() string {
	if p.hwTS {
		return "hardware"
	}
	return "software"
}

// RxBurst receives on queue 0.
func (p *Port) RxBurst(pkts []*dataplane.Packet) int { return p.queues[0].RxBurst(pkts) }

// TxBurst transmits on queue 0.
func (p *Port) TxBurst(pkts []*dataplane.Packet) int { return p.queues[0].TxBurst(pkts) }

// ForwardTo is queue 0's dataplane.Forwarder (see Queue.ForwardTo).
func (p *Port) ForwardTo(to dataplane.Port, kept []*dataplane.Packet) (rx int, rxBytes uint64, k int, ok bool) {
	return p.queues[0].ForwardTo(to, kept)
}

// LastTxNs is queue 0's dataplane.TxStamper reading (see Queue.LastTxNs).
func (p *Port) LastTxNs() uint64 { return p.queues[0].LastTxNs() }

// LastTxErrNs is queue 0's dataplane.TxStampErr reading.
func (p *Port) LastTxErrNs() uint64 { return p.queues[0].LastTxErrNs() }

// Alloc takes fresh mbufs (on queue 0's arrays).
func (p *Port) Alloc(pkts []*dataplane.Packet) int { return p.queues[0].Alloc(pkts) }

// Free returns mbufs to their pool (on queue 0's arrays).
func (p *Port) Free(pkts []*dataplane.Packet) { p.queues[0].Free(pkts) }

// Link reports the link state and speed in Mbit/s.
func (p *Port) Link() (up bool, speedMbps uint32, err error) {
	var speed C.uint32_t
	ret := C.ldaf_link(C.uint16_t(p.id), &speed)
	if ret < 0 {
		return false, 0, fmt.Errorf("dpdk: %s: link: %s", p.name, C.GoString(C.rte_strerror(-ret)))
	}
	return ret == 1, uint32(speed), nil
}

// MAC is the port's Ethernet address.
func (p *Port) MAC() ([6]byte, error) {
	var mac [6]byte
	if ret := C.ldaf_mac(C.uint16_t(p.id), (*C.uint8_t)(unsafe.Pointer(&mac[0]))); ret != 0 {
		return mac, fmt.Errorf("dpdk: %s: mac: %s", p.name, C.GoString(C.rte_strerror(-ret)))
	}
	return mac, nil
}

// Stats are the port's counters: packets and bytes as RxBurst/TxBurst
// handed them over (summed over queues), and from ethdev RxDropped =
// imissed + rx_nombuf (frames the NIC had no descriptor or mbuf for; a
// net_af_packet port adds its packet sockets' drops, afpacket.go),
// TxDropped = oerrors, RxErrors = ierrors. After Close the last values stay.
func (p *Port) Stats() dataplane.Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	var st dataplane.Stats
	for _, q := range p.queues {
		if q.c == nil {
			continue
		}
		rxp, rxb, txp, txb := q.counters()
		st.RxPackets += rxp
		st.RxBytes += rxb
		st.TxPackets += txp
		st.TxBytes += txb
	}
	st.RxPackets += p.gone.RxPackets
	st.RxBytes += p.gone.RxBytes
	st.TxPackets += p.gone.TxPackets
	st.TxBytes += p.gone.TxBytes
	st.RxDropped, st.TxDropped, st.RxErrors = p.drops.RxDropped, p.drops.TxDropped, p.drops.RxErrors
	if p.closed.Load() {
		return st
	}
	var s C.struct_rte_eth_stats
	for _, fd := range p.pktSocks {
		if d, err := socketDrops(fd); err == nil {
			p.sockDrops += d
		}
	}
	if C.rte_eth_stats_get(C.uint16_t(p.id), &s) == 0 {
		st.RxDropped = uint64(s.imissed) + uint64(s.rx_nombuf) + p.sockDrops
		st.TxDropped = uint64(s.oerrors)
		st.RxErrors = uint64(s.ierrors)
		p.drops = st // kept for Stats after Close
	}
	return st
}

// EthStats reads the ethdev's own basic counters (packets and bytes as the
// PMD counts them; some, like net_null, count no bytes).
func (p *Port) EthStats() (dataplane.Stats, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		return dataplane.Stats{}, fmt.Errorf("dpdk: %s: closed", p.name)
	}
	var s C.struct_rte_eth_stats
	if ret := C.rte_eth_stats_get(C.uint16_t(p.id), &s); ret != 0 {
		return dataplane.Stats{}, fmt.Errorf("dpdk: %s: stats: %s", p.name, C.GoString(C.rte_strerror(-ret)))
	}
	return dataplane.Stats{
		RxPackets: uint64(s.ipackets), TxPackets: uint64(s.opackets),
		RxBytes: uint64(s.ibytes), TxBytes: uint64(s.obytes),
		RxDropped: uint64(s.imissed) + uint64(s.rx_nombuf),
		TxDropped: uint64(s.oerrors),
		RxErrors:  uint64(s.ierrors),
	}, nil
}

// XStats reads the PMD's extended counters by name (control side only: it
// allocates).
func (p *Port) XStats() (map[string]uint64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		return nil, fmt.Errorf("dpdk: %s: closed", p.name)
	}
	id := C.uint16_t(p.id)
	n := C.rte_eth_xstats_get_names(id, nil, 0)
	if n < 0 {
		return nil, fmt.Errorf("dpdk: %s: xstats: %s", p.name, C.GoString(C.rte_strerror(-n)))
	}
	if n == 0 {
		return map[string]uint64{}, nil
	}
	names := make([]C.struct_rte_eth_xstat_name, n)
	vals := make([]C.struct_rte_eth_xstat, n)
	if m := C.rte_eth_xstats_get_names(id, &names[0], C.uint(n)); m != n {
		return nil, fmt.Errorf("dpdk: %s: xstats names changed (%d, then %d)", p.name, n, m)
	}
	if m := C.rte_eth_xstats_get(id, &vals[0], C.uint(n)); m != n {
		return nil, fmt.Errorf("dpdk: %s: xstats values: got %d of %d", p.name, m, n)
	}
	out := make(map[string]uint64, n)
	for _, v := range vals {
		if int(v.id) < len(names) {
			out[C.GoString(&names[v.id].name[0])] = uint64(v.value)
		}
	}
	return out, nil
}

// Close stops and closes the ethdev and removes a vdev it created. Its
// mbuf pool is freed by Cleanup (mbufs of it may still be in a peer port's
// tx ring). Workers must have stopped using the port. Idempotent.
func (p *Port) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Swap(true) {
		return nil
	}
	var errs []error
	if ret := C.rte_eth_dev_stop(C.uint16_t(p.id)); ret != 0 {
		errs = append(errs, fmt.Errorf("dpdk: %s: stop: %s", p.name, C.GoString(C.rte_strerror(-ret))))
	}
	if ret := C.rte_eth_dev_close(C.uint16_t(p.id)); ret != 0 {
		errs = append(errs, fmt.Errorf("dpdk: %s: close: %s", p.name, C.GoString(C.rte_strerror(-ret))))
	}
	p.remove()
	p.deferPool()
	for _, q := range p.queues {
		rxp, rxb, txp, txb := q.counters()
		p.gone.RxPackets += rxp
		p.gone.RxBytes += rxb
		p.gone.TxPackets += txp
		p.gone.TxBytes += txb
		q.free()
	}
	p.free()
	return errors.Join(errs...)
}

// remove detaches a vdev so the same name can be probed again.
func (p *Port) remove() {
	if p.dev.PCI {
		return
	}
	cname := C.CString(p.dev.Name)
	C.ldaf_vdev_uninit(cname)
	C.free(unsafe.Pointer(cname))
}

// Pools outlive their port: mbufs of a closed port's pool may still sit in
// another port's tx ring (a bump in the wire transmits its peer's mbufs),
// and that port's stop frees them into this pool. Closed ports' pools are
// therefore freed by Cleanup, after every port stopped.
var closedPools struct {
	sync.Mutex
	pools []*C.struct_rte_mempool
}

func (p *Port) deferPool() {
	if p.pool == nil {
		return
	}
	closedPools.Lock()
	closedPools.pools = append(closedPools.pools, p.pool)
	closedPools.Unlock()
	p.pool = nil
}

// freeClosedPool frees one closed port's pool before Cleanup, for a
// caller that knows no mbuf of it is held anywhere (a test that returned
// every frame it received, among tests that use most of the EAL's memory).
func freeClosedPool(pool *C.struct_rte_mempool) {
	closedPools.Lock()
	defer closedPools.Unlock()
	for i, mp := range closedPools.pools {
		if mp == pool {
			C.rte_mempool_free(mp)
			closedPools.pools = append(closedPools.pools[:i], closedPools.pools[i+1:]...)
			return
		}
	}
}

// freeClosedPools frees the pools of closed ports (Cleanup calls it).
func freeClosedPools() {
	closedPools.Lock()
	defer closedPools.Unlock()
	for _, mp := range closedPools.pools {
		C.rte_mempool_free(mp)
	}
	closedPools.pools = nil
}

func (p *Port) free() {
	if p.pool != nil {
		C.rte_mempool_free(p.pool)
		p.pool = nil
	}
	if p.clk != nil {
		C.free(unsafe.Pointer(p.clk))
		p.clk = nil
	}
}

// availMbufs is how many mbufs of the port's pool are free (the ring and
// every lcore cache): tests use it to find mbufs lost or freed twice.
func (p *Port) availMbufs() int { return int(C.rte_mempool_avail_count(p.pool)) }
