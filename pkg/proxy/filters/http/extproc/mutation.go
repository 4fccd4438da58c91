package extproc

import (
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocsvc "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/mutationrules"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// mutationError is a mutation that fails its message; its text is
// Envoy's, which becomes the reply's details.
type mutationError string

// Error implements error.
func (e mutationError) Error() string { return string(e) }

// head is the message head a header mutation edits: the request's (with
// :path), the response's (with :status), or trailers.
type head struct {
	h router.HeaderEditor
	// s is the stream, for :path and :status; nil for trailers.
	s        httpfilter.Stream
	response bool
	// cl records the content-length the mutation sets, with
	// allow_content_length_header (see length.go); nil without.
	cl *declaredCL
}

// has reports whether the head has name.
func (hd head) has(name string) bool {
	switch {
	case name == ":path" && hd.s != nil && !hd.response:
		return true
	case name == ":status" && hd.s != nil && hd.response:
		return true
	}
	_, ok := hd.h.Get(name)
	return ok
}

// set writes one header, append adding a value rather than replacing
// them. It reports false for a header the connection manager keeps out
// of the filters' reach (other pseudo-headers, host, transfer-encoding):
// the mutation is then rejected.
func (hd head) set(name, value string, appendValue bool) bool {
	switch {
	case name == ":path" && hd.s != nil && !hd.response:
		hd.s.SetPath(value)
		return true
	case name == ":status" && hd.s != nil && hd.response:
		ss, ok := hd.s.(httpfilter.ResponseStatusSetter)
		code, _ := strconv.Atoi(value)
		if !ok {
			return false
		}
		ss.SetResponseStatus(code)
		return true
	case name == "content-length":
		if hd.cl != nil {
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil || n < 0 {
				return false
			}
			hd.cl.set, hd.cl.n = true, n
			return true
		}
		// The connection manager frames bodies itself: the length
		// sent is the body's, whatever the processor says it is.
		return true
	case strings.HasPrefix(name, ":"), name == "host", name == "transfer-encoding":
		return false
	}
	if appendValue {
		hd.h.Add(name, value)
	} else {
		hd.h.Set(name, value)
	}
	return true
}

// applyHeaderMutation applies a HeaderMutation to hd under rules, as
// Envoy's MutationUtils::applyHeaderMutations: a mutation the rules
// refuse is skipped and counted, or, with disallow_is_error, fails the
// message; malformed names and values fail it.
func applyHeaderMutation(m *extprocsvc.HeaderMutation, hd head, r *mutationrules.Rules, rejected *stats.Counter) error {
	for _, name := range m.GetRemoveHeaders() {
		if !mutationrules.ValidHeaderName(name) {
			rejected.Inc()
			return mutationError("Invalid character in remove_headers mutation.")
		}
		name = strings.ToLower(name)
		switch r.Check(mutationrules.Remove, name, "") {
		case mutationrules.OK:
			switch {
			case name == "content-length":
				// Framing is the connection manager's (see set).
			case name == "transfer-encoding":
				rejected.Inc()
			default:
				hd.h.Del(name)
			}
		case mutationrules.Ignore:
			rejected.Inc()
		case mutationrules.Fail:
			rejected.Inc()
			return mutationError("Invalid attempt to remove " + name)
		}
	}
	for _, sh := range m.GetSetHeaders() {
		hv := sh.GetHeader()
		if hv == nil {
			continue
		}
		if hv.GetValue() != "" && len(hv.GetRawValue()) > 0 {
			rejected.Inc()
			return mutationError("Only one of value or raw_value in the HeaderValue message should be set.")
		}
		value := hv.GetValue()
		if len(hv.GetRawValue()) > 0 {
			value = string(hv.GetRawValue())
		}
		if !mutationrules.ValidHeaderName(hv.GetKey()) || !mutationrules.ValidHeaderValue(value) {
			rejected.Inc()
			return mutationError("Invalid character in set_headers mutation.")
		}
		name := strings.ToLower(hv.GetKey())
		exists := hd.has(name)
		var op mutationrules.Op
		var appendValue bool
		switch sh.GetAppendAction() {
		case corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD:
			// The enum's zero: the deprecated append field decides.
			//lint:ignore SA1019 Envoy still reads the deprecated append when append_action is unset
			appendValue = sh.GetAppend().GetValue()
			if appendValue && exists {
				op = mutationrules.Append
			}
		case corev3.HeaderValueOption_ADD_IF_ABSENT:
			if exists {
				continue
			}
			appendValue = true
		case corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD:
		case corev3.HeaderValueOption_OVERWRITE_IF_EXISTS:
			if !exists {
				continue
			}
		default:
			return mutationError("Invalid append_action value " + name)
		}
		switch r.Check(op, name, value) {
		case mutationrules.OK:
			if !hd.set(name, value, appendValue) {
				rejected.Inc()
			}
		case mutationrules.Ignore:
			rejected.Inc()
		case mutationrules.Fail:
			rejected.Inc()
			return mutationError("Invalid attempt to modify " + name)
		}
	}
	return nil
}

// replaceBody applies a BodyMutation to body: the new body, none for
// clear_body, or body itself when the mutation changes nothing. changed
// reports a mutation.
func replaceBody(m *extprocsvc.BodyMutation, body []byte) (out []byte, changed bool) {
	switch x := m.GetMutation().(type) {
	case *extprocsvc.BodyMutation_Body:
		return x.Body, true
	case *extprocsvc.BodyMutation_ClearBody:
		if x.ClearBody {
			return nil, true
		}
	}
	return body, false
}
