// Package header is the header-based session state
// (envoy.http.stateful_session.header): a request names its upstream
// host in a header, base64 of "ip:port"; a response served by another
// host carries that host's address in the same header.
package header

import (
	"errors"
	"fmt"
	"strings"

	headerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/stateful_session/header/v3"
	"golang.org/x/net/http/httpguts"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/sessionstate"
)

// Name is the extension's name in the proxy. spelling.
const Name = "proxy.http.stateful_session.header"

// Factory builds the session state.
type Factory struct{}

var _ sessionstate.Factory = Factory{}

// CompileSessionState implements sessionstate.Factory.
func (Factory) CompileSessionState(config proto.Message, _ sessionstate.Context) (sessionstate.State, error) {
	c, ok := config.(*headerv3.HeaderBasedSessionState)
	if !ok {
		return nil, errors.New("not a HeaderBasedSessionState")
	}
	if c.GetName() == "" {
		// Envoy: "Header name cannot be empty for header based stateful
		// sessions".
		return nil, errors.New("name: must not be empty")
	}
	if !httpguts.ValidHeaderFieldName(c.GetName()) {
		// It is written into responses: a name that is not a token would
		// break (or forge) the response head.
		return nil, fmt.Errorf("name: %q is not a valid header name", c.GetName())
	}
	return &state{name: strings.ToLower(c.GetName())}, nil
}

// state is a compiled HeaderBasedSessionState.
type state struct {
	// name is the header's name, lower case.
	name string
}

// Address implements sessionstate.State: the first field of the header,
// base64-decoded. The header goes upstream as it came, as in Envoy.
func (s *state) Address(_ string, headers router.HeaderEditor) (string, bool) {
	v, ok := sessionstate.FirstField(headers, s.name)
	if !ok {
		return "", true
	}
	return sessionstate.DecodeBase64(v), true
}

// Update implements sessionstate.State.
func (s *state) Update(addr, host string, resp router.HeaderEditor) bool {
	if addr != "" && addr == host {
		return false
	}
	resp.Set(s.name, sessionstate.EncodeBase64(host))
	return true
}
