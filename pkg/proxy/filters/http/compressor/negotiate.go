package compressor

import (
	"strconv"
	"strings"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// headers is the header map the filter edits.
type headers = router.HeaderEditor

// The Accept-Encoding values with a meaning of their own.
const (
	identity = "identity"
	wildcard = "*"
)

// headerStat is which Accept-Encoding stat a decision counts.
type headerStat uint8

const (
	statNotValid headerStat = iota
	statIdentity
	statWildcard
	statCompressor
)

// decision is the encoding the compressor filters of a request chose.
type decision struct {
	encoding string
	stat     headerStat
}

// acceptEncodingAllowed reports whether this filter compresses the
// response as far as Accept-Encoding goes, counting the header stats.
// The first filter to ask decides for the whole chain (Envoy's
// chooseEncoding); the others reuse its decision.
func (f *filter) acceptEncodingAllowed(maybe bool, h headers) bool {
	if !maybe {
		return false
	}
	c := f.cfg
	if !f.hasAccept {
		c.noAcceptHeader.Inc()
		return false
	}
	if f.chain == nil {
		// The filter saw no request head (a local reply before it):
		// it decides alone.
		f.chain = &chainState{entries: []chainEntry{{cfg: c, encoding: f.encoding()}}}
	}
	if !f.chain.decided {
		f.chain.decision = f.chooseEncoding(h)
		f.chain.decided = true
	}
	d := f.chain.decision
	use := strings.EqualFold(f.encoding(), d.encoding)
	switch d.stat {
	case statCompressor:
		if use {
			c.headerUsed.Inc()
		} else {
			c.headerOvershadowed.Inc()
		}
	case statIdentity:
		c.headerIdentity.Inc()
	case statWildcard:
		c.headerWildcard.Inc()
	default:
		c.headerNotValid.Inc()
	}
	return use
}

// allowed is a compressor of the chain that may serve the response: its
// registration order and choose_first.
type allowed struct {
	order       int
	chooseFirst bool
}

// chooseEncoding picks the encoding of the response from the request's
// Accept-Encoding and the chain's compressors, as Envoy does: the
// compressors whose content types do not take the response are left
// out, q=0 removes an encoding, the highest q wins (choose_first breaks
// ties), identity means none, and * the first compressor registered.
func (f *filter) chooseEncoding(h headers) decision {
	ct, hasCT := h.Get("content-type")
	mt := mediaType(ct)
	comps := map[string]allowed{}
	for _, e := range f.chain.entries {
		if hasCT && mt != "" && !e.cfg.response.allows(ct) {
			continue
		}
		if _, ok := comps[e.encoding]; !ok {
			comps[e.encoding] = allowed{order: len(comps), chooseFirst: e.cfg.chooseFirst}
		}
	}
	type pair struct {
		enc string
		q   float64
	}
	var pairs []pair
	for _, tok := range strings.Split(f.acceptEncoding, ",") {
		if strings.TrimSpace(tok) == "" {
			continue
		}
		name, params, hasParams := strings.Cut(tok, ";")
		p := pair{enc: strings.TrimSpace(name), q: 1}
		if hasParams {
			if k, v, ok := strings.Cut(params, "="); ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				q, err := strconv.ParseFloat(strings.TrimSpace(v), 32)
				if err != nil {
					// An unparseable q-value skips the token.
					continue
				}
				p.q = q
			}
		}
		pairs = append(pairs, p)
		if p.q == 0 {
			delete(comps, p.enc)
		}
	}
	if len(pairs) == 0 || len(comps) == 0 {
		return decision{encoding: identity, stat: statNotValid}
	}
	choice := pair{enc: identity}
	for _, p := range pairs {
		a, known := comps[p.enc]
		if !known && p.enc != identity && p.enc != wildcard {
			continue
		}
		if p.q > choice.q || (p.q == choice.q && a.chooseFirst) {
			choice = p
		}
	}
	switch {
	case choice.q == 0:
		return decision{encoding: identity, stat: statNotValid}
	case choice.enc == identity:
		return decision{encoding: identity, stat: statIdentity}
	case choice.enc == wildcard:
		first, order := "", -1
		for enc, a := range comps {
			if order < 0 || a.order < order {
				first, order = enc, a.order
			}
		}
		return decision{encoding: first, stat: statWildcard}
	}
	return decision{encoding: choice.enc, stat: statCompressor}
}

// has reports whether h has the field name.
func has(h headers, name string) bool {
	_, ok := h.Get(name)
	return ok
}
