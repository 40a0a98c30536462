package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"

	"github.com/ldafwd/ldafwd/appliance/service"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// checkRun is `ldafwd run --check`, after the flags, the --config file and
// the key have been validated: it checks what a start would need next —
// the --report file's directory is writable, --metrics-addr can be bound,
// the ports open (and are closed again at once) — and prints what would
// run. Nothing is forwarded and no file is created, so a unit's
// ExecStartPre or an operator can run it beside a running appliance, as
// long as the ports are not in use (an AF_XDP queue or a DPDK device is
// held by one process at a time: check it before the start).
func checkRun(o *runOptions, stdout io.Writer, log zerolog.Logger) error {
	if p := o.out.report; p != "" {
		if err := writableFile(p); err != nil {
			return fmt.Errorf("--report: %w", err)
		}
	}
	if a := o.cfg.MetricsAddr; a != "" {
		l, err := net.Listen("tcp", a)
		if err != nil {
			return fmt.Errorf("--metrics-addr: %w", err)
		}
		l.Close()
	}
	desc, err := service.CheckPorts(&o.cfg, log)
	if err != nil {
		return err
	}
	mode := "measuring (segment on port " + o.cfg.Segment + ")"
	if o.cfg.ForwardOnly {
		mode = "forwarding only"
	}
	auth := "control frames authenticated with the key of " + o.cfg.KeyFile
	switch {
	case o.cfg.ForwardOnly:
		auth = "no control frames"
	case o.cfg.Insecure:
		auth = "control frames NOT authenticated (--insecure)"
	}
	fmt.Fprintf(stdout, "ok: %s, segment %q, interval %s, synopses %s, %d queue(s); %s\n",
		mode, o.cfg.SegmentName, o.cfg.Interval, o.synopses, o.cfg.Queues, auth)
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
