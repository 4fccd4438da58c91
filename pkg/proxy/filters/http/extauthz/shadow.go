package extauthz

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// shadowSuffix ends the filter state key of a shadow_mode decision: the
// filter's name, then ".shadow".
const shadowSuffix = ".shadow"

// shadowDecision is the filter state a check leaves in shadow_mode in
// place of enforcing its answer: Envoy's ShadowDecision, whose TYPED form
// is the message (it has no PLAIN one).
type shadowDecision struct {
	d *extauthzv3.ShadowDecision
}

var _ accesslog.FilterStateObject = shadowDecision{}

// FilterStateString implements accesslog.FilterStateObject: none.
func (shadowDecision) FilterStateString() (string, bool) { return "", false }

// FilterStateProto implements accesslog.FilterStateObject: the
// ShadowDecision.
func (sd shadowDecision) FilterStateProto() proto.Message { return sd.d }

// shadow records the decision of a check in shadow_mode, which the
// request goes on regardless of: result, the status the filter would
// have answered (200 for OK), and a denial's response headers. Envoy
// keeps the denied body out of it.
func (f *filter) shadow(s httpfilter.Stream, result extauthzv3.ShadowDecision_CheckResult, status int, headers []headerEdit) httpfilter.Status {
	d := &extauthzv3.ShadowDecision{CheckResult: result, StatusCode: uint32(status)}
	for _, h := range headers {
		d.ResponseHeaders = append(d.ResponseHeaders, &corev3.HeaderValue{Key: h.name, Value: h.value})
	}
	s.SetFilterState(f.c.name+shadowSuffix, shadowDecision{d: d})
	return httpfilter.Continue
}
