package flagfile

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// Suggest names the flag of fs nearest to name, for a "did you mean"
// after a typo: the one with the fewest single-character edits (insert,
// delete, replace, or swap of neighbours: the usual typos), if that is at
// most a third of the name's length (at least 1, at most 3), so that a
// word that is no flag at all suggests nothing. Hidden and deprecated
// flags are never suggested. "" when none is near enough.
func Suggest(fs *pflag.FlagSet, name string) string {
	name = strings.TrimLeft(name, "-")
	limit := min(max(len(name)/3, 1), 3)
	best, bestD := "", limit+1
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Deprecated != "" {
			return
		}
		if d := editDistance(name, f.Name); d < bestD || d == bestD && f.Name < best {
			best, bestD = f.Name, d
		}
	})
	if bestD > limit {
		return ""
	}
	return best
}

// DidYouMean is Suggest as the end of an error message: ` (did you mean
// "--interval"?)`, or "" when nothing is near.
func DidYouMean(fs *pflag.FlagSet, name string) string {
	if s := Suggest(fs, name); s != "" {
		return fmt.Sprintf(" (did you mean %q?)", "--"+s)
	}
	return ""
}

// didYouMeanKey is DidYouMean for a config file's key, which is written
// without dashes: ` (did you mean "interval"?)`.
func didYouMeanKey(fs *pflag.FlagSet, key string) string {
	if s := Suggest(fs, key); s != "" {
		return fmt.Sprintf(" (did you mean %q?)", s)
	}
	return ""
}

// ForError is DidYouMean for pflag's error about an unknown long flag
// ("unknown flag: --x"); "" for any other error, or when no flag is near.
func ForError(fs *pflag.FlagSet, err error) string {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return ""
	}
	return DidYouMean(fs, name)
}

// editDistance is the optimal-string-alignment distance of a and b
// (Damerau–Levenshtein without repeated edits of one substring): the
// edits of a mistyped flag name.
func editDistance(a, b string) int {
	// Three rows: the one before the previous is needed for swaps.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
