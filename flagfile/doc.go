// Package flagfile reads `ldafwd run --config FILE` into a pflag.FlagSet:
// ldafwd's own line-based "key = value" format (not YAML, though a simple
// YAML mapping of scalars and block lists reads the same; docs/run.md).
// The command line wins over the file, and every value the file set is
// remembered with its file and line, so that a value found wrong later
// (a --mec rule) is reported where it was written.
package flagfile
