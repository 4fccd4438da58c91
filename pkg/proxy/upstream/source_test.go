package upstream

import (
	"context"
	"net"
	"net/netip"
	"testing"
)

// sourced is a downstream connection a listener filter gave a source.
type sourced struct {
	net.Conn
	src Source
}

func (c sourced) UpstreamSource() (Source, bool) { return c.src, true }

// tlsLike wraps a connection as a TLS connection does.
type tlsLike struct {
	net.Conn
	inner net.Conn
}

func (w tlsLike) NetConn() net.Conn { return w.inner }

func TestSourceOf(t *testing.T) {
	src := Source{Addr: netip.MustParseAddr("192.0.2.1"), Mark: 3}
	if got, ok := SourceOf(tlsLike{inner: sourced{src: src}}); !ok || got != src {
		t.Errorf("through a wrapper: %+v %v, want %+v", got, ok, src)
	}
	if _, ok := SourceOf(tlsLike{inner: tlsLike{}}); ok {
		t.Error("a connection without a source has one")
	}
}

func TestSourceContext(t *testing.T) {
	ctx := context.Background()
	if WithSource(ctx, Source{}) != ctx {
		t.Error("an invalid source made a new context")
	}
	if got := SourceFrom(ctx); got != (Source{}) {
		t.Errorf("SourceFrom(empty) = %+v", got)
	}
	src := Source{Addr: netip.MustParseAddr("2001:db8::1")}
	if got := SourceFrom(WithSource(ctx, src)); got != src {
		t.Errorf("SourceFrom = %+v, want %+v", got, src)
	}
}
