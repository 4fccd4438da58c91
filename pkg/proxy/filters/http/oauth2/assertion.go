package oauth2

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	oauth2v3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/oauth2/v3"
	jose "github.com/go-jose/go-jose/v4"
)

// clientAssertionType is the client_assertion_type of RFC 7523's client
// authentication.
const clientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// defaultAssertionLifetime is Envoy's default assertion_lifetime.
const defaultAssertionLifetime = 60 * time.Second

// privateKeyJWT is the PRIVATE_KEY_JWT client authentication: each token
// request carries a JWT the client signs with the private key of
// token_secret (RFC 7523 section 2.2), whose claims are Envoy's: iss and
// sub the client id, aud the assertion_audience (the token endpoint's
// URI by default), iat now, exp now plus the assertion_lifetime, and a
// random jti.
type privateKeyJWT struct {
	alg      jose.SignatureAlgorithm
	lifetime time.Duration
	audience string
	// key caches the last key parsed, with the secret it came from: the
	// secret may change (SDS), a parse per token request is wasted work.
	key atomic.Pointer[parsedKey]
}

// parsedKey is a secret's private key, or why it is none.
type parsedKey struct {
	pem []byte
	key any
	err error
}

// compilePrivateKeyJWT reads private_key_jwt_config (nil: the defaults);
// errors name the field below it. tokenURI is the default audience.
func compilePrivateKeyJWT(p *oauth2v3.PrivateKeyJwtConfig, tokenURI string) (*privateKeyJWT, error) {
	j := &privateKeyJWT{alg: jose.RS256, lifetime: defaultAssertionLifetime, audience: tokenURI}
	switch p.GetSigningAlgorithm() {
	case oauth2v3.PrivateKeyJwtConfig_RS384:
		j.alg = jose.RS384
	case oauth2v3.PrivateKeyJwtConfig_RS512:
		j.alg = jose.RS512
	case oauth2v3.PrivateKeyJwtConfig_ES256:
		j.alg = jose.ES256
	case oauth2v3.PrivateKeyJwtConfig_ES384:
		j.alg = jose.ES384
	case oauth2v3.PrivateKeyJwtConfig_ES512:
		j.alg = jose.ES512
	case oauth2v3.PrivateKeyJwtConfig_RS256:
	default:
		return nil, fmt.Errorf("signing_algorithm: unknown value %d", p.GetSigningAlgorithm())
	}
	if d := p.GetAssertionLifetime(); d != nil {
		if d.CheckValid() != nil || d.AsDuration().Truncate(time.Second) < time.Second {
			return nil, errors.New("assertion_lifetime: must be at least 1s")
		}
		j.lifetime = d.AsDuration().Truncate(time.Second)
	}
	if a := p.GetAssertionAudience(); a != "" {
		j.audience = a
	}
	return j, nil
}

// privateKey parses a PEM private key (PKCS #8, PKCS #1 or SEC 1) and
// checks it fits the algorithm: RSA for RS*, EC on the algorithm's curve
// for ES*.
func (j *privateKeyJWT) privateKey(pemBytes []byte) (any, error) {
	if k := j.key.Load(); k != nil && string(k.pem) == string(pemBytes) {
		return k.key, k.err
	}
	key, err := parsePrivateKey(pemBytes, j.alg)
	j.key.Store(&parsedKey{pem: append([]byte(nil), pemBytes...), key: key, err: err})
	return key, err
}

func parsePrivateKey(pemBytes []byte, alg jose.SignatureAlgorithm) (any, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, errors.New("failed to parse the private key PEM for JWT signing")
	}
	var key any
	var err error
	switch block.Type {
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("failed to parse the private key PEM for JWT signing: %v", err)
	}
	var curve elliptic.Curve
	switch alg {
	case jose.ES256:
		curve = elliptic.P256()
	case jose.ES384:
		curve = elliptic.P384()
	case jose.ES512:
		curve = elliptic.P521()
	}
	switch k := key.(type) {
	case *rsa.PrivateKey:
		if curve != nil {
			return nil, fmt.Errorf("an RSA key cannot sign %s", alg)
		}
	case *ecdsa.PrivateKey:
		if curve == nil {
			return nil, fmt.Errorf("an EC key cannot sign %s", alg)
		}
		if k.Curve != curve {
			return nil, fmt.Errorf("%s needs a key on %s, not %s", alg, curve.Params().Name, k.Curve.Params().Name)
		}
	default:
		return nil, fmt.Errorf("a %T cannot sign %s", key, alg)
	}
	return key, nil
}

// assertion is a signed client assertion for clientID, made now with the
// private key in pemBytes; kid, when set, goes in its header.
func (j *privateKeyJWT) assertion(clientID string, pemBytes []byte, kid string, now time.Time) (string, error) {
	key, err := j.privateKey(pemBytes)
	if err != nil {
		return "", err
	}
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if kid != "" {
		opts = opts.WithHeader("kid", kid)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: j.alg, Key: key}, opts)
	if err != nil {
		return "", fmt.Errorf("failed to sign the JWT assertion: %v", err)
	}
	claims, err := json.Marshal(struct {
		Iss string `json:"iss"`
		Sub string `json:"sub"`
		Aud string `json:"aud"`
		Exp int64  `json:"exp"`
		Iat int64  `json:"iat"`
		Jti string `json:"jti"`
	}{clientID, clientID, j.audience, now.Add(j.lifetime).Unix(), now.Unix(), newJTI()})
	if err != nil {
		return "", err
	}
	sig, err := signer.Sign(claims)
	if err != nil {
		return "", fmt.Errorf("failed to sign the JWT assertion: %v", err)
	}
	return sig.CompactSerialize()
}

// newJTI is a random UUID (version 4), the assertion's jti.
func newJTI() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// The entries of a multi-entry token_secret for PRIVATE_KEY_JWT.
const (
	secretPrivateKey = "private_key"
	secretKeyID      = "key_id"
)

// signingKey is token_secret's private key and key id: a single-value
// secret is the PEM key alone; a multi-entry one has private_key and,
// optionally, key_id. Empty while the secret has not arrived.
func (c *config) signingKey() (pemBytes []byte, kid string) {
	if c.clientSecret.MultiEntry() {
		return c.clientSecret.Entry(secretPrivateKey), string(c.clientSecret.Entry(secretKeyID))
	}
	return c.clientSecret.Bytes(), ""
}

// checkPrivateKey checks a token_secret already known for
// PRIVATE_KEY_JWT: a private key that fits the signing algorithm (one
// coming later by SDS is checked when used).
func (c *config) checkPrivateKey() error {
	if !c.clientSecret.MultiEntry() && len(c.clientSecret.Bytes()) == 0 {
		return nil
	}
	pemBytes, _ := c.signingKey()
	if len(pemBytes) == 0 {
		return errors.New("a multi-entry secret for PRIVATE_KEY_JWT needs a private_key entry")
	}
	_, err := c.jwt.privateKey(pemBytes)
	return err
}
