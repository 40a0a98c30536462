package report

import (
	"fmt"
	"io"
	"os"
)

// LineFile is a report file (ldafwd's --report), opened for append. A JSON line that cannot be written whole
// (a full disk, a quota) is cut off again, so the file never holds a
// corrupt line: readers see complete lines, and the error is returned for
// the caller to log and count.
type LineFile struct {
	f       truncFile
	size    int64 // bytes of complete lines
	regular bool  // size is meaningful (not a pipe or a device)
}

// truncFile is what lineFile needs of an *os.File.
type truncFile interface {
	io.WriteCloser
	Truncate(size int64) error
}

// OpenLineFile opens (creating it) the report file at path for append.
// A partial last line an earlier, killed writer left is ended first
// (endLine), so every new line reads.
func OpenLineFile(path string) (*LineFile, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	l := &LineFile{f: f, size: st.Size(), regular: st.Mode().IsRegular()}
	if l.regular {
		n, err := endLine(path, f)
		l.size += int64(n)
		if err != nil {
			f.Close()
			return nil, err
		}
	}
	return l, nil
}

func (l *LineFile) Write(b []byte) (int, error) {
	n, err := l.f.Write(b)
	if err == nil && n == len(b) {
		l.size += int64(n)
		return n, nil
	}
	if err == nil {
		err = io.ErrShortWrite
	}
	if n > 0 && l.regular {
		if terr := l.f.Truncate(l.size); terr != nil {
			return n, fmt.Errorf("%w (and removing the partial line: %v)", err, terr)
		}
	}
	return n, err
}

func (l *LineFile) Close() error { return l.f.Close() }

// endLine makes a file that does not end with a newline (a partial line
// a killed writer left) end with one, so the next line is not glued to
// it: the partial line stays one damaged line and every new line reads.
func endLine(path string, w io.Writer) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, nil // nothing to read back: the caller's open will tell
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() == 0 {
		return 0, nil
	}
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, st.Size()-1); err != nil || b[0] == '\n' {
		return 0, nil
	}
	n, err := w.Write([]byte{'\n'})
	if err != nil {
		return n, fmt.Errorf("ending the partial last line: %w", err)
	}
	return n, nil
}
