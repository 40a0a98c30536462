package rules

import (
	"bytes"
	"errors"
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

// WriteFile reads the paths file and writes its rules to out, or to
// stdout when out is "-". ErrPaths wraps what is wrong with a paths file
// that exists (the user's to fix); other errors are I/O.
func WriteFile(paths, out string, stdout io.Writer) error {
	var b bytes.Buffer
	if err := GenerateFile(&b, paths); err != nil {
		if _, statErr := os.Stat(paths); statErr == nil {
			return fmt.Errorf("%w: %w", ErrPaths, err)
		}
		return err
	}
	if out == "-" {
		_, err := stdout.Write(b.Bytes())
		return err
	}
	return os.WriteFile(out, b.Bytes(), 0o644)
}

// ErrPaths marks a paths file that does not parse.
var ErrPaths = errors.New("bad paths file")

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
