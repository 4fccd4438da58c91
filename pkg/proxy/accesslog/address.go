package accesslog

import "net"

// AddressString renders a connection's address as the entry's address
// fields hold it ("ip:port", or the path of a pipe), "" for none, which
// the address operators print as missing.
func AddressString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}
