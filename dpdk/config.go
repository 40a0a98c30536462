package dpdk

import "fmt"

// Config describes a port to Open. The zero value plus Index is usable.
type Config struct {
	// Index is the value written to dataplane.Packet.Port for frames this
	// port receives or allocates.
	Index uint8
	// Queues is the number of rx and of tx queues (RSS spreads rx over
	// them when > 1); 0 means 1.
	Queues int
	// RxDesc and TxDesc are ring sizes in descriptors; 0 means 1024
	// (l2fwd's RX_DESC_DEFAULT / TX_DESC_DEFAULT).
	RxDesc, TxDesc int
	// Burst is the largest burst RxBurst/TxBurst handle; 0 means 32. It
	// sizes the per-queue C arrays and must not change for the port's life.
	Burst int
	// Mbufs is the mbuf pool size; 0 sizes it like l2fwd:
	// max(queues×(RxDesc+TxDesc+Burst) + Lcores×MempoolCache, 8192).
	Mbufs int
	// Lcores is how many threads will use the pool (each has a per-lcore
	// cache of MempoolCache mbufs); 0 means 2.
	Lcores int
	// NoHWTimestamps turns off the rx timestamp offload even when the PMD
	// offers it.
	NoHWTimestamps bool
	// NoSoftTimestamps leaves Packet.TS 0 on frames the NIC did not stamp
	// instead of reading CLOCK_REALTIME once per rx burst in the burst
	// helper. For a consumer that stamps such frames itself with a clock
	// read it takes per burst anyway — a dataplane.Lane does — this saves
	// one clock read (~20 ns) per burst. Hardware stamps are unaffected.
	NoSoftTimestamps bool
	// NoRxAhead turns off receive-ahead: by default a TxBurst made on the
	// thread that receives on the same queue (a registered lcore, not the
	// main one) also receives that queue's next burst in the same cgo
	// call, and the next RxBurst hands it over without one — a bump in the
	// wire on one worker transmits on a port just before it receives
	// there, so this halves its cgo calls. Such frames wait in the queue
	// (at most one burst) until that RxBurst. Software stamps are taken
	// when C received them; with NoSoftTimestamps the consumer stamps them
	// at the hand-over, when an RxBurst without receive-ahead would have
	// received them.
	NoRxAhead bool
}

// MempoolCache is the per-lcore mbuf cache size (l2fwd's MEMPOOL_CACHE_SIZE).
const MempoolCache = 256

// MaxBurst bounds Config.Burst: the C arrays are sized by it.
const MaxBurst = 512

func (c Config) withDefaults() (Config, error) {
	if c.Queues == 0 {
		c.Queues = 1
	}
	if c.RxDesc == 0 {
		c.RxDesc = 1024
	}
	if c.TxDesc == 0 {
		c.TxDesc = 1024
	}
	if c.Burst == 0 {
		c.Burst = 32
	}
	if c.Lcores == 0 {
		c.Lcores = 2
	}
	switch {
	case c.Queues < 1 || c.Queues > 64:
		return c, fmt.Errorf("dpdk: %d queues (want 1..64)", c.Queues)
	case c.RxDesc < 32 || c.RxDesc > 1<<15 || c.TxDesc < 32 || c.TxDesc > 1<<15:
		return c, fmt.Errorf("dpdk: %d rx / %d tx descriptors (want 32..32768)", c.RxDesc, c.TxDesc)
	case c.Burst < 1 || c.Burst > MaxBurst:
		return c, fmt.Errorf("dpdk: burst %d (want 1..%d)", c.Burst, MaxBurst)
	case c.Lcores < 1 || c.Lcores > 128:
		return c, fmt.Errorf("dpdk: %d lcores (want 1..128)", c.Lcores)
	}
	if c.Mbufs == 0 {
		c.Mbufs = max(c.Queues*(c.RxDesc+c.TxDesc+c.Burst)+c.Lcores*MempoolCache, 8192)
	}
	if c.Mbufs < c.Queues*c.RxDesc+c.Burst {
		return c, fmt.Errorf("dpdk: %d mbufs cannot fill %d rx rings of %d", c.Mbufs, c.Queues, c.RxDesc)
	}
	return c, nil
}
