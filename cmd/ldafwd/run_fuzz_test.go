package main

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ldafwd/ldafwd/flagfile"
	"github.com/spf13/pflag"
)

// FuzzRunConfig feeds arbitrary config files to the --config parser: it
// never panics, every error names --config, and whatever it accepted
// round-trips: writing the scalar flags it set back as quoted
// "key = value" lines and parsing that gives the same values.
func FuzzRunConfig(f *testing.F) {
	for _, s := range []string{
		"", "# only a comment\n", "port-a = ring:x.a\nsegment-port b\n", "--port-b: \"ring:y.b\"\n",
		"mec = voice=dscp:46\nmec = web=proto:tcp\n", "insecure\n", "insecure = false\n", "interval = 250ms\n",
		"bogus = 1\n", "= 3\n", ":\n", "port-a\n", "config = x\n", "burst = 99999999999999999999\n",
		"interval = \"1s\n", "cores = 0,1\n", "lda-loss-rates = 0.1,0.2\n", "port-a = '\\x00'\n", "\x00\xff=\n",
		"report = \"a\\\"b\"\n", "format: json\r\n", "---\nlog-level: debug\n",
		"mec:\n  - voice=dscp:46\n  - web=proto:tcp\n", "- x\n", "cores:\n- 0\n- 1\n", "interval:\n", "mec:\n-\n",
		"port-a = ring:x.a # c\n", "report = \"a #b\" # c\n", "report = 'a\\'#\n", "mec: [a, b]\n", "segment-name = a#b\n", "mec: # x\n - v=dscp:1 #y\n",
	} {
		f.Add(s)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, text string) {
		path := filepath.Join(dir, "fuzz.conf")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		var o runOptions
		fs := newFlagSet("run", io.Discard)
		o.flags(fs)
		if _, err := flagfile.Apply(fs, path); err != nil {
			if !strings.Contains(err.Error(), "--config") {
				t.Fatalf("error %q does not name --config", err)
			}
			return
		}
		var b strings.Builder
		want := map[string]string{}
		fs.Visit(func(fl *pflag.Flag) {
			if typ := fl.Value.Type(); strings.Contains(typ, "Slice") || strings.Contains(typ, "Array") {
				return // "[a,b]" is not the input syntax of a list
			}
			want[fl.Name] = fl.Value.String()
			b.WriteString(fl.Name + " = " + strconv.Quote(fl.Value.String()) + "\n")
		})
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		var o2 runOptions
		fs2 := newFlagSet("run", io.Discard)
		o2.flags(fs2)
		if _, err := flagfile.Apply(fs2, path); err != nil {
			t.Fatalf("round trip of %q: %v", b.String(), err)
		}
		for name, v := range want {
			if got := fs2.Lookup(name).Value.String(); got != v {
				t.Fatalf("round trip of --%s: %q → %q", name, v, got)
			}
		}
	})
}
