package flagfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func suggestFlags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.Duration("interval", 0, "")
	fs.Int("control-copies", 0, "")
	fs.Float64("control-parity", 0, "")
	fs.String("segment-port", "", "")
	fs.String("port-a", "", "")
	fs.String("port-b", "", "")
	fs.String("old-name", "", "")
	_ = fs.MarkDeprecated("old-name", "use --port-a")
	return fs
}

func TestSuggest(t *testing.T) {
	fs := suggestFlags()
	for _, c := range []struct{ in, want string }{
		{"intervall", "interval"},
		{"inetrval", "interval"},   // two letters swapped
		{"--intreval", "interval"}, // dashes are not part of the name
		{"control-copy", "control-copies"},
		{"control-partiy", "control-parity"},
		{"segment_port", "segment-port"},
		{"port-c", "port-a"}, // a tie goes to the first name in order
		{"old-nam", ""},      // deprecated flags are never suggested
		{"bogus", ""},
		{"x", ""},
	} {
		if got := Suggest(fs, c.in); got != c.want {
			t.Errorf("Suggest(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{
		{"", "", 0}, {"abc", "", 3}, {"", "ab", 2}, {"abc", "abc", 0},
		{"abc", "acb", 1}, {"abc", "abd", 1}, {"abc", "abcd", 1}, {"kitten", "sitting", 3},
	} {
		if got := editDistance(c.a, c.b); got != c.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
		if got := editDistance(c.b, c.a); got != c.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d (symmetric)", c.b, c.a, got, c.d)
		}
	}
}

// TestApplySuggestsKey: a config file's typo names the key meant.
func TestApplySuggestsKey(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.conf")
	if err := os.WriteFile(p, []byte("intervall = 1s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Apply(suggestFlags(), p)
	if err == nil || !strings.Contains(err.Error(), `unknown key "intervall" (keys are the long flag names of ldafwd run) (did you mean "interval"?)`) {
		t.Fatalf("err = %v, want a suggestion of the key interval", err)
	}
}
