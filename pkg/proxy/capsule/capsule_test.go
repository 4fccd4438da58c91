package capsule

import (
	"bytes"
	"errors"
	"testing"
)

func TestAppendDatagram(t *testing.T) {
	// RFC 9297's DATAGRAM capsule: type 0x00, length (context ID and
	// payload), context ID 0, payload.
	if got := AppendDatagram(nil, []byte("hi")); !bytes.Equal(got, []byte{0x00, 0x03, 0x00, 'h', 'i'}) {
		t.Fatalf("AppendDatagram(hi) = %x", got)
	}
	// Appended after what dst holds.
	if got := AppendDatagram([]byte{0xff}, nil); !bytes.Equal(got, []byte{0xff, 0x00, 0x01, 0x00}) {
		t.Fatalf("AppendDatagram after a byte = %x", got)
	}
}

func TestParse(t *testing.T) {
	stream := AppendDatagram(nil, []byte("one"))
	stream = append(stream, 0x21, 0x02, 'z', 'z')       // another type: skipped
	stream = append(stream, 0x00, 0x03, 0x05, 'q', 'q') // context ID 5: skipped
	stream = AppendDatagram(stream, bytes.Repeat([]byte{'y'}, 200))
	var p Parser
	var all [][]byte
	for i := range stream {
		ds, err := p.Parse(stream[i : i+1])
		if err != nil {
			t.Fatalf("byte %d: %v", i, err)
		}
		all = append(all, ds...)
	}
	if len(all) != 2 || string(all[0]) != "one" || len(all[1]) != 200 {
		t.Fatalf("Parse(byte by byte) = %q", all)
	}
	if p.Buffered() != 0 || p.Failed() {
		t.Fatalf("after whole capsules: %d bytes kept, failed %v", p.Buffered(), p.Failed())
	}
}

func TestParseFailure(t *testing.T) {
	// A DATAGRAM capsule without a context ID fails, and the parser
	// stays failed.
	var p Parser
	if ds, err := p.Parse([]byte{0x00, 0x00}); !errors.Is(err, ErrMalformed) || len(ds) != 0 {
		t.Fatalf("Parse(empty DATAGRAM) = %q, %v", ds, err)
	}
	if ds, err := p.Parse(AppendDatagram(nil, []byte("later"))); err == nil || len(ds) != 0 {
		t.Fatalf("after a failure, Parse = %q, %v", ds, err)
	}
	// What preceded the failure in the same bytes still comes out.
	p = Parser{}
	b := append(AppendDatagram(nil, []byte("ok")), 0x00, 0x00)
	if ds, err := p.Parse(b); err == nil || len(ds) != 1 || string(ds[0]) != "ok" {
		t.Fatalf("Parse(good then bad) = %q, %v", ds, err)
	}
	// A capsule longer than can be buffered fails at once, without
	// waiting for (or keeping) its bytes.
	p = Parser{}
	huge := AppendVarint(AppendVarint(nil, 0), 1<<21)
	if _, err := p.Parse(huge); err == nil || p.Buffered() != 0 {
		t.Fatalf("a 2 MiB capsule: %v, kept %d bytes", err, p.Buffered())
	}
}

func TestVarint(t *testing.T) {
	for _, v := range []uint64{0, 63, 64, 16383, 16384, 1<<30 - 1, 1 << 30, 1<<62 - 1} {
		b := AppendVarint(nil, v)
		if len(b) != VarintLen(v) {
			t.Errorf("%d: %d bytes, want %d", v, len(b), VarintLen(v))
		}
		got, n, ok := ReadVarint(b)
		if !ok || got != v || n != len(b) {
			t.Errorf("%d: read back %d (%d bytes, %v)", v, got, n, ok)
		}
		if _, _, ok := ReadVarint(b[:len(b)-1]); ok && len(b) > 1 {
			t.Errorf("%d: a truncated varint read as whole", v)
		}
	}
}
