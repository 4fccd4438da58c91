package router

import (
	"errors"
	"strconv"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// maxHitsAddend is Envoy's bound on a hits_addend, fixed or formatted.
const maxHitsAddend = 1_000_000_000

// HitsAddend is a compiled RateLimit.HitsAddend: the number of hits a
// descriptor counts at the rate limit service, fixed or rendered from
// the request by a one-operator format (e.g. %BYTES_RECEIVED%).
type HitsAddend struct {
	number uint64
	format *accesslog.Formatter
	// Negative is is_negative_hits: the hits are given back to the
	// budget instead of taken from it (sent to the rate limit service
	// with the descriptor's is_negative_hits; a local bucket is refilled).
	Negative bool
}

// compileHitsAddend compiles a HitsAddend as Envoy does: a number or a
// format with exactly one substitution, not both. Errors name the field
// below hits_addend.
func compileHitsAddend(h *routev3.RateLimit_HitsAddend) (*HitsAddend, error) {
	switch {
	case h.GetFormat() != "" && h.GetNumber() != nil, h.GetFormat() == "" && h.GetNumber() == nil:
		return nil, errors.New("hits_addend: must contain either a format or a number")
	case h.GetNumber() != nil:
		if n := h.GetNumber().GetValue(); n > maxHitsAddend {
			return nil, errors.New("hits_addend.number: must be at most 1000000000")
		}
		return &HitsAddend{number: h.GetNumber().GetValue(), Negative: h.GetIsNegativeHits()}, nil
	}
	f, err := accesslog.Text(h.GetFormat(), true)
	if err != nil {
		return nil, errors.New("hits_addend.format: " + err.Error())
	}
	if f.Parts() != 1 {
		return nil, errors.New("hits_addend.format: must contain exactly one substitution")
	}
	return &HitsAddend{format: f, Negative: h.GetIsNegativeHits()}, nil
}

// Value is the descriptor's hits addend for the request e describes. As
// in Envoy, a formatted value must be a number from 0 to 1000000000
// (fractions are cut off); ok is false otherwise, and the caller then
// drops the descriptor.
func (h *HitsAddend) Value(e *accesslog.Entry) (n uint64, ok bool) {
	if h.format == nil {
		return h.number, true
	}
	var buf [32]byte
	v, err := strconv.ParseFloat(string(h.format.AppendValue(buf[:0], e)), 64)
	if err != nil || v < 0 || v > maxHitsAddend {
		return 0, false
	}
	return uint64(v), true
}
