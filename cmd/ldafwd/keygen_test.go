package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ldafwd/ldafwd/control"
)

func TestKeygen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "lda.key")
	var stderr bytes.Buffer
	if err := keygenMain([]string{"--out", path}, io.Discard, &stderr); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %04o, want 0600", st.Mode().Perm())
	}
	key, err := control.LoadKeyFile(path)
	if err != nil || len(key) != control.KeyLen {
		t.Fatalf("key %d bytes: %v", len(key), err)
	}
	if strings.Contains(stderr.String(), string(key)) {
		t.Fatal("key printed")
	}

	// No overwrite without --force; the key stays.
	err = keygenMain([]string{"--out", path}, io.Discard, &stderr)
	if err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("overwrite without --force: %v", err)
	}
	if again, _ := control.LoadKeyFile(path); !bytes.Equal(again, key) {
		t.Fatal("key changed without --force")
	}

	// --force replaces it with a new key and 0600, even over a wider mode.
	os.Chmod(path, 0o644)
	if err := keygenMain([]string{"--out", path, "--force"}, io.Discard, &stderr); err != nil {
		t.Fatal(err)
	}
	st, _ = os.Stat(path)
	second, err := control.LoadKeyFile(path)
	if err != nil || bytes.Equal(second, key) || st.Mode().Perm() != 0o600 {
		t.Fatalf("forced key: %v, mode %04o", err, st.Mode().Perm())
	}
}

func TestKeygenFlagErrors(t *testing.T) {
	var stderr bytes.Buffer
	for _, args := range [][]string{
		{},
		{"--out"},
		{"--bogus"},
		{"--out", "x", "extra"},
		{"--out", filepath.Join(t.TempDir(), "no", "such", "dir", "k")},
	} {
		if err := keygenMain(args, io.Discard, &stderr); err == nil {
			t.Errorf("args %q accepted", args)
		}
	}
	if err := keygenMain([]string{"--help"}, io.Discard, &stderr); err != nil {
		t.Errorf("--help: %v", err)
	}
}
