package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// applyConfigFile sets every flag the file names that the command line
// did not set. The file has one "key = value" (or "key: value", or "key
// value") per line; keys are long flag names (a leading "--" is allowed);
// '#' starts a comment line; values may be quoted; a repeatable flag
// (--mec) may appear several times or as a YAML block list ("mec:" alone,
// then "- rule" lines); a bare key sets a boolean flag.
//
// It returns where each value it set came from ("--config PATH:LINE",
// keyed by flag name and value), so that a value found wrong later (a
// --mec rule) is reported with its line.
func applyConfigFile(fs *pflag.FlagSet, path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	origin := map[string]string{}
	onCmdLine := map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { onCmdLine[f.Name] = true })
	set := func(where, key, val string) error {
		if onCmdLine[key] {
			return nil // the command line wins
		}
		if err := fs.Set(key, unquote(val)); err != nil {
			return fmt.Errorf("%s: --%s: %w", where, key, err)
		}
		origin[key+"\x00"+unquote(val)] = where
		return nil
	}
	listKey := "" // the key of the YAML block list being read
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		where := fmt.Sprintf("--config %s:%d", path, i+1)
		if line == "" || strings.HasPrefix(line, "#") || line == "---" {
			continue
		}
		if line == "-" || strings.HasPrefix(line, "- ") {
			if listKey == "" {
				return nil, fmt.Errorf("%s: list item %q outside a list (put the key alone on the line before, e.g. \"mec:\")", where, line)
			}
			if err := set(where, listKey, strings.TrimSpace(line[1:])); err != nil {
				return nil, err
			}
			continue
		}
		listKey = ""
		key, val, ok := cutConfigLine(line)
		key = strings.TrimPrefix(key, "--")
		f := fs.Lookup(key)
		switch {
		case key == "":
			return nil, fmt.Errorf("%s: %q is not key = value", where, line)
		case f == nil:
			return nil, fmt.Errorf("%s: unknown key %q (keys are the long flag names of ldafwd run)", where, key)
		case key == "config":
			return nil, fmt.Errorf("%s: a config file cannot name another", where)
		case ok && val == "" && strings.HasSuffix(line, ":") && isListFlag(f):
			listKey = key
			continue
		case !ok && f.Value.Type() != "bool" || ok && val == "":
			return nil, fmt.Errorf("%s: key %q needs a value", where, key)
		}
		if !ok {
			val = "true"
		}
		if err := set(where, key, val); err != nil {
			return nil, err
		}
	}
	return origin, nil
}

// isListFlag reports whether f takes several values (--mec, --cores…).
func isListFlag(f *pflag.Flag) bool {
	t := f.Value.Type()
	return strings.HasSuffix(t, "Array") || strings.HasSuffix(t, "Slice")
}

func cutConfigLine(line string) (key, val string, ok bool) {
	i := strings.IndexAny(line, "=:")
	if j := strings.IndexAny(line, " \t"); i < 0 || (j >= 0 && j < i && strings.TrimSpace(line[j:i]) != "") {
		// "key value" or a bare key.
		if j < 0 {
			return line, "", false
		}
		return line[:j], strings.TrimSpace(line[j:]), true
	}
	return strings.TrimSpace(line[:i]), strings.TrimSpace(line[i+1:]), true
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		if u, err := strconv.Unquote(`"` + s[1:len(s)-1] + `"`); err == nil {
			return u
		}
		return s[1 : len(s)-1]
	}
	return s
}
