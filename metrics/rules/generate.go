package rules

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// Generate writes the rules file of c; source names the paths file in the
// header comment.
func Generate(w io.Writer, c *Config, source string) {
	g := &gen{w: w, c: c}
	g.rules(source)
}

// GenerateFile reads the paths file and writes its rules to w.
func GenerateFile(w io.Writer, paths string) error {
	f, err := os.Open(paths)
	if err != nil {
		return err
	}
	defer f.Close()
	c, err := Parse(f)
	if err != nil {
		return fmt.Errorf("%s: %v", paths, err)
	}
	var b bytes.Buffer
	Generate(&b, c, paths)
	_, err = w.Write(b.Bytes())
	return err
}
