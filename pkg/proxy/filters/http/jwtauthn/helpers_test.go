package jwtauthn

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"strings"
	"testing"
	"time"

	jwtv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/jwt_authn/v3"
	jose "github.com/go-jose/go-jose/v4"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// testNow is the clock of the tests' filters.
var testNow = time.Unix(1_800_000_000, 0)

// signer is a key generated for a test: it signs tokens and publishes its
// public half in a JWKS.
type signer struct {
	alg jose.SignatureAlgorithm
	kid string
	key any // private key, or []byte for HMAC
}

// newSigner generates a key for alg.
func newSigner(t testing.TB, alg jose.SignatureAlgorithm, kid string) *signer {
	t.Helper()
	var key any
	var err error
	switch alg {
	case jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512:
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	case jose.ES256:
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case jose.ES384:
		key, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case jose.ES512:
		key, err = ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	case jose.EdDSA:
		_, key, err = ed25519.GenerateKey(rand.Reader)
	default:
		b := make([]byte, 64)
		_, err = rand.Read(b)
		key = b
	}
	if err != nil {
		t.Fatal(err)
	}
	return &signer{alg: alg, kid: kid, key: key}
}

// sign makes a token of the claims.
func (s *signer) sign(t testing.TB, claims map[string]any) string {
	t.Helper()
	opts := &jose.SignerOptions{}
	if s.kid != "" {
		opts.WithHeader("kid", s.kid)
	}
	opts.WithType("JWT")
	sg, err := jose.NewSigner(jose.SigningKey{Algorithm: s.alg, Key: s.key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := sg.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := obj.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// jwks is a JWKS document of the signers' public keys.
func jwks(t testing.TB, signers ...*signer) string {
	t.Helper()
	var set jose.JSONWebKeySet
	for _, s := range signers {
		k := jose.JSONWebKey{Key: s.key, KeyID: s.kid, Algorithm: string(s.alg), Use: "sig"}
		if _, secret := s.key.([]byte); !secret {
			k = k.Public()
		}
		set.Keys = append(set.Keys, k)
	}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// quoted is s as a JSON string.
func quoted(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// compiled is a compiled filter and the store of its stats.
type compiled struct {
	*filterConfig
	store *stats.Store
}

// compile compiles the configuration written in JSON, with the connection
// manager's stat prefix "http.in." and the clock at *now.
func compile(t testing.TB, js string, now *time.Time) *compiled {
	t.Helper()
	cfg, err := compileErr(js, now)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func compileErr(js string, now *time.Time) (*compiled, error) {
	return compileWith(js, now, nil)
}

// compileWith is compileErr with the services that reach clusters.
func compileWith(js string, now *time.Time, svc httpfilter.Services) (*compiled, error) {
	p := &jwtv3.JwtAuthentication{}
	if err := protojson.Unmarshal([]byte(js), p); err != nil {
		return nil, err
	}
	if now == nil {
		n := testNow
		now = &n
	}
	store := stats.NewStore()
	cfg, err := Factory{}.Compile(p, httpfilter.Context{Name: "jwt", Stats: store, StatPrefix: "http.in.", Now: func() time.Time { return *now }, Services: svc})
	if err != nil {
		return nil, err
	}
	return &compiled{filterConfig: cfg.(*filterConfig), store: store}, nil
}

// counter reads one of the filter's counters.
func (c *compiled) counter(name string) uint64 {
	return c.store.Counter("http.in.jwt_authn." + name).Value()
}

// run sends a request through the filter; it returns the stream, the
// local reply's WWW-Authenticate (after EncodeHeaders) and whether the
// request went on.
func (c *compiled) run(s *httpfiltertest.Stream) (passed bool, wwwAuth string) {
	f := c.NewFilter().(*filter)
	st := f.DecodeHeaders(s)
	if st == httpfilter.Continue {
		return true, ""
	}
	f.EncodeHeaders(s)
	v, _ := s.RespHeaders.Get("www-authenticate")
	return false, v
}

// get is a GET of path with header pairs, through the host "host" with
// x-forwarded-proto http.
func get(path string, headers ...string) *httpfiltertest.Stream {
	return httpfiltertest.NewStream("GET", path, append([]string{"x-forwarded-proto", "http"}, headers...)...)
}

// providerJSON is a provider of issuer iss with the JWKS inline, plus
// extra fields (JSON members, comma-led).
func providerJSON(iss, jwksDoc, extra string) string {
	var b strings.Builder
	b.WriteString(`{"issuer":` + quoted(iss) + `,"local_jwks":{"inline_string":` + quoted(jwksDoc) + `}`)
	b.WriteString(extra)
	b.WriteString(`}`)
	return b.String()
}
