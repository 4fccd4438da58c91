package headertometadata

import (
	"encoding/base64"
	"strconv"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	h2mv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/header_to_metadata/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// filterConfig is the compiled filter: its name (the key of its per-route
// configurations) and its own rules. It keeps no state per request, so it
// is its own filter.
type filterConfig struct {
	name string
	own  *rules
}

var (
	_ httpfilter.Decoder = (*filterConfig)(nil)
	_ httpfilter.Encoder = (*filterConfig)(nil)
)

// NewFilter implements httpfilter.Config.
func (c *filterConfig) NewFilter() httpfilter.Filter { return c }

// rulesOf returns the route's configuration, else the filter's, as
// Envoy's getConfig does.
func (c *filterConfig) rulesOf(s httpfilter.Stream) *rules {
	if rs, ok := s.RouteConfig(c.name).(*rules); ok {
		return rs
	}
	return c.own
}

// DecodeHeaders implements httpfilter.Decoder: the request rules.
func (c *filterConfig) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	if r := c.rulesOf(s); len(r.request) > 0 {
		apply(s, r.request, s.RequestHeaders(), r.stats, 0)
	}
	return httpfilter.Continue
}

// EncodeHeaders implements httpfilter.Encoder: the response rules.
func (c *filterConfig) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	if r := c.rulesOf(s); len(r.response) > 0 {
		apply(s, r.response, s.ResponseHeaders(), r.stats, 1)
	}
	return httpfilter.Continue
}

// apply runs the rules on h, collecting the metadata of each namespace,
// then writes it into the stream's dynamic metadata; st (nil without
// stat_prefix) counts as Envoy does, dir being the direction.
func apply(s httpfilter.Stream, rs []rule, h router.HeaderEditor, st *filterStats, dir int) {
	var md map[string]*structpb.Struct
	add := func(p *pair, v string) {
		if v == "" {
			return
		}
		val, o := p.valueOf(v)
		if o != added {
			st.failed(o)
			return
		}
		st.added(dir)
		if md == nil {
			md = map[string]*structpb.Struct{}
		}
		ns := md[p.namespace]
		if ns == nil {
			ns = &structpb.Struct{Fields: map[string]*structpb.Value{}}
			md[p.namespace] = ns
		}
		ns.Fields[p.key] = val
	}
	for i := range rs {
		r := &rs[i]
		var (
			v       string
			present bool
		)
		if r.cookie != "" {
			v, present = router.CookieValue(h, r.cookie)
			present = present && v != ""
		} else {
			v, present = h.Get(r.header)
		}
		st.processed(dir)
		switch {
		case present && r.present != nil:
			if r.present.value != "" {
				v = r.present.value
			} else if r.present.rewrite != nil {
				in := v
				if v = r.present.rewrite.Apply(v); in != "" && v == "" {
					// Envoy's sign of a failed substitution.
					st.regexFailedOnce()
				}
			}
			add(r.present, v)
			if r.remove {
				h.Del(r.header)
			}
		case present:
			if r.remove {
				h.Del(r.header)
			}
		case r.missing != nil:
			st.notFound(dir)
			add(r.missing, r.missing.value)
		}
	}
	for ns, st := range md {
		s.SetDynamicMetadata(ns, st)
	}
}

// outcome is what became of a value valueOf was given.
type outcome uint8

const (
	added outcome = iota
	tooLong
	base64Failed
	// unparsed: a non-number for NUMBER, an unparsable serialized
	// Value for PROTOBUF_VALUE (Envoy counts neither).
	unparsed
)

// valueOf turns a non-empty v into the pair's metadata value, as Envoy's
// addMetadata: overlong values, undecodable base64, non-numbers for
// NUMBER and unparsable serialized Values for PROTOBUF_VALUE are skipped,
// the outcome saying which.
func (p *pair) valueOf(v string) (*structpb.Value, outcome) {
	if len(v) >= maxValueLen {
		return nil, tooLong
	}
	if p.base64 {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			if b, err = base64.RawStdEncoding.DecodeString(v); err != nil {
				return nil, base64Failed
			}
		}
		if len(b) == 0 {
			return nil, base64Failed
		}
		v = string(b)
	}
	switch p.typ {
	case h2mv3.Config_NUMBER:
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, unparsed
		}
		return structpb.NewNumberValue(n), added
	case h2mv3.Config_PROTOBUF_VALUE:
		var pv structpb.Value
		if err := proto.Unmarshal([]byte(v), &pv); err != nil {
			return nil, unparsed
		}
		return &pv, added
	default:
		return structpb.NewStringValue(v), added
	}
}
