// Package envelope is the envelope session state
// (envoy.http.stateful_session.envelope) in its header mode: the upstream
// sets a session header of its own; the proxy wraps its value with the
// address of the host that served it, "<base64 host>;UV:<base64 value>",
// and a request that brings the wrapped header back goes to that host,
// with the upstream's own value restored in the header.
package envelope

import (
	"errors"
	"fmt"
	"strings"

	envelopev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/stateful_session/envelope/v3"
	"golang.org/x/net/http/httpguts"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/sessionstate"
)

// Name is the extension's name in the proxy. spelling.
const Name = "proxy.http.stateful_session.envelope"

// upstreamValueFlag starts the part of the header that carries the
// upstream's own value.
const upstreamValueFlag = "UV:"

// Factory builds the session state.
type Factory struct{}

var _ sessionstate.Factory = Factory{}

// CompileSessionState implements sessionstate.Factory.
func (Factory) CompileSessionState(config proto.Message, _ sessionstate.Context) (sessionstate.State, error) {
	c, ok := config.(*envelopev3.EnvelopeSessionState)
	if !ok {
		return nil, errors.New("not an EnvelopeSessionState")
	}
	name := c.GetHeader().GetName()
	if name == "" {
		return nil, errors.New("header.name: must not be empty")
	}
	if !httpguts.ValidHeaderFieldName(name) {
		// The name is written into requests and responses.
		return nil, fmt.Errorf("header.name: %q is not a valid header name", name)
	}
	return &state{name: strings.ToLower(name)}, nil
}

// state is a compiled EnvelopeSessionState.
type state struct {
	// name is the session header's name, lower case.
	name string
}

// Address implements sessionstate.State, as Envoy's parseAddressHeader:
// the header's first field split on ';' (empty parts skipped), the first
// part the base64 of the host's address, and the first later part that
// starts with "UV:" the base64 of the upstream's value, which replaces
// the header's. Without a valid UV part the header is left alone and the
// request names no host.
func (s *state) Address(_ string, headers router.HeaderEditor) (string, bool) {
	v, ok := sessionstate.FirstField(headers, s.name)
	if !ok {
		return "", true
	}
	var parts []string
	for p := range strings.SplitSeq(v, ";") {
		if p != "" {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return "", true
	}
	var uv string
	for _, p := range parts[1:] {
		if rest, found := strings.CutPrefix(p, upstreamValueFlag); found {
			uv = rest
			break
		}
	}
	orig := sessionstate.DecodeBase64(uv)
	if orig == "" {
		return "", true
	}
	headers.Set(s.name, orig)
	return sessionstate.DecodeBase64(parts[0]), true
}

// Update implements sessionstate.State: a response with exactly one
// field of the header gets it wrapped with the serving host's address,
// whichever host the request named; it reports whether the session's
// host changed.
func (s *state) Update(addr, host string, resp router.HeaderEditor) bool {
	v, ok := sessionstate.FirstField(resp, s.name)
	if !ok {
		return addr != host
	}
	if f, split := resp.(router.HeaderFields); split {
		if _, more := f.Field(s.name, 1); more {
			// Envoy leaves a header that occurs several times alone.
			return addr != host
		}
	}
	resp.Set(s.name, sessionstate.EncodeBase64(host)+";"+upstreamValueFlag+sessionstate.EncodeBase64(v))
	return addr != host
}
