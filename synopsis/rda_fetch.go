package synopsis

import (
	"encoding/binary"
	"fmt"
)

// The cells request: a receiver whose copy of the sender's RDA, folded to
// fit the control budget, holds too few cells to decode the interval's set
// difference asks the sender for its RDA folded to more cells (the sender
// records at the configured size and keeps each interval's cells while it
// answers timestamp requests). The answer is the RDA encoding itself
// (AppendBinary of the sender's RDA folded to the cells asked), so a
// receiver decodes it exactly as the copy shipped at the interval's end.
//
//	'F' 1 uvarint(cells per bank)
const (
	cellsRequestMagic   = 'F'
	cellsRequestVersion = 1
)

// AppendCellsRequest appends a request for the sender's RDA folded to
// cells per bank.
func AppendCellsRequest(dst []byte, cells int) []byte {
	dst = append(dst, cellsRequestMagic, cellsRequestVersion)
	return binary.AppendUvarint(dst, uint64(cells))
}

// IsCellsRequest says whether b is a cells request (by its magic; it may
// still not parse), as opposed to a timestamp request.
func IsCellsRequest(b []byte) bool { return len(b) > 0 && b[0] == cellsRequestMagic }

// ParseCellsRequest returns the cells per bank a cells request asks for
// (errors wrap ErrBadEncoding): at least 2, at most RDAMaxCells, no
// trailing bytes.
func ParseCellsRequest(b []byte) (int, error) {
	if len(b) < 2 || b[0] != cellsRequestMagic || b[1] != cellsRequestVersion {
		return 0, fmt.Errorf("%w: cells request: bad magic or version", ErrBadEncoding)
	}
	n, k := minimalUvarint(b[2:])
	if k <= 0 || 2+k != len(b) || n < 2 || n > RDAMaxCells {
		return 0, fmt.Errorf("%w: cells request: bad cell count", ErrBadEncoding)
	}
	return int(n), nil
}

// CopyCells returns a copy of r's shape and cells (into dst's memory when
// dst is not nil) whose timestamp cache is cache (nil: none): what a
// sender keeps of an interval to answer cells requests, after its cache
// has been taken off for timestamp requests. The copy's encoding states
// cache's sampling level, as r's did with its own cache.
func (r *RDA) CopyCells(dst *RDA, cache *TSCache) *RDA {
	if dst == nil {
		dst = new(RDA)
	}
	cells := dst.cells
	*dst = *r
	dst.cells = append(cells[:0], r.cells...)
	dst.cache = cache
	return dst
}

// HasRemoteCache says whether r, decoded from the wire, comes from a
// sender that keeps a timestamp cache for the interval (and so answers
// timestamp and cells requests).
func (r *RDA) HasRemoteCache() bool { return r.hasRemote }
