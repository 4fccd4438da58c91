// Package basicauth is the Basic authentication HTTP filter
// (envoy.filters.http.basic_auth): a request must carry a
// "Basic base64(user:password)" credential whose user is in the
// configured htpasswd list and whose password hashes ({SHA}: SHA-1,
// base64) to that user's; other requests get a 401 with a
// WWW-Authenticate challenge, as Envoy's filter answers. A route's
// BasicAuthPerRoute replaces the user list (and the realm).
// Stats: http.<stat_prefix>.basic_auth.allowed and denied.
package basicauth

import (
	"crypto/sha1" //nolint:gosec // htpasswd's {SHA} format is SHA-1, as Envoy's filter reads it.
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	basicauthv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/basic_auth/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/datasource"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.basic_auth"

// Factory builds the filter and compiles its per-route configurations.
type Factory struct{}

var (
	_ httpfilter.Factory      = Factory{}
	_ httpfilter.RouteFactory = Factory{}
)

// Compile implements httpfilter.Factory.
func (Factory) Compile(config proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	c, ok := config.(*basicauthv3.BasicAuth)
	if !ok {
		return nil, errors.New("not a BasicAuth configuration")
	}
	if ctx.Stats == nil {
		return nil, errors.New("no stat store")
	}
	users, err := readUsers(c.GetUsers(), false)
	if err != nil {
		return nil, err
	}
	sc := ctx.Stats.Scope(ctx.StatPrefix + "basic_auth.")
	return &filterConfig{
		name:         ctx.Name,
		own:          &policy{users: users, realm: c.GetRealm()},
		forwardUser:  strings.ToLower(c.GetForwardUsernameHeader()),
		authHeader:   strings.ToLower(c.GetAuthenticationHeader()),
		allowMissing: c.GetAllowMissing(),
		emitMetadata: c.GetEmitDynamicMetadata(),
		allowed:      sc.Counter("allowed"),
		denied:       sc.Counter("denied"),
	}, nil
}

// CompileRoute implements httpfilter.RouteFactory: a BasicAuthPerRoute,
// whose users may be empty (nobody is let in).
func (Factory) CompileRoute(config proto.Message, _ httpfilter.Context) (httpfilter.RouteConfig, error) {
	c, ok := config.(*basicauthv3.BasicAuthPerRoute)
	if !ok {
		return nil, errors.New("not a BasicAuthPerRoute configuration")
	}
	users, err := readUsers(c.GetUsers(), true)
	if err != nil {
		return nil, err
	}
	return &policy{users: users, realm: c.GetRealm()}, nil
}

// policy is who may pass, and the realm of the challenge ("" for the
// request's URI).
type policy struct {
	users map[string]string
	realm string
}

// filterConfig is the compiled filter.
type filterConfig struct {
	name string
	own  *policy
	// forwardUser and authHeader are lower-cased header names, "" when
	// not configured.
	forwardUser, authHeader    string
	allowMissing, emitMetadata bool
	allowed, denied            *stats.Counter
}

// NewFilter implements httpfilter.Config.
func (c *filterConfig) NewFilter() httpfilter.Filter { return &filter{c: c} }

// filter is the filter of one request: the challenge to send with its
// denial.
type filter struct {
	c         *filterConfig
	challenge string
}

var (
	_ httpfilter.Decoder = (*filter)(nil)
	_ httpfilter.Encoder = (*filter)(nil)
)

// DecodeHeaders implements httpfilter.Decoder: Envoy's decodeHeaders.
func (f *filter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	c := f.c
	p := c.own
	if rp, ok := s.RouteConfig(c.name).(*policy); ok {
		p = rp
	}
	header := "authorization"
	if c.authHeader != "" {
		header = c.authHeader
	}
	h := s.RequestHeaders()
	value, found := h.Get(header)
	if !found {
		if c.allowMissing {
			return httpfilter.Continue
		}
		return f.deny(s, p, "User authentication failed. Missing username and password.", "no_credential_for_basic_auth")
	}
	token, basic := strings.CutPrefix(value, "Basic ")
	if !basic {
		if c.allowMissing {
			return httpfilter.Continue
		}
		return f.deny(s, p, "User authentication failed. Expected 'Basic' authentication scheme.", "invalid_scheme_for_basic_auth")
	}
	user, password, ok := strings.Cut(decodeBase64(token), ":")
	if !ok {
		return f.deny(s, p, "User authentication failed. Invalid basic credential format.", "invalid_format_for_basic_auth")
	}
	if !p.valid(user, password) {
		return f.deny(s, p, "User authentication failed. Invalid username/password combination.", "invalid_credential_for_basic_auth")
	}
	if c.forwardUser != "" {
		h.Set(c.forwardUser, user)
	}
	if c.emitMetadata {
		s.SetDynamicMetadata(c.name, &structpb.Struct{Fields: map[string]*structpb.Value{"username": structpb.NewStringValue(user)}})
	}
	c.allowed.Inc()
	return httpfilter.Continue
}

// deny answers 401 with body and details, and keeps the challenge for
// the reply's headers.
func (f *filter) deny(s httpfilter.Stream, p *policy, body, details string) httpfilter.Status {
	f.c.denied.Inc()
	realm := p.realm
	if realm == "" {
		realm = httpfilter.OriginalURI(s)
	}
	f.challenge = `Basic realm="` + realm + `"`
	s.SendLocalReply(401, body, 0, details)
	return httpfilter.Stop
}

// EncodeHeaders implements httpfilter.Encoder: the challenge goes on the
// 401 the filter sent.
func (f *filter) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	if f.challenge != "" {
		s.ResponseHeaders().Set("www-authenticate", f.challenge)
	}
	return httpfilter.Continue
}

