package oauth2

import (
	"errors"
	"strconv"

	oauth2v3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/oauth2/v3"
)

// Token cookie chunking: a token whose cookie would be larger than
// max_cookie_size is written as the cookies <name>_0 .. <name>_<n-1>,
// each holding a slice of the (sealed) value, and <name>_chunks holding
// n. Requests' chunks are always joined back, whether or not chunking is
// configured, before the token is decrypted (the HMAC covers the
// decrypted value).
const (
	chunkSeparator     = "_"
	chunkCountSuffix   = "_chunks"
	defaultMaxCookie   = 4096
	defaultMaxChunks   = 8
	maxChunksOnRequest = 16
)

// chunking is token_cookie_chunking.
type chunking struct {
	maxCookieSize, maxChunks int
}

// compileChunking reads token_cookie_chunking with Envoy's bounds;
// errors name the field below it.
func compileChunking(p *oauth2v3.TokenCookieChunking) (*chunking, error) {
	c := &chunking{maxCookieSize: defaultMaxCookie, maxChunks: defaultMaxChunks}
	if v := p.GetMaxCookieSize(); v != nil {
		if v.GetValue() < 512 || v.GetValue() > 4096 {
			return nil, errors.New("max_cookie_size: must be between 512 and 4096")
		}
		c.maxCookieSize = int(v.GetValue())
	}
	if v := p.GetMaxChunks(); v != nil {
		if v.GetValue() < 2 || v.GetValue() > maxChunksOnRequest {
			return nil, errors.New("max_chunks: must be between 2 and 16")
		}
		c.maxChunks = int(v.GetValue())
	}
	return c, nil
}

// chunkName is the name of a token cookie's chunk i.
func chunkName(name string, i int) string { return name + chunkSeparator + strconv.Itoa(i) }

// split is the Set-Cookie values of a token cookie: one, when it fits
// max_cookie_size (or chunking is off), else its chunks and their count.
// A token too large for max_chunks chunks is written whole, as without
// chunking.
func (ch *chunking) split(name, value, maxAge, domain string, s cookieSettings) []string {
	whole := setCookie(name, value, maxAge, domain, s)
	if ch == nil || len(whole) <= ch.maxCookieSize {
		return []string{whole}
	}
	// The attributes of the widest chunk cookie (a two-digit index).
	overhead := len(setCookie(chunkName(name, 10), "", maxAge, domain, s))
	room := ch.maxCookieSize - overhead
	if room <= 0 {
		return []string{whole}
	}
	n := (len(value) + room - 1) / room
	if n > ch.maxChunks {
		return []string{whole}
	}
	out := make([]string, 0, n+1)
	for i := 0; i < n; i++ {
		end := min((i+1)*room, len(value))
		out = append(out, setCookie(chunkName(name, i), value[i*room:end], maxAge, domain, s))
	}
	return append(out, setCookie(name+chunkCountSuffix, strconv.Itoa(n), maxAge, domain, s))
}

// chunkNames are the names of a token cookie's chunk cookies a request
// carried: its count cookie and every <name>_<i> it names.
type chunkNames map[string][]string

// joinChunks replaces, for each token cookie name, a complete set of
// chunks (a count of 1 to 16 and every chunk it names) with the joined
// cookie, in place of the whole one if the request also had it. seen
// records the chunk cookies found, complete or not, for their deletion.
func joinChunks(jar cookieJar, names []string) (out cookieJar, seen chunkNames, joined bool) {
	for _, name := range names {
		countName := name + chunkCountSuffix
		if !jar.has(countName) {
			continue
		}
		if seen == nil {
			seen = chunkNames{}
		}
		seen[name] = append(seen[name], countName)
		n, err := strconv.Atoi(jar.get(countName))
		complete := err == nil && n >= 1 && n <= maxChunksOnRequest
		var value []byte
		for i := 0; i < maxChunksOnRequest; i++ {
			cn := chunkName(name, i)
			if !jar.has(cn) {
				if i < n {
					complete = false
				}
				continue
			}
			seen[name] = append(seen[name], cn)
			if i < n {
				value = append(value, jar.get(cn)...)
			}
		}
		drop := seen[name]
		jar = jar.remove(func(c string) bool {
			for _, d := range drop {
				if c == d {
					return true
				}
			}
			return false
		})
		if complete {
			jar = jar.set(name, string(value))
			joined = true
		}
	}
	return jar, seen, joined
}
