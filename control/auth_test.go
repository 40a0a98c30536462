package control

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKeyFile(t *testing.T) {
	dir := t.TempDir()
	key, err := GenerateKey()
	if err != nil || len(key) != KeyLen {
		t.Fatalf("%d bytes: %v", len(key), err)
	}
	path := filepath.Join(dir, "k")
	if err := WriteKeyFile(path, key, false); err != nil {
		t.Fatal(err)
	}
	got, err := LoadKeyFile(path)
	if err != nil || !bytes.Equal(got, key) {
		t.Fatalf("load: %v", err)
	}
	if err := WriteKeyFile(path, key, false); !errors.Is(err, ErrKeyExists) {
		t.Fatalf("overwrite: %v", err)
	}
	if err := WriteKeyFile(path, key[:8], true); err == nil {
		t.Fatal("short key written")
	}

	write := func(name, text string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode) // umask
		return p
	}
	hexKey := hex.EncodeToString(key)
	for _, tt := range []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "nope"), "no such file"},
		{"world readable", write("wr", hexKey, 0o644), "chmod 600"},
		{"world writable", write("ww", hexKey, 0o602), "chmod 600"},
		{"not hex", write("nh", "zz"+hexKey[2:], 0o600), "not hex"},
		{"short", write("short", hexKey[:62], 0o600), "at least 32"},
		{"long", write("long", strings.Repeat("ab", 65), 0o600), "at most 64"},
		{"empty", write("empty", "", 0o600), "at least 32"},
		{"directory", dir, "not a regular file"},
		{"group writable", write("gw", hexKey, 0o660), "chmod 600"},
		{"symbolic link", symlink(t, write("target", hexKey, 0o600), filepath.Join(dir, "link")), "symbolic link"},
		{"foreign owner", chown(t, write("foreign", hexKey, 0o600), 4242), "owned by uid 4242"},
	} {
		if tt.path == "" {
			continue // chown needs root
		}
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadKeyFile(tt.path)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want it to mention %q", err, tt.want)
			}
		})
	}
	// Whitespace around the hex (an editor's newline) is fine; group
	// read is allowed (a service group may hold the key).
	p := write("ws", "  "+hexKey+"\n\n", 0o640)
	if got, err := LoadKeyFile(p); err != nil || !bytes.Equal(got, key) {
		t.Fatalf("whitespace: %v", err)
	}
	if os.Geteuid() != 0 { // root reads anything
		p := write("unreadable", hexKey, 0o000)
		if _, err := LoadKeyFile(p); err == nil {
			t.Fatal("unreadable key loaded")
		}
	}
}

func TestAuthenticatorKeyLength(t *testing.T) {
	for _, n := range []int{1, MinKeyLen - 1, MaxKeyLen + 1} {
		if _, err := NewAuthenticator(make([]byte, n)); err == nil {
			t.Errorf("%d-byte key accepted", n)
		}
	}
	for _, n := range []int{0, MinKeyLen, MaxKeyLen} {
		a, err := NewAuthenticator(make([]byte, n))
		if err != nil || a.Insecure() != (n == 0) {
			t.Errorf("%d-byte key: %v", n, err)
		}
	}
}

// TestTagIsTruncatedHMAC pins the tag to the first 16 bytes of
// HMAC-SHA256(key, header‖payload), computed independently.
func TestTagIsTruncatedHMAC(t *testing.T) {
	b := validFrame(t, []byte("abc"))
	var f Frame
	if err := ParseFrame(b, &f); err != nil {
		t.Fatal(err)
	}
	want := referenceHMAC(testKey, b[EthHeaderLen:len(b)-TagLen])
	if !bytes.Equal(f.Tag, want[:TagLen]) {
		t.Fatalf("tag % x, want % x", f.Tag, want[:TagLen])
	}
}

func symlink(t *testing.T, target, link string) string {
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	return link
}

// chown gives path to uid, or returns "" when this process may not (not
// root).
func chown(t *testing.T, path string, uid int) string {
	if os.Geteuid() != 0 {
		return ""
	}
	if err := os.Chown(path, uid, -1); err != nil {
		t.Fatal(err)
	}
	return path
}
