package cluster

import (
	"encoding/hex"
	"net"
	"net/netip"
	"strings"
)

// The HTTP/2 transports know a host only by the request URL's host, which
// they turn into a pool key and the address they dial. A host whose
// address is not ip:port (a pipe's path, an internal address
// "envoy://listener/id") would come out mangled, bracketed, or under a
// pool key that differs from the one the connection was stored under,
// which makes the transport dial again and again. Such an address goes
// to the transport as a plain host name that encodes it, and dialHTTP2
// decodes it back.

// transportHostSuffix ends the encoded host names (.invalid never
// resolves: RFC 2606).
const transportHostSuffix = ".host.invalid"

// transportHost returns the request URL host for a host's address: the
// address itself for ip:port, else its encoded host name and port 80.
func transportHost(address string) string {
	if _, err := netip.ParseAddrPort(address); err == nil {
		return address
	}
	enc := hex.EncodeToString([]byte(address))
	var labels []string
	for len(enc) > 60 {
		// DNS labels hold at most 63 characters.
		labels, enc = append(labels, enc[:60]), enc[60:]
	}
	labels = append(labels, enc)
	return "x" + strings.Join(labels, ".x") + transportHostSuffix + ":80"
}

// hostAddress is transportHost's inverse for the address the transport
// dials; an address it did not encode comes back unchanged.
func hostAddress(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	enc, ok := strings.CutSuffix(host, transportHostSuffix)
	if !ok {
		return addr
	}
	enc = strings.ReplaceAll(strings.TrimPrefix(enc, "x"), ".x", "")
	b, err := hex.DecodeString(enc)
	if err != nil {
		return addr
	}
	return string(b)
}
