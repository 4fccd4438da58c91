package echo

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	echov3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/echo/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
)

func TestEchoAndShutdown(t *testing.T) {
	f, err := Factory{}.Compile(&echov3.Echo{}, netfilter.Context{})
	if err != nil {
		t.Fatal(err)
	}
	e := f.(*Filter)
	client, server := net.Pipe()
	go e.HandleConn(server)
	if _, err := client.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	if _, err := io.ReadFull(client, b); err != nil || string(b) != "ping" {
		t.Fatalf("read %q, %v", b, err)
	}
	// The client stays: Shutdown cuts it once its context ends.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := e.Shutdown(ctx); err == nil {
		t.Error("Shutdown returned nil with a connection still open")
	}
	if _, err := client.Read(b); err == nil {
		t.Error("the connection is still open after Shutdown")
	}
	// A closed filter takes no more connections.
	c2, s2 := net.Pipe()
	e.HandleConn(s2)
	if _, err := c2.Read(b); err == nil {
		t.Error("a connection after Close was served")
	}
}
