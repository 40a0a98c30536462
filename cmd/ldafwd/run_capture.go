package main

import (
	"github.com/ldafwd/ldafwd/appliance/service"
	"github.com/spf13/pflag"
)

// registerCapture adds run's or demo's capture flags into c:
// --capture-<labels[0]> and --capture-<labels[1]> with the given help
// texts, and the limits the two share.
func registerCapture(fs *pflag.FlagSet, c *service.Capture, labels [2]string, helpA, helpB string) {
	c.Labels = labels
	fs.StringVar(&c.A, "capture-"+labels[0], "", helpA)
	fs.StringVar(&c.B, "capture-"+labels[1], "", helpB)
	fs.Int64Var(&c.MaxBytes, "capture-max-bytes", 1<<30, "stop capturing when a capture file reaches this many bytes (0: no limit); later frames are counted, not written")
	fs.IntVar(&c.SnapLen, "capture-snaplen", 2048, "bytes kept of each captured frame (64..65535; a longer frame is cut, its length kept); each lane's ring holds --capture-ring × this")
	fs.IntVar(&c.Slots, "capture-ring", 4096, "frames each lane's capture ring holds (a power of two, 64..1048576); frames that find it full are counted as ring_full, never delayed or dropped")
}
