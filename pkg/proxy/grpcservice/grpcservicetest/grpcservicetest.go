// Package grpcservicetest has what tests of gRPC and HTTP service clients
// share: a loopback gRPC server and a cluster of one host.
package grpcservicetest

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
)

// Dialer is a cluster of one host, at its address: it implements
// grpcservice.Cluster and the other clusters services are reached
// through in tests.
type Dialer string

// Connect opens a TCP connection to the host.
func (d Dialer) Connect(ctx context.Context) (net.Conn, error) {
	var nd net.Dialer
	return nd.DialContext(ctx, "tcp", string(d))
}

// Serve starts a gRPC server on a loopback port, with the services
// register adds, stops it when the test ends, and returns its address.
func Serve(t testing.TB, register func(*grpc.Server)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	register(srv)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return ln.Addr().String()
}
