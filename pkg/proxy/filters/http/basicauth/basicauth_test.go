package basicauth

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	basicauthv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/basic_auth/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// users is an htpasswd list: alice's password is "wonderland", bob's
// "builder" ({SHA}: base64 of the SHA-1, as `htpasswd -s` writes).
const users = `# comment line

alice:{SHA}tiY7sUhYKUwI5L3866kDY+ENcrQ=
bob:{SHA}9SMYoF5RilWWASry7TjeaKwmpGg=`

// parse reads y into m, as a configuration's YAML would.
func parse[M proto.Message](t *testing.T, y string, m M) M {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if err := protojson.Unmarshal(j, m); err != nil {
		t.Fatal(err)
	}
	return m
}

func basic(credential string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(credential))
}

// compile compiles config under the name "auth", with its stats in st.
func compile(t *testing.T, config string, st *stats.Store) httpfilter.Config {
	t.Helper()
	cfg, err := Factory{}.Compile(parse(t, config, &basicauthv3.BasicAuth{}), httpfilter.Context{Name: "auth", Stats: st, StatPrefix: "http.t."})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// run decodes then encodes a request with headers through a new filter
// of cfg.
func run(cfg httpfilter.Config, s *httpfiltertest.Stream) httpfilter.Status {
	f := cfg.NewFilter()
	st := f.(httpfilter.Decoder).DecodeHeaders(s)
	f.(httpfilter.Encoder).EncodeHeaders(s)
	return st
}

func TestBasicAuth(t *testing.T) {
	config := `{users: {inline_string: ` + strconvQuote(users) + `}}`
	for _, tc := range []struct {
		name    string
		headers []string
		status  int // 0: let through
		body    string
		details string
	}{
		{"valid", []string{"authorization", basic("alice:wonderland")}, 0, "", ""},
		{"valid without padding", []string{"authorization", strings.TrimRight(basic("bob:builder"), "=")}, 0, "", ""},
		{"password with a colon is the rest", []string{"authorization", basic("alice:wonder:land")}, 401,
			"User authentication failed. Invalid username/password combination.", "invalid_credential_for_basic_auth"},
		{"missing", nil, 401, "User authentication failed. Missing username and password.", "no_credential_for_basic_auth"},
		{"other scheme", []string{"authorization", "Bearer x"}, 401,
			"User authentication failed. Expected 'Basic' authentication scheme.", "invalid_scheme_for_basic_auth"},
		{"scheme is case sensitive", []string{"authorization", "basic " + base64.StdEncoding.EncodeToString([]byte("alice:wonderland"))}, 401,
			"User authentication failed. Expected 'Basic' authentication scheme.", "invalid_scheme_for_basic_auth"},
		{"no colon", []string{"authorization", basic("alice")}, 401,
			"User authentication failed. Invalid basic credential format.", "invalid_format_for_basic_auth"},
		{"not base64", []string{"authorization", "Basic !!!"}, 401,
			"User authentication failed. Invalid basic credential format.", "invalid_format_for_basic_auth"},
		{"wrong password", []string{"authorization", basic("alice:builder")}, 401,
			"User authentication failed. Invalid username/password combination.", "invalid_credential_for_basic_auth"},
		{"unknown user", []string{"authorization", basic("carol:wonderland")}, 401,
			"User authentication failed. Invalid username/password combination.", "invalid_credential_for_basic_auth"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := stats.NewStore()
			cfg := compile(t, config, st)
			s := httpfiltertest.NewStream("GET", "/private/x?q=1", append(tc.headers, "x-forwarded-proto", "https")...)
			s.Req.Host = "shop.example"
			got := run(cfg, s)
			allowed, denied := st.Counter("http.t.basic_auth.allowed").Value(), st.Counter("http.t.basic_auth.denied").Value()
			if tc.status == 0 {
				if got != httpfilter.Continue || s.Reply != nil || allowed != 1 || denied != 0 {
					t.Fatalf("status %v, reply %+v, allowed %d, denied %d", got, s.Reply, allowed, denied)
				}
				return
			}
			if got != httpfilter.Stop || s.Reply == nil || s.Reply.Status != tc.status || s.Reply.Body != tc.body || s.Reply.Details != tc.details {
				t.Fatalf("status %v, reply %+v", got, s.Reply)
			}
			if allowed != 0 || denied != 1 {
				t.Errorf("allowed %d, denied %d", allowed, denied)
			}
			if v, _ := s.RespHeaders.Get("www-authenticate"); v != `Basic realm="https://shop.example/private/x?q=1"` {
				t.Errorf("www-authenticate %q", v)
			}
		})
	}
}

// strconvQuote quotes s as a YAML double-quoted scalar.
func strconvQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

func TestBasicAuthOptions(t *testing.T) {
	st := stats.NewStore()
	cfg := compile(t, `{users: {inline_string: `+strconvQuote(users)+`}, forward_username_header: X-User,
		authentication_header: Proxy-Authorization, emit_dynamic_metadata: true, realm: "shop"}`, st)

	s := httpfiltertest.NewStream("GET", "/", "proxy-authorization", basic("bob:builder"), "authorization", "Bearer token")
	if run(cfg, s) != httpfilter.Continue || s.Reply != nil {
		t.Fatalf("reply %+v", s.Reply)
	}
	if v, _ := s.ReqHeaders.Get("x-user"); v != "bob" {
		t.Errorf("x-user %q", v)
	}
	if v := s.Metadata.GetFilterMetadata()["auth"].GetFields()["username"].GetStringValue(); v != "bob" {
		t.Errorf("metadata %v", s.Metadata)
	}

	// The Authorization header is not looked at.
	s = httpfiltertest.NewStream("GET", "/", "authorization", basic("bob:builder"))
	if run(cfg, s) != httpfilter.Stop || s.Reply == nil || s.Reply.Details != "no_credential_for_basic_auth" {
		t.Fatalf("reply %+v", s.Reply)
	}
	if v, _ := s.RespHeaders.Get("www-authenticate"); v != `Basic realm="shop"` {
		t.Errorf("www-authenticate %q", v)
	}
	if v, ok := s.ReqHeaders.Get("x-user"); ok {
		t.Errorf("x-user %q on a denied request", v)
	}
}