// valid reports whether password is user's: the base64 of its SHA-1 is
// the hash on record.
func (p *policy) valid(user, password string) bool {
	want, ok := p.users[user]
	if !ok {
		return false
	}
	sum := sha1.Sum([]byte(password)) //nolint:gosec // the htpasswd {SHA} format.
	got := base64.StdEncoding.EncodeToString(sum[:])
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// decodeBase64 is Envoy's Base64::decodeWithoutPadding: padding is
// optional, and anything that does not decode is "" (which then has no
// colon, an invalid credential format).
func decodeBase64(s string) string {
	b, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return ""
	}
	return string(b)
}

// readUsers reads an htpasswd list as Envoy does: one "user:{SHA}hash" a
// line, empty lines and lines starting with '#' skipped; only the {SHA}
// format. allowEmpty is false for the filter's own list, which Envoy
// requires to be non-empty.
func readUsers(ds *corev3.DataSource, allowEmpty bool) (map[string]string, error) {
	b, err := datasource.Read(ds)
	if err != nil {
		return nil, fmt.Errorf("users.%w", err)
	}
	if len(b) == 0 && !allowEmpty {
		return nil, errors.New("users: must not be empty")
	}
	users, err := parseHtpasswd(string(b))
	if err != nil {
		return nil, fmt.Errorf("users: %w", err)
	}
	return users, nil
}

// parseHtpasswd parses the text of an htpasswd list; errors say which
// line is wrong, without the password hashes.
func parseHtpasswd(text string) (map[string]string, error) {
	users := map[string]string{}
	for i, line := range strings.Split(text, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		name, hash, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("line %d: invalid htpasswd format, username:password is expected", i+1)
		}
		if name == "" || hash == "" {
			return nil, fmt.Errorf("line %d: empty user name or password", i+1)
		}
		if _, dup := users[name]; dup {
			return nil, fmt.Errorf("line %d: duplicate user '%s'", i+1, name)
		}
		hash, ok = strings.CutPrefix(hash, "{SHA}")
		if !ok {
			return nil, fmt.Errorf("line %d: unsupported htpasswd format: please use {SHA} for '%s'", i+1, name)
		}
		// The base64 of a SHA-1 hash is 28 bytes long.
		if len(hash) != 28 {
			return nil, fmt.Errorf("line %d: invalid SHA hash length for '%s'", i+1, name)
		}
		users[name] = hash
	}
	return users, nil
}
