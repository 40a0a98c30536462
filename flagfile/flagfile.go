package flagfile

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// Apply sets every flag the file names that the command line
// did not set. The format is ldafwd's own, line-based (not YAML, though a
// simple YAML mapping of scalars and block lists reads the same):
//
//   - one "key = value", "key: value" or "key value" per line; keys are
//     long flag names (a leading "--" is allowed); a bare key sets a
//     boolean flag;
//   - '#' at the start of a line, or after a space or tab outside quotes,
//     starts a comment that runs to the end of the line; blank lines and
//     "---" are skipped;
//   - a value may be quoted ("…" with Go escapes, or '…');
//   - a repeatable flag (--mec, --cores) may appear on several lines, or
//     as a block list: the key alone ("mec:"), then one "- value" line
//     per item; a flow list ("mec: [a, b]") is refused, because a MEC
//     rule holds commas.
//
// Errors name the file and line. It returns where each value it set came
// from ("--config PATH:LINE", keyed by flag name and value), so that a
// value found wrong later (a --mec rule) is reported with its line.
func Apply(fs *pflag.FlagSet, path string) (map[string]string, error) {
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
	listKey := "" // the key of the block list being read
	for i, line := range strings.Split(string(b), "\n") {
		where := fmt.Sprintf("--config %s:%d", path, i+1)
		line, err := stripComment(line)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		line = strings.TrimSpace(line)
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
			return nil, fmt.Errorf("%s: unknown key %q (keys are the long flag names of ldafwd run)%s", where, key, didYouMeanKey(fs, key))
		case key == "config":
			return nil, fmt.Errorf("%s: a config file cannot name another", where)
		case ok && val == "" && strings.HasSuffix(line, ":") && isListFlag(f):
			listKey = key
			continue
		case !ok && f.Value.Type() != "bool" || ok && val == "":
			return nil, fmt.Errorf("%s: key %q needs a value", where, key)
		case isListFlag(f) && strings.HasPrefix(val, "[") && strings.HasSuffix(val, "]"):
			return nil, fmt.Errorf("%s: %s: a flow list [a, b] is not read (a MEC rule holds commas): one value per line (%s = …, repeated) or a block list (%s: alone, then - … lines)", where, key, key, key)
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

// stripComment cuts a comment off a config line: '#' at its start or
// after a space or tab, outside quotes. A quote left open is an error.
func stripComment(line string) (string, error) {
	var q byte // the open quote, or 0
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case q != 0:
			if c == '\\' && q == '"' {
				i++ // an escaped character, a quote among them
			} else if c == q {
				q = 0
			}
		case c == '"' || c == '\'':
			// A quote opens a quoted value only at a value's start: after
			// "=", ":", a space, or at the line's start.
			if i == 0 || strings.ContainsRune(" \t=:", rune(line[i-1])) {
				q = c
			}
		case c == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return line[:i], nil
		}
	}
	if q != 0 {
		return "", fmt.Errorf("quote %c not closed", q)
	}
	return line, nil
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
