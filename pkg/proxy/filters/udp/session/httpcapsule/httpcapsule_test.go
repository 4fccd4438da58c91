package httpcapsule

import (
	"bytes"
	"testing"

	capsulev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/udp/udp_proxy/session/http_capsule/v3"
	"google.golang.org/protobuf/types/known/emptypb"
)

func newFilter(t *testing.T) *filter {
	t.Helper()
	c, err := Factory{}.CompileSession(&capsulev3.FilterConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return c.NewSessionFilter().(*filter)
}

func TestEncode(t *testing.T) {
	f := newFilter(t)
	// RFC 9297's DATAGRAM capsule: type 0x00, length (context ID and
	// payload), context ID 0, payload.
	out, ok := f.OnData([]byte("hello"))
	if !ok || !bytes.Equal(out, []byte{0x00, 0x06, 0x00, 'h', 'e', 'l', 'l', 'o'}) {
		t.Fatalf("OnData(hello) = %x, %v", out, ok)
	}
	// A payload of 100 bytes needs a two-byte length (101 = 0x4065).
	big := bytes.Repeat([]byte{'x'}, 100)
	out, _ = f.OnData(big)
	if !bytes.Equal(out[:4], []byte{0x00, 0x40, 0x65, 0x00}) || !bytes.Equal(out[4:], big) {
		t.Fatalf("OnData(100 bytes) starts %x", out[:4])
	}
	// An empty datagram is still a capsule, holding the context ID only.
	out, _ = f.OnData(nil)
	if !bytes.Equal(out, []byte{0x00, 0x01, 0x00}) {
		t.Fatalf("OnData(empty) = %x", out)
	}
}

func TestDecode(t *testing.T) {
	enc := newFilter(t)
	a, _ := enc.OnData([]byte("first"))
	b, _ := enc.OnData(bytes.Repeat([]byte{'y'}, 300))
	// Another capsule type and another context ID are dropped.
	other := []byte{0x21, 0x02, 'z', 'z'}
	ctx5 := []byte{0x00, 0x03, 0x05, 'q', 'q'}
	stream := append(append(append(append([]byte{}, a...), other...), ctx5...), b...)

	// All at once: the two datagrams, in order.
	got := newFilter(t).OnWrite(stream)
	if len(got) != 2 || string(got[0]) != "first" || !bytes.Equal(got[1], bytes.Repeat([]byte{'y'}, 300)) {
		t.Fatalf("OnWrite(all) = %q", got)
	}
	// Byte by byte: the same datagrams, each when its capsule completes.
	f := newFilter(t)
	var all [][]byte
	for i := range stream {
		ds := f.OnWrite(stream[i : i+1])
		if len(ds) > 0 && i != len(a)-1 && i != len(stream)-1 {
			t.Fatalf("a datagram came out at byte %d, before its capsule was whole", i)
		}
		all = append(all, ds...)
	}
	if len(all) != 2 || string(all[0]) != "first" {
		t.Fatalf("OnWrite(byte by byte) = %q", all)
	}
	if n := f.p.Buffered(); n != 0 {
		t.Errorf("%d bytes kept after whole capsules", n)
	}
}

func TestDecodeFailure(t *testing.T) {
	// A DATAGRAM capsule with no context ID fails the parser, which then
	// passes nothing more on.
	f := newFilter(t)
	if got := f.OnWrite([]byte{0x00, 0x00}); len(got) != 0 {
		t.Fatalf("OnWrite(empty DATAGRAM capsule) = %q", got)
	}
	good, _ := newFilter(t).OnData([]byte("later"))
	if got := f.OnWrite(good); len(got) != 0 || !f.p.Failed() {
		t.Fatalf("after a parse failure, OnWrite = %q, want nothing", got)
	}
}

func TestCompileRefusesOtherTypes(t *testing.T) {
	if _, err := (Factory{}).CompileSession(&emptypb.Empty{}); err == nil {
		t.Error("an Empty compiled as the capsule filter's configuration")
	}
}
