package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/ldafwd/ldafwd/control"
	"github.com/spf13/pflag"
)

func init() {
	register("keygen", "write a random pre-shared key for control-frame HMACs (--out FILE)", runKeygen)
}

func runKeygen(args []string) error { return keygenMain(args, os.Stderr) }

// keygenMain writes a fresh 32-byte key, hex-encoded, mode 0600, to --out.
// The same file goes to both appliances of a segment (`ldafwd run
// --key-file`). It never prints the key: terminals and CI logs keep output.
func keygenMain(args []string, stderr io.Writer) error {
	fs := pflag.NewFlagSet("ldafwd keygen", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "file to write the key to (created with mode 0600; required)")
	force := fs.Bool("force", false, "replace an existing file")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("keygen: unexpected arguments %q", fs.Args())
	}
	if *out == "" {
		return errors.New("keygen: --out FILE is required")
	}
	key, err := control.GenerateKey()
	if err != nil {
		return fmt.Errorf("keygen: %w", err)
	}
	if err := control.WriteKeyFile(*out, key, *force); err != nil {
		return fmt.Errorf("keygen: %w", err)
	}
	fmt.Fprintf(stderr, "wrote a %d-byte key to %s (mode 0600); copy it to both appliances over a secure channel and pass --key-file %s\n", len(key), *out, *out)
	return nil
}
