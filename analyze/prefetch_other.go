//go:build !amd64

package analyze

// prefetch is a no-op where there is no prefetch instruction written for
// the architecture.
func prefetch(addr uintptr) {}
