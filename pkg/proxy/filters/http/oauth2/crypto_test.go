package oauth2

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
)

// envoyHMAC is the HMAC cookie as Envoy's encodeHmacBase64 computes it,
// written out here apart from the filter's code.
func envoyHMAC(secret, payload string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(payload))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

func TestSessionHMAC(t *testing.T) {
	want := envoyHMAC("key", "example.com\n1700000000\nat\nid\nrt")
	if got := sessionHMAC([]byte("key"), "example.com", "1700000000", "at", "id", "rt"); got != want {
		t.Fatalf("sessionHMAC = %q, want %q", got, want)
	}
	// Empty tokens still take their place in the payload.
	if got, want := sessionHMAC([]byte("key"), "h", "1", "", "", ""), envoyHMAC("key", "h\n1\n\n\n"); got != want {
		t.Fatalf("sessionHMAC with empty tokens = %q, want %q", got, want)
	}
	// The older hexadecimal form is accepted too.
	mac := hmac.New(sha256.New, []byte("key"))
	mac.Write([]byte("h\n1\nat\n\n"))
	hexForm := base64.StdEncoding.EncodeToString([]byte(hex.EncodeToString(mac.Sum(nil))))
	if !validHMAC([]byte("key"), hexForm, "h", "1", "at", "", "") {
		t.Fatal("the hexadecimal HMAC form is refused")
	}
	for name, ok := range map[string]bool{
		"right":          validHMAC([]byte("key"), want, "example.com", "1700000000", "at", "id", "rt"),
		"other secret":   !validHMAC([]byte("other"), want, "example.com", "1700000000", "at", "id", "rt"),
		"other domain":   !validHMAC([]byte("key"), want, "example.org", "1700000000", "at", "id", "rt"),
		"later expiry":   !validHMAC([]byte("key"), want, "example.com", "1700000001", "at", "id", "rt"),
		"other token":    !validHMAC([]byte("key"), want, "example.com", "1700000000", "at2", "id", "rt"),
		"moved boundary": !validHMAC([]byte("key"), want, "example.com", "1700000000", "at\nid", "", "rt"),
		"empty":          !validHMAC([]byte("key"), "", "example.com", "1700000000", "at", "id", "rt"),
	} {
		if !ok {
			t.Errorf("%s: wrong verdict", name)
		}
	}
}

// envoyEncrypt seals as Envoy's encrypt does, written out here apart from
// the filter's code: AES-256-CBC, key SHA-256(secret), PKCS#7, the IV
// first, base64url without padding.
func envoyEncrypt(t *testing.T, plaintext, secret string, iv []byte) string {
	t.Helper()
	key := sha256.Sum256([]byte(secret))
	block, err := aes.NewCipher(key[:])
	if err != nil {
		t.Fatal(err)
	}
	pad := 16 - len(plaintext)%16
	body := []byte(plaintext + strings.Repeat(string(rune(pad)), pad))
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(body, body)
	return base64.RawURLEncoding.EncodeToString(append(append([]byte{}, iv...), body...))
}

func TestEncryption(t *testing.T) {
	iv := []byte("0123456789abcdef")
	for _, plain := range []string{"", "at-1", "sixteen-bytes-xx", strings.Repeat("token.", 100)} {
		sealed := envoyEncrypt(t, plain, "secret", iv)
		got, err := decrypt(sealed, []byte("secret"))
		if err != nil || got != plain {
			t.Fatalf("decrypt(Envoy's sealing of %q) = %q, %v", plain, got, err)
		}
		mine := encrypt(plain, []byte("secret"))
		if got, err := decrypt(mine, []byte("secret")); err != nil || got != plain {
			t.Fatalf("round trip of %q = %q, %v", plain, got, err)
		}
		if strings.ContainsAny(mine, "+/=") {
			t.Fatalf("sealed value %q is not base64url without padding", mine)
		}
	}
	a, b := encrypt("same", []byte("k")), encrypt("same", []byte("k"))
	if a == b {
		t.Fatal("two sealings of one token are equal: the IV is not random")
	}
	// Padding may check out by chance with another key (1 in 256 per
	// try); the plaintext never does.
	if got, err := decrypt(a, []byte("other")); err == nil && got == "same" {
		t.Fatal("decrypted with the wrong key")
	}
	for _, bad := range []string{"", "at-1", "!!!", base64.RawURLEncoding.EncodeToString(iv), base64.RawURLEncoding.EncodeToString(append(iv, 1, 2, 3))} {
		if _, err := decrypt(bad, []byte("secret")); err == nil {
			t.Errorf("decrypt(%q) succeeded", bad)
		}
	}
}

func TestCSRFTokenAndState(t *testing.T) {
	secret := []byte("hmac")
	tok := csrfToken(secret, "00112233aabbccdd")
	if want := "00112233aabbccdd." + envoyHMAC("hmac", "00112233aabbccdd"); tok != want {
		t.Fatalf("csrfToken = %q, want %q", tok, want)
	}
	if !validCSRFToken(secret, tok) || validCSRFToken([]byte("other"), tok) || validCSRFToken(secret, "00112233aabbccde"+tok[16:]) || validCSRFToken(secret, "nodot") {
		t.Fatal("CSRF token verdicts are wrong")
	}
	st := flowState{URL: "https://example.com/a?b=<c>&d", CSRFToken: tok, FlowID: "00112233aabbccdd"}
	enc := encodeState(st)
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"url":"https://example.com/a?b=<c>&d","csrf_token":"` + tok + `","flow_id":"00112233aabbccdd"}`; string(raw) != want {
		t.Fatalf("state JSON = %s, want %s", raw, want)
	}
	got, _, msg := decodeState(enc)
	if msg != "" || got != st {
		t.Fatalf("decodeState = %+v, %q", got, msg)
	}
	for state, want := range map[string]string{
		"%%%": "State query param is not a valid JSON: %%%",
		base64.RawURLEncoding.EncodeToString([]byte("{")):                "State query param is not a valid JSON: {",
		base64.RawURLEncoding.EncodeToString([]byte(`{"url":"x"}`)):      `State query param does not contain url or CSRF token: {"url":"x"}`,
		base64.RawURLEncoding.EncodeToString([]byte(`{"csrf_token":1}`)): `State query param does not contain url or CSRF token: {"csrf_token":1}`,
	} {
		if _, _, msg := decodeState(state); msg != want {
			t.Errorf("decodeState(%q) = %q, want %q", state, msg, want)
		}
	}
}

func TestPKCE(t *testing.T) {
	// RFC 7636, appendix B.
	if got := codeChallenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"); got != "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM" {
		t.Fatalf("codeChallenge = %q", got)
	}
	v := codeVerifier()
	if raw, err := base64.RawURLEncoding.DecodeString(v); err != nil || len(raw) != 32 {
		t.Fatalf("codeVerifier %q is not 32 octets base64url", v)
	}
	if id := flowID(); len(id) != 16 || strings.Trim(id, "0123456789abcdef") != "" {
		t.Fatalf("flowID %q is not 16 hexadecimal digits", id)
	}
}
