// Package cookie is the cookie-based session state
// (envoy.http.stateful_session.cookie): a request names its upstream
// host in a cookie; a response served by another host (or to a request
// without the cookie) sets the cookie to that host.
//
// The cookie's value is Envoy's current format: the base64 of a small
// protobuf message (envoy.Cookie: address = 1, the host's "ip:port";
// expires = 2, when ttl is set, the expiry in seconds on the monotonic
// clock). A value that is not such a message is read as Envoy's older
// format, the base64 of "ip:port" itself, as Envoy still reads it.
package cookie

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	cookiev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/stateful_session/cookie/v3"
	"golang.org/x/net/http/httpguts"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/sessionstate"
)

// Name is the extension's name in the proxy. spelling.
const Name = "proxy.http.stateful_session.cookie"

// Factory builds the session state.
type Factory struct{}

var _ sessionstate.Factory = Factory{}

// CompileSessionState implements sessionstate.Factory.
func (Factory) CompileSessionState(config proto.Message, ctx sessionstate.Context) (sessionstate.State, error) {
	c, ok := config.(*cookiev3.CookieBasedSessionState)
	if !ok {
		return nil, errors.New("not a CookieBasedSessionState")
	}
	ck := c.GetCookie()
	if ck.GetName() == "" {
		// Envoy: "Cookie key cannot be empty for cookie based stateful
		// sessions".
		return nil, errors.New("cookie.name: must not be empty")
	}
	// The cookie is written into Set-Cookie headers: what would break
	// (or forge) the header's attributes is refused.
	if !httpguts.ValidHeaderFieldName(ck.GetName()) {
		return nil, fmt.Errorf("cookie.name: %q is not a valid cookie name", ck.GetName())
	}
	if !validAttrValue(ck.GetPath()) {
		return nil, fmt.Errorf("cookie.path: %q cannot be written in a Set-Cookie header", ck.GetPath())
	}
	attrs := make([]router.CookieAttribute, 0, len(ck.GetAttributes()))
	for i, a := range ck.GetAttributes() {
		if !httpguts.ValidHeaderFieldName(a.GetName()) {
			return nil, fmt.Errorf("cookie.attributes[%d].name: %q is not a valid attribute name", i, a.GetName())
		}
		if !validAttrValue(a.GetValue()) {
			return nil, fmt.Errorf("cookie.attributes[%d].value: %q cannot be written in a Set-Cookie header", i, a.GetValue())
		}
		attrs = append(attrs, router.CookieAttribute{Name: a.GetName(), Value: a.GetValue()})
	}
	// Envoy reads the ttl's whole seconds.
	ttl := ck.GetTtl().GetSeconds()
	s := &state{name: ck.GetName(), ttl: ttl, path: ck.GetPath(), now: ctx.Monotonic}
	s.prefix, s.suffix = router.SetCookieFrame(ck.GetName(), ttl, ck.GetPath(), attrs)
	return s, nil
}

// validAttrValue reports whether v may stand in a Set-Cookie header's
// attribute: a header value without ';'.
func validAttrValue(v string) bool {
	return httpguts.ValidHeaderFieldValue(v) && !strings.ContainsAny(v, ";\r\n")
}

// state is a compiled CookieBasedSessionState.
type state struct {
	name string
	// ttl is the cookie's Max-Age and the expiry written into it, in
	// seconds; 0 for a session cookie without expiry.
	ttl  int64
	path string
	// prefix and suffix frame the value in the Set-Cookie header.
	prefix, suffix string
	now            func() time.Duration
}

// Address implements sessionstate.State. The session applies to the
// requests the cookie's path covers, as Envoy's path matcher: every
// request for no path or "/"; for a path ending in '/', the requests
// whose path starts with it; otherwise the path itself and the paths
// that continue it with '/', '?' or '#'.
func (s *state) Address(path string, headers router.HeaderEditor) (string, bool) {
	if !pathMatches(s.path, path) {
		return "", false
	}
	v, ok := router.CookieValue(headers, s.name)
	if !ok || v == "" {
		return "", true
	}
	return s.parse(sessionstate.DecodeBase64(v)), true
}

// pathMatches is Envoy's cookie path matcher.
func pathMatches(cookiePath, reqPath string) bool {
	switch {
	case cookiePath == "" || cookiePath == "/":
		return true
	case strings.HasSuffix(cookiePath, "/"):
		return strings.HasPrefix(reqPath, cookiePath)
	case !strings.HasPrefix(reqPath, cookiePath):
		return false
	case len(reqPath) == len(cookiePath):
		return true
	}
	switch reqPath[len(cookiePath)] {
	case '/', '?', '#':
		return true
	}
	return false
}

// parse reads a decoded cookie value: the envoy.Cookie message when it
// is one (its address, "" once expired), else the older format's bare
// address.
func (s *state) parse(v string) string {
	addr, expires, ok := decodeCookie(v)
	if !ok {
		return v
	}
	if expires != 0 && uint64(s.now()/time.Second) > expires {
		// An expired session: the balancer picks, and the response sets
		// a new cookie.
		return ""
	}
	return addr
}

// Update implements sessionstate.State.
func (s *state) Update(addr, host string, resp router.HeaderEditor) bool {
	if addr != "" && addr == host {
		return false
	}
	var expires uint64
	if s.ttl != 0 {
		expires = uint64(s.now()/time.Second) + uint64(s.ttl)
	}
	resp.Add("set-cookie", s.prefix+sessionstate.EncodeBase64(encodeCookie(host, expires))+s.suffix)
	return true
}

// encodeCookie is the wire form of envoy.Cookie{address, expires}.
func encodeCookie(addr string, expires uint64) string {
	b := make([]byte, 0, len(addr)+16)
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, addr)
	if expires != 0 {
		b = protowire.AppendTag(b, 2, protowire.VarintType)
		b = protowire.AppendVarint(b, expires)
	}
	return string(b)
}

// decodeCookie parses v as envoy.Cookie, as protobuf's ParseFromString:
// false when v is not a well-formed message. Fields of other numbers or
// wire types are skipped as unknown fields; the last of a field wins.
func decodeCookie(v string) (addr string, expires uint64, ok bool) {
	b := []byte(v)
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return "", 0, false
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.BytesType:
			s, m := protowire.ConsumeString(b)
			if m < 0 || !utf8.ValidString(s) {
				return "", 0, false
			}
			addr, n = s, m
		case num == 2 && typ == protowire.VarintType:
			expires, n = protowire.ConsumeVarint(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return "", 0, false
		}
		b = b[n:]
	}
	return addr, expires, true
}
