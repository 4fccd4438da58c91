// Package sessionstate is the interface between the stateful session HTTP
// filter and the session state extensions, Envoy's
// envoy.http.stateful_session category: an extension package (cookie,
// header) registers a Factory, which compiles its configuration into a
// State that reads the upstream address a request's session names and
// writes the address of the host that served it into the response.
package sessionstate

import (
	"encoding/base64"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// Category is Envoy's extension category of the session states.
const Category = "envoy.http.stateful_session"

// Factory compiles a session state's configuration.
type Factory interface {
	// CompileSessionState checks and compiles the typed_config of a
	// session_state. Errors name the field path below it.
	CompileSessionState(config proto.Message, ctx Context) (State, error)
}

// Context is what a session state's configuration may use.
type Context struct {
	// Monotonic is the time on Envoy's monotonic clock (since boot, on
	// Linux): what the cookie's expiry counts in. Never nil.
	Monotonic func() time.Duration
}

// State is a compiled session state. It keeps nothing per request, so
// that one value serves every request at once.
type State interface {
	// Address returns the upstream address ("ip:port") that the
	// request's session names, "" when it names none (no cookie, an
	// expired or unreadable one). applies is false when the session
	// state does not apply to the request at all (a cookie whose path the
	// request's does not match): Envoy's factory then makes no session.
	// It may edit the request headers (the envelope restores the
	// upstream's own value).
	Address(path string, headers router.HeaderEditor) (addr string, applies bool)
	// Update names host, the address of the host that served the
	// request, in the response headers when it differs from addr, the
	// address the request named (Envoy's onUpdate); it reports whether it
	// did.
	Update(addr, host string, resp router.HeaderEditor) bool
}

// DecodeBase64 decodes a session value as Envoy's Base64::decode does:
// the standard alphabet with padding; anything else decodes to nothing.
func DecodeBase64(v string) string {
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// EncodeBase64 encodes a session value for the response.
func EncodeBase64(v string) string { return base64.StdEncoding.EncodeToString([]byte(v)) }

// FirstField returns the first field of the named header (lower case); a
// header map that joins several fields gives the joined value.
func FirstField(h router.HeaderGetter, name string) (string, bool) {
	if f, ok := h.(router.HeaderFields); ok {
		return f.Field(name, 0)
	}
	if h == nil {
		return "", false
	}
	return h.Get(name)
}
