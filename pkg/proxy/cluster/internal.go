package cluster

import (
	"context"
	"errors"
	"net"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/userspace"
)

// InternalDialFunc opens an in-memory connection to the internal listener
// an envoy_internal_address endpoint names (the server's, see
// userspace.Pipe).
type InternalDialFunc func(ctx context.Context, addr userspace.Addr) (net.Conn, error)

// errNoInternal fails connections to internal addresses when the server
// gave no InternalDialFunc.
var errNoInternal = errors.New("internal addresses are not served here")

// withInternal returns dial extended to the hosts whose address is an
// internal address ("envoy://listener/endpoint_id"), which internal
// connects; every other address goes to dial.
func withInternal(dial DialFunc, internal InternalDialFunc) DialFunc {
	return func(ctx context.Context, address string) (net.Conn, error) {
		if !strings.HasPrefix(address, userspace.Prefix) {
			return dial(ctx, address)
		}
		a, ok := userspace.ParseAddr(address)
		if !ok || internal == nil {
			return nil, errNoInternal
		}
		return internal(ctx, a)
	}
}

// internalAddress checks an endpoint's envoy_internal_address: the host's
// address is its string form, "envoy://server_listener_name/endpoint_id",
// as Envoy shows it.
func internalAddress(a *corev3.EnvoyInternalAddress) (string, error) {
	name := a.GetServerListenerName()
	if name == "" {
		return "", configErrorf(join("envoy_internal_address", "server_listener_name"), "required: the name of an internal listener")
	}
	if strings.Contains(name, "/") {
		return "", configErrorf(join("envoy_internal_address", "server_listener_name"), "%q: an internal listener's name here cannot contain '/'", name)
	}
	return userspace.Addr{Listener: name, EndpointID: a.GetEndpointId()}.String(), nil
}
