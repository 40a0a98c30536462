package analyze

// prefetch asks the CPU to bring the cache line at addr closer. It never
// faults and changes nothing: a hint.
//
//go:noescape
func prefetch(addr uintptr)
