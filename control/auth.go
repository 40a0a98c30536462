package control

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Key sizes (bytes). HMAC-SHA256 gains nothing from keys longer than its
// 64-byte block, and a key shorter than the 32-byte output weakens it.
const (
	KeyLen    = 32 // what GenerateKey and `ldafwd keygen` write
	MinKeyLen = 32
	MaxKeyLen = 64
)

// Authenticator computes and checks the truncated HMAC-SHA256 tag of
// control frames with one pre-shared key. It keeps hash state, so each
// goroutine (each worker emitting End frames, the control goroutine) needs
// its own; Sign/Verify do not allocate.
//
// Without a key (NewAuthenticator(nil)) it is in insecure mode: it writes
// FlagInsecure and a zero tag, and accepts only such frames. Anyone on the
// link can then forge reports; the caller must have been told so
// (`--insecure`) and should warn.
type Authenticator struct {
	mac hash.Hash // nil in insecure mode
	sum [sha256.Size]byte
}

// NewAuthenticator returns an Authenticator for key, or an insecure one for
// a nil or empty key. A key outside MinKeyLen..MaxKeyLen is an error.
func NewAuthenticator(key []byte) (*Authenticator, error) {
	if len(key) == 0 {
		return &Authenticator{}, nil
	}
	if len(key) < MinKeyLen || len(key) > MaxKeyLen {
		return nil, fmt.Errorf("control: key is %d bytes, want %d..%d", len(key), MinKeyLen, MaxKeyLen)
	}
	return &Authenticator{mac: hmac.New(sha256.New, key)}, nil
}

// newAuthenticatorMode applies the rule every constructor shares: a key, or
// insecure mode asked for explicitly, never both, never neither.
func newAuthenticatorMode(key []byte, insecure bool) (*Authenticator, error) {
	if len(key) == 0 && !insecure {
		return nil, errors.New("control: no key: give a key file or choose insecure mode explicitly")
	}
	if len(key) > 0 && insecure {
		return nil, errors.New("control: both a key and insecure mode given")
	}
	return NewAuthenticator(key)
}

// Insecure reports whether a has no key.
func (a *Authenticator) Insecure() bool { return a.mac == nil }

// appendTag appends the tag of authed (which may alias dst's tail).
func (a *Authenticator) appendTag(dst, authed []byte) []byte {
	if a.mac == nil {
		var zero [TagLen]byte
		return append(dst, zero[:]...)
	}
	a.mac.Reset()
	a.mac.Write(authed)
	s := a.mac.Sum(a.sum[:0])
	return append(dst, s[:TagLen]...)
}

// Verify reports whether f's tag authenticates f.Authed under a's key (in
// constant time), and that f's insecure flag matches a's mode: a keyed
// receiver never accepts an unkeyed frame, and an insecure one accepts only
// frames that say they are unkeyed with a zero tag.
func (a *Authenticator) Verify(f *Frame) bool {
	if len(f.Tag) != TagLen {
		return false
	}
	if a.mac == nil {
		var zero [TagLen]byte
		return f.Flags&FlagInsecure != 0 && subtle.ConstantTimeCompare(f.Tag, zero[:]) == 1
	}
	if f.Flags&FlagInsecure != 0 {
		return false
	}
	a.mac.Reset()
	a.mac.Write(f.Authed)
	s := a.mac.Sum(a.sum[:0])
	return subtle.ConstantTimeCompare(f.Tag, s[:TagLen]) == 1
}

// GenerateKey returns KeyLen bytes from crypto/rand.
func GenerateKey() ([]byte, error) {
	k := make([]byte, KeyLen)
	if _, err := rand.Read(k); err != nil {
		return nil, fmt.Errorf("control: reading random key: %w", err)
	}
	return k, nil
}

// ErrKeyExists is returned by WriteKeyFile when the file exists and
// overwrite is false.
var ErrKeyExists = errors.New("control: key file exists (use --force to overwrite)")

// WriteKeyFile writes key hex-encoded with a trailing newline to path with
// mode 0600. It refuses an existing path unless overwrite; with overwrite
// the new key goes to a temporary file in the same directory that is then
// renamed over path, so a reader never sees a half-written key and the
// old file's (possibly wider) mode does not carry over.
func WriteKeyFile(path string, key []byte, overwrite bool) error {
	if len(key) < MinKeyLen || len(key) > MaxKeyLen {
		return fmt.Errorf("control: key is %d bytes, want %d..%d", len(key), MinKeyLen, MaxKeyLen)
	}
	data := []byte(hex.EncodeToString(key) + "\n")
	if !overwrite {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: %s", ErrKeyExists, path)
		}
		if err != nil {
			return fmt.Errorf("control: creating key file: %w", err)
		}
		if _, err := f.Write(data); err != nil {
			f.Close()
			os.Remove(path)
			return fmt.Errorf("control: writing key file: %w", err)
		}
		return f.Close()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".ldafwd-key-*")
	if err != nil {
		return fmt.Errorf("control: creating key file: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	// CreateTemp already uses 0600; Chmod says so explicitly against umask games.
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("control: key file mode: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("control: writing key file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("control: writing key file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("control: installing key file: %w", err)
	}
	return nil
}

// LoadKeyFile reads a hex-encoded key written by WriteKeyFile (or by hand:
// surrounding whitespace is ignored). It rejects a symbolic link (whoever
// may change the link may swap the key), a file that is not a regular
// file, one owned by another user (root's files excepted), one that its
// group may write or others may read or write (any of the mode bits 0027),
// text that is not hex, and a key shorter than MinKeyLen or longer than
// MaxKeyLen — each with an error that names the path and the fix. Group
// read is allowed: a service group may hold the key.
func LoadKeyFile(path string) ([]byte, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("control: key file: %w", err)
	}
	if st.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("control: key file %s is a symbolic link: give the file itself", path)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("control: key file %s is not a regular file", path)
	}
	if perm := st.Mode().Perm(); perm&0o027 != 0 {
		return nil, fmt.Errorf("control: key file %s has mode %04o: its group may write it or others may use it; run chmod 600 %s (or 640)", path, perm, path)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		if uid := os.Geteuid(); int(sys.Uid) != uid && sys.Uid != 0 {
			return nil, fmt.Errorf("control: key file %s is owned by uid %d, not by this user (uid %d) or root: run chown %d %s", path, sys.Uid, uid, uid, path)
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("control: key file: %w", err)
	}
	text := strings.TrimSpace(string(raw))
	key, err := hex.DecodeString(text)
	if err != nil {
		return nil, fmt.Errorf("control: key file %s is not hex (write one with `ldafwd keygen --out %s`): %v", path, path, err)
	}
	if len(key) < MinKeyLen {
		return nil, fmt.Errorf("control: key file %s holds %d bytes, want at least %d (write one with `ldafwd keygen`)", path, len(key), MinKeyLen)
	}
	if len(key) > MaxKeyLen {
		return nil, fmt.Errorf("control: key file %s holds %d bytes, want at most %d", path, len(key), MaxKeyLen)
	}
	return key, nil
}
