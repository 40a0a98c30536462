package main

import (
	"encoding/hex"
	"fmt"
	"io"
	"os"

	"github.com/ldafwd/ldafwd/control"
)

func init() {
	register("keygen", "write a random pre-shared key for control-frame HMACs (--out FILE, or - for stdout)", runKeygen)
}

func runKeygen(args []string) error { return keygenMain(args, os.Stdout, os.Stderr) }

// keygenMain writes a fresh 32-byte key, hex-encoded, mode 0600, to --out.
// The same file goes to both appliances of a segment (`ldafwd run
// --key-file`). It prints the key only when asked to (--out -, for a pipe
// into a secrets store or ssh): terminals and CI logs keep output.
func keygenMain(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("keygen", stdout)
	out := fs.String("out", "", "file to write the key to (created with mode 0600), or - for stdout (required)")
	force := fs.Bool("force", false, "replace an existing file")
	if help, err := parseFlags(fs, "keygen", args); help || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("keygen: unexpected arguments %q", fs.Args())
	}
	if *out == "" {
		return usageErrorf("keygen: --out FILE (or --out - for stdout) is required")
	}
	key, err := control.GenerateKey()
	if err != nil {
		return fmt.Errorf("keygen: %w", err)
	}
	if *out == "-" {
		// The key file's format: hex and a newline (control.LoadKeyFile).
		if _, err := fmt.Fprintln(stdout, hex.EncodeToString(key)); err != nil {
			return fmt.Errorf("keygen: %w", err)
		}
		return nil
	}
	if err := control.WriteKeyFile(*out, key, *force); err != nil {
		return fmt.Errorf("keygen: %w", err)
	}
	fmt.Fprintf(stderr, "wrote a %d-byte key to %s (mode 0600); copy it to both appliances over a secure channel and pass --key-file %s\n", len(key), *out, *out)
	return nil
}
