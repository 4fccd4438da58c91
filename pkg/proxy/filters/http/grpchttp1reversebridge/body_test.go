package grpchttp1reversebridge

import (
	"bytes"
	"errors"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

func TestRequestStripperAcrossPieces(t *testing.T) {
	r := &requestStripper{}
	var out []byte
	for _, p := range [][]byte{{0, 0}, {0, 0, 3, 'a'}, []byte("bc")} {
		b, err := r.DecodeData(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	if _, err := r.DecodeEnd(); err != nil || string(out) != "abc" {
		t.Fatalf("got %q, %v", out, err)
	}
	short := &requestStripper{}
	_, _ = short.DecodeData([]byte{0, 0})
	_, err := short.DecodeEnd()
	var be *httpfilter.BodyError
	if !errors.As(err, &be) || be.Details != detailsTooSmall || !short.tooSmall.Load() {
		t.Fatalf("a body under a frame header: %v", err)
	}
}

func TestResponseFramer(t *testing.T) {
	held := &responseFramer{withhold: true, grpcStatus: "0", declared: -1}
	_, _ = held.EncodeData([]byte("ab"))
	_, _ = held.EncodeData([]byte("c"))
	body, tr, err := held.EncodeEnd(nil)
	if err != nil || !bytes.Equal(body, []byte{0, 0, 0, 0, 3, 'a', 'b', 'c'}) || tr.Get("grpc-status") != "0" {
		t.Fatalf("held: %q %v %v", body, tr, err)
	}
	sized := &responseFramer{withhold: true, grpcStatus: "0", declared: 3}
	first, _ := sized.EncodeData([]byte("ab"))
	if !bytes.Equal(first, []byte{0, 0, 0, 0, 3, 'a', 'b'}) {
		t.Fatalf("first piece %q", first)
	}
	if _, _, err := sized.EncodeEnd(nil); err == nil {
		t.Fatal("a body shorter than declared must fail")
	}
	plain := &responseFramer{grpcStatus: "14", declared: -1}
	if p, _ := plain.EncodeData([]byte("x")); string(p) != "x" {
		t.Fatal("without withholding the body passes")
	}
	if _, tr, _ := plain.EncodeEnd(nil); tr.Get("grpc-status") != "14" {
		t.Fatalf("trailers %v", tr)
	}
}
