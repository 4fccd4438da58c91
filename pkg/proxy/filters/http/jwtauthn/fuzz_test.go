package jwtauthn

import (
	"testing"

	jose "github.com/go-jose/go-jose/v4"
)

// FuzzToken sends arbitrary tokens through a filter: whatever the token,
// the request is answered or let through, never a crash; only a token
// that verifies passes.
func FuzzToken(f *testing.F) {
	s := newSigner(f, jose.ES256, "k")
	good := s.sign(f, claims(nil))
	c := oneProvider(f, "", nil, s)
	for _, seed := range []string{good, "a.b.c", "..", "e30.e30.", b64(`{"alg":"ES256"}`) + "." + b64(`{"iss":"iss","aud":[1]}`) + ".c2ln",
		b64(`{"alg":"HS256","kid":"k"}`) + "." + b64(`{"iss":"iss","exp":1e400}`) + ".AA"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		st := get("/", "authorization", "Bearer "+tok)
		ok, _ := c.run(st)
		if ok && tokenChars(tok) != good {
			// Only the signed token verifies (followed by what is not
			// a token character, which extraction leaves out).
			t.Fatalf("token %q passed", tok)
		}
		if !ok && st.Reply == nil {
			t.Fatalf("token %q stopped without a reply", tok)
		}
	})
}
