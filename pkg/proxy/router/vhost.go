package router

import (
	"fmt"
	"sort"
	"strings"
)

// vhostIndex finds virtual hosts by domain with Envoy's precedence: exact
// names, then suffix wildcards ("*.example.com", longest first), then
// prefix wildcards ("example.*", longest first), then "*". Wildcards never
// match the empty string.
type vhostIndex struct {
	exact    map[string]*VirtualHost
	suffixes []wildcard
	prefixes []wildcard
	any      *VirtualHost
}

// wildcard is a domain wildcard without its '*', lower case.
type wildcard struct {
	part string
	vh   *VirtualHost
}

// vhostBuilder collects domains and refuses duplicates.
type vhostBuilder struct {
	idx  vhostIndex
	seen map[string]string
}

func newVhostBuilder() *vhostBuilder {
	return &vhostBuilder{idx: vhostIndex{exact: map[string]*VirtualHost{}}, seen: map[string]string{}}
}

// add indexes one domain of vh. Domains are compared case-insensitively,
// and a domain may appear once in the whole configuration, as in Envoy.
func (b *vhostBuilder) add(domain string, vh *VirtualHost) error {
	d := asciiLower(domain)
	if other, dup := b.seen[d]; dup {
		return fmt.Errorf("domain %q is also used by virtual host %q (domains must be unique)", domain, other)
	}
	b.seen[d] = vh.Name
	switch {
	case d == "*":
		b.idx.any = vh
	case strings.HasPrefix(d, "*"):
		b.idx.suffixes = append(b.idx.suffixes, wildcard{d[1:], vh})
	case strings.HasSuffix(d, "*"):
		b.idx.prefixes = append(b.idx.prefixes, wildcard{d[:len(d)-1], vh})
	default:
		b.idx.exact[d] = vh
	}
	return nil
}

// build orders the wildcards, longest (most specific) first; ties keep
// configuration order.
func (b *vhostBuilder) build() vhostIndex {
	sort.SliceStable(b.idx.suffixes, func(i, j int) bool { return len(b.idx.suffixes[i].part) > len(b.idx.suffixes[j].part) })
	sort.SliceStable(b.idx.prefixes, func(i, j int) bool { return len(b.idx.prefixes[i].part) > len(b.idx.prefixes[j].part) })
	return b.idx
}

// find picks the virtual host for host, compared in lower case. Hosts up
// to 255 bytes (every valid DNS name) are lower-cased on the stack.
func (x *vhostIndex) find(host string) *VirtualHost {
	var buf [255]byte
	var lower []byte
	if len(host) <= len(buf) {
		lower = buf[:len(host)]
	} else {
		lower = make([]byte, len(host))
	}
	for i := 0; i < len(host); i++ {
		c := host[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower[i] = c
	}
	if vh, ok := x.exact[string(lower)]; ok {
		return vh
	}
	for _, w := range x.suffixes {
		if len(lower) > len(w.part) && string(lower[len(lower)-len(w.part):]) == w.part {
			return w.vh
		}
	}
	for _, w := range x.prefixes {
		if len(lower) > len(w.part) && string(lower[:len(w.part)]) == w.part {
			return w.vh
		}
	}
	return x.any
}

// onlyCatchAll reports whether "*" is the only domain (Envoy then picks
// its virtual host without reading the host).
func (x *vhostIndex) onlyCatchAll() bool {
	return len(x.exact) == 0 && len(x.suffixes) == 0 && len(x.prefixes) == 0
}
