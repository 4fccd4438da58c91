package server

import (
	"context"
	"fmt"
	"net"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	ilv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/bootstrap/internal_listener/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/userspace"
)

// internalListeners is the bootstrap's internal_listener extension: with
// it, listeners may be internal listeners, and upstream connections to an
// envoy_internal_address reach them through in-memory connections.
type internalListeners struct {
	// enabled is set when bootstrap_extensions has the extension.
	enabled bool
	// bufferSize is each direction's buffer of an internal connection:
	// buffer_size_kb KiB, 1024 KiB when unset.
	bufferSize int
}

// internalListenersOf reads the internal_listener extension of the
// bootstrap's bootstrap_extensions (the support check refused any other
// extension there, and validated this one).
func internalListenersOf(b *bootstrapv3.Bootstrap) internalListeners {
	for _, ext := range b.GetBootstrapExtensions() {
		var cfg ilv3.InternalListener
		if ext.GetTypedConfig().UnmarshalTo(&cfg) != nil {
			continue
		}
		il := internalListeners{enabled: true, bufferSize: userspace.DefaultBufferSize}
		if kb := cfg.GetBufferSizeKb(); kb != nil {
			il.bufferSize = int(kb.GetValue()) * 1024
		}
		return il
	}
	return internalListeners{}
}

// dialInternal opens an in-memory connection to the active internal
// listener addr names, as Envoy's internal client connection factory
// does: the listener accepts the server end, the caller gets the client
// end. The metadata the internal_upstream transport socket put in ctx
// goes with the server end. Without such a listener the connection fails, which the cluster
// counts as a connect failure.
func (s *Server) dialInternal(ctx context.Context, addr userspace.Addr) (net.Conn, error) {
	if !s.internal.enabled {
		return nil, fmt.Errorf("no internal listener %q: the bootstrap has no internal_listener extension", addr.Listener)
	}
	l := s.internalListener(addr.Listener)
	if l == nil {
		return nil, fmt.Errorf("no internal listener %q", addr.Listener)
	}
	client, server := userspace.Pipe(s.internal.bufferSize, addr)
	server.SetPassthroughMetadata(userspace.PassthroughFrom(ctx))
	if err := l.AcceptInternal(server); err != nil {
		_ = server.Close()
		_ = client.Close()
		return nil, fmt.Errorf("internal listener %q: %w", addr.Listener, err)
	}
	return client, nil
}

// internalListener finds the active internal listener called name, nil
// for none.
func (s *Server) internalListener(name string) *builtListener {
	s.lset.mu.Lock()
	defer s.lset.mu.Unlock()
	for _, bl := range s.lset.active {
		if bl.Internal() && bl.Name() == name {
			return bl
		}
	}
	return nil
}
