package appliance

import (
	"runtime/debug"
	"testing"
)

func TestTuneGC(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	t.Setenv("GOGC", "")
	if got := TuneGC(); got != ApplianceGCPercent || debug.SetGCPercent(100) != ApplianceGCPercent {
		t.Errorf("without GOGC: %d in force, want %d", got, ApplianceGCPercent)
	}
	t.Setenv("GOGC", "300")
	debug.SetGCPercent(300) // what the runtime read from GOGC at start
	if got := TuneGC(); got != 300 || debug.SetGCPercent(300) != 300 {
		t.Errorf("with GOGC=300: %d in force, want the user's 300", got)
	}
}
