package afxdp

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrBadSpec is wrapped by every port spec parse error.
var ErrBadSpec = errors.New("afxdp: bad port spec")

// ParseSpec parses "afxdp:<ifname>[@queue]" (the prefix is optional):
// "afxdp:eth1", "afxdp:veth1@3". The queue defaults to 0.
func ParseSpec(spec string) (ifname string, queue int, err error) {
	s := strings.TrimPrefix(spec, "afxdp:")
	name, q, hasQ := strings.Cut(s, "@")
	if name == "" || len(name) > 15 || name == "." || name == ".." {
		return "", 0, fmt.Errorf("%w %q: want afxdp:<ifname>[@queue] with a 1..15 character interface name", ErrBadSpec, spec)
	}
	for _, c := range name {
		if c <= ' ' || c == '/' || c == ':' || c == '@' || c > '~' {
			return "", 0, fmt.Errorf("%w %q: interface name %q has character %q", ErrBadSpec, spec, name, c)
		}
	}
	if hasQ {
		n, err := strconv.ParseUint(q, 10, 16)
		if err != nil {
			return "", 0, fmt.Errorf("%w %q: queue %q is not a number 0..65535", ErrBadSpec, spec, q)
		}
		queue = int(n)
	}
	return name, queue, nil
}
