package userspace

import "strings"

// Network is the network name of an internal address.
const Network = "envoy_internal"

// Addr is an internal address: an internal listener's name and an
// endpoint id, shown as Envoy shows it: "envoy://listener/endpoint_id".
type Addr struct {
	// Listener is the server_listener_name.
	Listener string
	// EndpointID is the endpoint_id, "" for none.
	EndpointID string
}

// ClientListener names the address of the client end of every internal
// connection, which has no address of its own: Envoy's
// "internal_client_address".
const ClientListener = "internal_client_address"

// Network returns "envoy_internal".
func (Addr) Network() string { return Network }

// String returns "envoy://listener/endpoint_id".
func (a Addr) String() string { return Prefix + a.Listener + "/" + a.EndpointID }

// Prefix starts the string form of every internal address.
const Prefix = "envoy://"

// ParseAddr reads an internal address in its string form; false for a
// string that is not one. The listener name ends at the first '/'.
func ParseAddr(s string) (Addr, bool) {
	rest, ok := strings.CutPrefix(s, Prefix)
	if !ok {
		return Addr{}, false
	}
	l, id, _ := strings.Cut(rest, "/")
	return Addr{Listener: l, EndpointID: id}, l != ""
}
