package service

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// Check is `ldafwd run --check`, after the flags, the --config file and
// the key have been validated: it checks what a start would need next —
// the report file (report: --report, "" none) can be appended to, the
// metrics address can be bound, the ports open (and are closed again at
// once) — and prints what would run; synopses is the --synopsis list as
// given. Nothing is forwarded and no file is created. Run it before a
// start, not beside a running appliance: an AF_XDP queue or a DPDK device
// is held by one process at a time.
func Check(o *Config, report, synopses string, stdout io.Writer, log zerolog.Logger) error {
	if report != "" {
		if err := writableFile(report); err != nil {
			return fmt.Errorf("--report: %w", err)
		}
	}
	if a := o.MetricsAddr; a != "" {
		l, err := net.Listen("tcp", a)
		if err != nil {
			return fmt.Errorf("--metrics-addr: %w", err)
		}
		l.Close()
	}
	desc, err := CheckPorts(o, log)
	if err != nil {
		return err
	}
	mode := "measuring (segment on port " + o.Segment + ")"
	if o.ForwardOnly {
		mode = "forwarding only"
	}
	auth := "control frames authenticated with the key of " + o.KeyFile
	switch {
	case o.ForwardOnly:
		auth = "no control frames"
	case o.Insecure:
		auth = "control frames NOT authenticated (--insecure)"
	}
	fmt.Fprintf(stdout, "ok: %s, segment %q, interval %s, synopses %s, %d queue(s); %s\n",
		mode, o.SegmentName, o.Interval, synopses, o.Queues, auth)
	fmt.Fprintf(stdout, "ok: port a %s\nok: port b %s\n", desc[0], desc[1])
	return nil
}

// writableFile says whether run could append to path: an existing file
// must be writable, a new one's directory must exist and be writable.
func writableFile(path string) error {
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			return fmt.Errorf("%s is a directory", path)
		}
		if err := unix.Access(path, unix.W_OK); err != nil {
			return fmt.Errorf("%s is not writable: %w", path, err)
		}
		return nil
	}
	dir := filepath.Dir(path)
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return fmt.Errorf("cannot create %s: directory %s: %w", path, dir, err)
	}
	return nil
}
