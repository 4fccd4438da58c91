package grpcservice

import (
	"context"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// envoyHeaders are the headers Envoy's gRPC client sends on every call of
// an envoy_grpc service unless skip_envoy_headers: its async client's
// send_internal (x-envoy-internal: true) and send_xff (the server's own
// address appended to x-forwarded-for).
type envoyHeaders string

// pairs is the metadata of the headers.
func (h envoyHeaders) pairs() []string {
	if h == "" {
		return []string{"x-envoy-internal", "true"}
	}
	return []string{"x-envoy-internal", "true", "x-forwarded-for", string(h)}
}

// unary adds the headers to a call.
func (h envoyHeaders) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	return invoker(metadata.AppendToOutgoingContext(ctx, h.pairs()...), method, req, reply, cc, opts...)
}

// stream adds the headers to a stream.
func (h envoyHeaders) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return streamer(metadata.AppendToOutgoingContext(ctx, h.pairs()...), desc, cc, method, opts...)
}

// LocalAddress is the server's own IP address as Envoy's local_info finds
// it (Network::Utility::getLocalAddress for IPv4): the first IPv4 address
// of an interface that is not a loopback one, else the loopback address.
func LocalAddress() string {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			n, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			ip := n.IP.To4()
			if ip == nil || ip.IsLoopback() {
				continue
			}
			return ip.String()
		}
	}
	return "127.0.0.1"
}
