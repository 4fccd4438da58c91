package httpconn

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// piecesSource gives its pieces, then io.EOF.
type piecesSource struct{ pieces [][]byte }

func (p *piecesSource) Next() ([]byte, error) {
	if len(p.pieces) == 0 {
		return nil, io.EOF
	}
	b := p.pieces[0]
	p.pieces = p.pieces[1:]
	return b, nil
}

// trailerDown is a downstream whose request trailers are t (its other
// methods are not called).
type trailerDown struct {
	downstream
	t http.Header
}

func (d trailerDown) requestTrailers() http.Header { return d.t }

// mapDecoder applies fn to each piece.
type mapDecoder struct{ fn func([]byte) []byte }

func (m mapDecoder) DecodeData(p []byte) ([]byte, error) { return m.fn(p), nil }
func (m mapDecoder) DecodeEnd() ([]byte, error)          { return nil, nil }

// regroup is a SourceDecoder that reads its whole source, then gives it
// back in pieces of two bytes, and adds a trailer.
type regroup struct {
	sawTrailers http.Header
}

func (r *regroup) DecodeData(p []byte) ([]byte, error) { return nil, errors.New("not called") }
func (r *regroup) DecodeEnd() ([]byte, error)          { return nil, errors.New("not called") }
func (r *regroup) DecodeTrailers(t http.Header) http.Header {
	t.Set("x-regroup", "1")
	return t
}

func (r *regroup) DecodeFrom(next func() ([]byte, error), trailers func() http.Header) func() ([]byte, error) {
	var all []byte
	read := false
	return func() ([]byte, error) {
		for !read {
			p, err := next()
			all = append(all, p...)
			if errors.Is(err, io.EOF) {
				read, r.sawTrailers = true, trailers()
			} else if err != nil {
				return nil, err
			}
		}
		if len(all) <= 2 {
			p := all
			all = nil
			return p, io.EOF
		}
		p := all[:2]
		all = all[2:]
		return p, nil
	}
}

var _ httpfilter.SourceDecoder = (*regroup)(nil)

func TestDecodingChainSplitsAtASourceDecoder(t *testing.T) {
	s := &stream{down: trailerDown{t: http.Header{"X-Client": {"v"}}}}
	rg := &regroup{}
	decs := []httpfilter.DataDecoder{
		mapDecoder{fn: bytes.ToUpper},
		rg,
		mapDecoder{fn: func(p []byte) []byte { return append(append([]byte{}, p...), '.') }},
	}
	b := s.decodingChain(&piecesSource{pieces: [][]byte{[]byte("abc"), []byte("de")}}, decs)
	var out []byte
	for {
		p, err := b.Next()
		out = append(out, p...)
		s.bytesRecv += uint64(len(p)) // as the router counts what it forwards
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// The decoder before the source decoder ran on the client's pieces,
	// the one after on each of its pieces.
	if string(out) != "AB.CD.E." {
		t.Errorf("body %q, want %q", out, "AB.CD.E.")
	}
	if rg.sawTrailers.Get("X-Client") != "v" {
		t.Errorf("source decoder's trailers %v", rg.sawTrailers)
	}
	if b.trailer.Get("X-Regroup") != "1" || b.trailer.Get("X-Client") != "v" {
		t.Errorf("trailers %v: the source decoder's TrailerDecoder runs with the others", b.trailer)
	}
	if s.bytesRecv != 5 {
		t.Errorf("bytesRecv %d, want the client's 5", s.bytesRecv)
	}
}
