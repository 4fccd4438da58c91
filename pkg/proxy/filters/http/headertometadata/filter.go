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
	if rs := c.rulesOf(s).request; len(rs) > 0 {
		apply(s, rs, s.RequestHeaders())
	}
	return httpfilter.Continue
}

// EncodeHeaders implements httpfilter.Encoder: the response rules.
func (c *filterConfig) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	if rs := c.rulesOf(s).response; len(rs) > 0 {
		apply(s, rs, s.ResponseHeaders())
	}
	return httpfilter.Continue
}

// apply runs the rules on h, collecting the metadata of each namespace,
// then writes it into the stream's dynamic metadata.
func apply(s httpfilter.Stream, rs []rule, h router.HeaderEditor) {
	var md map[string]*structpb.Struct
	add := func(p *pair, v string) {
		val, ok := p.valueOf(v)
		if !ok {
			return
		}
		if md == nil {
			md = map[string]*structpb.Struct{}
		}
		st := md[p.namespace]
		if st == nil {
			st = &structpb.Struct{Fields: map[string]*structpb.Value{}}
			md[p.namespace] = st
		}
		st.Fields[p.key] = val
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
		switch {
		case present && r.present != nil:
			if r.present.value != "" {
				v = r.present.value
			} else if r.present.rewrite != nil {
				v = r.present.rewrite.Apply(v)
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
			add(r.missing, r.missing.value)
		}
	}
	for ns, st := range md {
		s.SetDynamicMetadata(ns, st)
	}
}

// valueOf turns v into the pair's metadata value, as Envoy's addMetadata:
// empty or overlong values, undecodable base64, non-numbers for NUMBER
// and unparsable serialized Values for PROTOBUF_VALUE are skipped.
func (p *pair) valueOf(v string) (*structpb.Value, bool) {
	if v == "" || len(v) >= maxValueLen {
		return nil, false
	}
	if p.base64 {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			if b, err = base64.RawStdEncoding.DecodeString(v); err != nil {
				return nil, false
			}
		}
		if len(b) == 0 {
			return nil, false
		}
		v = string(b)
	}
	switch p.typ {
	case h2mv3.Config_NUMBER:
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, false
		}
		return structpb.NewNumberValue(n), true
	case h2mv3.Config_PROTOBUF_VALUE:
		var pv structpb.Value
		if err := proto.Unmarshal([]byte(v), &pv); err != nil {
			return nil, false
		}
		return &pv, true
	default:
		return structpb.NewStringValue(v), true
	}
}
