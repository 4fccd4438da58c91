package headermutation

import (
	"net/http"
	"strings"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// trailerEdits runs request_trailers_mutations or
// response_trailers_mutations when the message's trailers arrive. It
// passes the body through untouched, so the message keeps its length, and
// edits only trailers that exist: as in Envoy, whose decodeTrailers and
// encodeTrailers run only for a message that has some, a message without
// trailers gets none.
type trailerEdits struct {
	lists [][]edit
	// entry is what % operators read: a copy of the stream's entry taken
	// with the head, since trailers arrive on the body's goroutine.
	entry *accesslog.Entry
}

var (
	_ httpfilter.TrailerDecoder      = (*trailerEdits)(nil)
	_ httpfilter.RequestLengthKeeper = (*trailerEdits)(nil)
	_ httpfilter.LengthKeeper        = (*trailerEdits)(nil)
)

// DecodeData implements httpfilter.DataDecoder: the piece goes on as it
// is.
func (t *trailerEdits) DecodeData(p []byte) ([]byte, error) { return p, nil }

// DecodeEnd implements httpfilter.DataDecoder.
func (*trailerEdits) DecodeEnd() ([]byte, error) { return nil, nil }

// KeepsRequestLength implements httpfilter.RequestLengthKeeper.
func (*trailerEdits) KeepsRequestLength() bool { return true }

// DecodeTrailers implements httpfilter.TrailerDecoder.
func (t *trailerEdits) DecodeTrailers(h http.Header) http.Header { return t.edit(h) }

// EncodeData implements httpfilter.DataEncoder.
func (t *trailerEdits) EncodeData(p []byte) ([]byte, error) { return p, nil }

// EncodeEnd implements httpfilter.DataEncoder: the trailers, edited.
func (t *trailerEdits) EncodeEnd(h http.Header) ([]byte, http.Header, error) {
	return nil, t.edit(h), nil
}

// KeepsLength implements httpfilter.LengthKeeper.
func (*trailerEdits) KeepsLength() bool { return true }

// edit applies the lists in order to h, when there are trailers.
func (t *trailerEdits) edit(h http.Header) http.Header {
	if len(h) == 0 {
		return h
	}
	m := trailerMap{h: h}
	for _, list := range t.lists {
		for _, ed := range list {
			if ed.match != nil {
				removeMatching(m, ed.match)
				continue
			}
			ed.ops.Apply(m, t.entry)
		}
	}
	return h
}

// trailerMap is an http.Header seen as the lower-case header map the
// mutations edit (router.HeaderEditor).
type trailerMap struct{ h http.Header }

// Get returns the field's values joined with commas, as a header map
// does.
func (m trailerMap) Get(name string) (string, bool) {
	v := m.h.Values(name)
	if len(v) == 0 {
		return "", false
	}
	return strings.Join(v, ","), true
}

// Set replaces every value of the field.
func (m trailerMap) Set(name, value string) { m.h.Set(name, value) }

// Add appends one value of the field.
func (m trailerMap) Add(name, value string) { m.h.Add(name, value) }

// Del removes the field.
func (m trailerMap) Del(name string) { m.h.Del(name) }

// Range calls fn with each field's lower-case name and values.
func (m trailerMap) Range(fn func(name, value string) bool) {
	for k, vs := range m.h {
		for _, v := range vs {
			if !fn(strings.ToLower(k), v) {
				return
			}
		}
	}
}