func TestBasicAuthAllowMissing(t *testing.T) {
	st := stats.NewStore()
	cfg := compile(t, `{users: {inline_string: `+strconvQuote(users)+`}, allow_missing: true, emit_dynamic_metadata: true}`, st)
	for _, headers := range [][]string{nil, {"authorization", "Bearer token"}} {
		s := httpfiltertest.NewStream("GET", "/", headers...)
		if run(cfg, s) != httpfilter.Continue || s.Reply != nil || s.Metadata != nil {
			t.Fatalf("%v: reply %+v, metadata %v", headers, s.Reply, s.Metadata)
		}
	}
	// Basic credentials are still checked.
	s := httpfiltertest.NewStream("GET", "/", "authorization", basic("alice:nope"))
	if run(cfg, s) != httpfilter.Stop || s.Reply == nil || s.Reply.Status != 401 {
		t.Fatalf("reply %+v", s.Reply)
	}
	if a, d := st.Counter("http.t.basic_auth.allowed").Value(), st.Counter("http.t.basic_auth.denied").Value(); a != 0 || d != 1 {
		t.Errorf("allowed %d, denied %d", a, d)
	}
}

func TestBasicAuthPerRoute(t *testing.T) {
	st := stats.NewStore()
	cfg := compile(t, `{users: {inline_string: `+strconvQuote(users)+`}}`, st)
	rc, err := Factory{}.CompileRoute(parse(t, `{users: {inline_string: "carol:{SHA}qUqP5cyxm6YcTAhz05Hph5gvu9M="}, realm: admin}`, &basicauthv3.BasicAuthPerRoute{}), httpfilter.Context{})
	if err != nil {
		t.Fatal(err)
	}
	// carol's password is "test"; alice is not on the route's list.
	for _, tc := range []struct {
		credential string
		ok         bool
	}{{"carol:test", true}, {"alice:wonderland", false}} {
		s := httpfiltertest.NewStream("GET", "/admin", "authorization", basic(tc.credential))
		s.PerRoute = map[string][]httpfilter.RouteConfig{"auth": {rc}}
		got := run(cfg, s)
		if (got == httpfilter.Continue) != tc.ok {
			t.Errorf("%s: status %v, reply %+v", tc.credential, got, s.Reply)
		}
		if !tc.ok {
			if v, _ := s.RespHeaders.Get("www-authenticate"); v != `Basic realm="admin"` {
				t.Errorf("www-authenticate %q", v)
			}
		}
	}

	// An empty list on a route lets nobody in.
	rc, err = Factory{}.CompileRoute(parse(t, `{users: {inline_string: ""}}`, &basicauthv3.BasicAuthPerRoute{}), httpfilter.Context{})
	if err != nil {
		t.Fatal(err)
	}
	s := httpfiltertest.NewStream("GET", "/admin", "authorization", basic("alice:wonderland"))
	s.PerRoute = map[string][]httpfilter.RouteConfig{"auth": {rc}}
	if run(cfg, s) != httpfilter.Stop {
		t.Errorf("an empty route list let alice in")
	}
}

func TestBasicAuthUsersFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "htpasswd")
	if err := os.WriteFile(path, []byte(users+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := compile(t, `{users: {filename: `+strconvQuote(path)+`}}`, stats.NewStore())
	s := httpfiltertest.NewStream("GET", "/", "authorization", basic("alice:wonderland"))
	if run(cfg, s) != httpfilter.Continue {
		t.Fatalf("reply %+v", s.Reply)
	}
}

func TestBasicAuthConfigErrors(t *testing.T) {
	for _, tc := range []struct{ config, want string }{
		{`{}`, "users: must not be empty"},
		{`{users: {inline_string: ""}}`, "users: must not be empty"},
		{`{users: {filename: /nonexistent/htpasswd}}`, "users.filename: open /nonexistent/htpasswd"},
		{`{users: {inline_string: "alice"}}`, "users: line 1: invalid htpasswd format, username:password is expected"},
		{`{users: {inline_string: ":{SHA}tiY7sUhYKUwI5L3866kDY+ENcrQ="}}`, "users: line 1: empty user name or password"},
		{`{users: {inline_string: "alice:"}}`, "users: line 1: empty user name or password"},
		{`{users: {inline_string: "a:{SHA}tiY7sUhYKUwI5L3866kDY+ENcrQ=\na:{SHA}tiY7sUhYKUwI5L3866kDY+ENcrQ="}}`, "users: line 2: duplicate user 'a'"},
		{`{users: {inline_string: "alice:$apr1$x$y"}}`, "users: line 1: unsupported htpasswd format: please use {SHA} for 'alice'"},
		{`{users: {inline_string: "alice:{SHA}short"}}`, "users: line 1: invalid SHA hash length for 'alice'"},
	} {
		_, err := Factory{}.Compile(parse(t, tc.config, &basicauthv3.BasicAuth{}), httpfilter.Context{Name: "auth", Stats: stats.NewStore()})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.config, err, tc.want)
		}
	}
}
