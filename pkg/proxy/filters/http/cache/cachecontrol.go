package cache

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Cache-Control, as Envoy's cache filter reads it (RFC 9111 section 5.2):
// directives are comma separated, a directive's argument may be quoted,
// and an argument that is not a non-negative number of seconds leaves the
// directive unset. Directives Envoy does not act on are skipped.

// forever is a duration no age reaches: max-stale without an argument.
const forever = time.Duration(math.MaxInt64)

// requestCacheControl is the request's Cache-Control.
type requestCacheControl struct {
	// mustValidate is no-cache (or Pragma: no-cache without
	// Cache-Control): a stored response is validated before it is used.
	mustValidate bool
	// noStore forbids storing the response to this request.
	noStore bool
	// maxAge, minFresh and maxStale are negative when absent.
	maxAge, minFresh, maxStale time.Duration
}

// parseRequestCacheControl reads a request's Cache-Control; with none,
// Pragma: no-cache means no-cache, as RFC 9111 section 5.4 says.
func parseRequestCacheControl(cacheControl string, hasCacheControl bool, pragma string) requestCacheControl {
	rc := requestCacheControl{maxAge: -1, minFresh: -1, maxStale: -1}
	if !hasCacheControl || cacheControl == "" {
		eachDirective(pragma, func(name, _ string) {
			if name == "no-cache" {
				rc.mustValidate = true
			}
		})
		return rc
	}
	eachDirective(cacheControl, func(name, arg string) {
		switch name {
		case "no-cache":
			rc.mustValidate = true
		case "no-store":
			rc.noStore = true
		case "max-age":
			rc.maxAge = parseSeconds(arg)
		case "min-fresh":
			rc.minFresh = parseSeconds(arg)
		case "max-stale":
			if arg == "" {
				rc.maxStale = forever
			} else {
				rc.maxStale = parseSeconds(arg)
			}
		}
	})
	return rc
}

// responseCacheControl is a response's Cache-Control.
type responseCacheControl struct {
	// mustValidate is no-cache: the response is validated before each
	// use.
	mustValidate bool
	// noStore is no-store or private (a shared cache stores neither).
	noStore bool
	// noStale is must-revalidate or proxy-revalidate: once stale, the
	// response is validated whatever the request's max-stale.
	noStale bool
	// maxAge is s-maxage, else max-age; negative when absent.
	maxAge time.Duration
}

// parseResponseCacheControl reads a response's Cache-Control.
func parseResponseCacheControl(cacheControl string) responseCacheControl {
	rc := responseCacheControl{maxAge: -1}
	eachDirective(cacheControl, func(name, arg string) {
		switch name {
		case "no-cache":
			rc.mustValidate = true
		case "must-revalidate", "proxy-revalidate":
			rc.noStale = true
		case "no-store", "private":
			rc.noStore = true
		case "s-maxage":
			// A shared cache prefers s-maxage over max-age, wherever
			// each appears.
			rc.maxAge = parseSeconds(arg)
		case "max-age":
			if rc.maxAge < 0 {
				rc.maxAge = parseSeconds(arg)
			}
		}
	})
	return rc
}

// eachDirective calls fn with each directive of a Cache-Control (or
// Pragma) value, its name lower-cased and its argument unquoted.
func eachDirective(v string, fn func(name, arg string)) {
	for v != "" {
		var d string
		d, v, _ = strings.Cut(v, ",")
		d = strings.TrimSpace(d)
		if d == "" {
			continue
		}
		name, arg, _ := strings.Cut(d, "=")
		name = strings.ToLower(strings.TrimSpace(name))
		arg = strings.TrimSpace(arg)
		if len(arg) > 1 && arg[0] == '"' && arg[len(arg)-1] == '"' {
			arg = arg[1 : len(arg)-1]
		}
		fn(name, arg)
	}
}

// parseSeconds reads delta-seconds; -1 for an invalid value, which leaves
// its directive unset. Values too large for a Duration saturate.
func parseSeconds(s string) time.Duration {
	if s == "" {
		return -1
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return -1
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > int64(forever/time.Second) {
		return forever
	}
	return time.Duration(n) * time.Second
}

// parseHTTPTime reads an HTTP date in any of the three formats RFC 9110
// section 5.6.7 lets a recipient accept; ok is false for anything else.
func parseHTTPTime(s string) (time.Time, bool) {
	if s == "" {
		return time.Time{}, false
	}
	t, err := http.ParseTime(s)
	return t, err == nil
}

// currentAge is the age of a stored response now (RFC 9111 section 4.2.3,
// with the response delay taken as nil, as Envoy does): the larger of the
// apparent age at reception and the Age header, plus the time it has
// been stored. Whole seconds.
func currentAge(date time.Time, hasDate bool, ageHeader string, responseTime, now time.Time) time.Duration {
	var apparent time.Duration
	if hasDate {
		apparent = max(0, responseTime.Sub(date))
	}
	var ageValue time.Duration
	if n, err := strconv.ParseInt(ageHeader, 10, 64); err == nil && n > 0 && n < int64(forever/time.Second) {
		ageValue = time.Duration(n) * time.Second
	}
	age := max(apparent, ageValue) + now.Sub(responseTime)
	return age.Truncate(time.Second)
}

// freshnessLifetime is how long a stored response is fresh: s-maxage or
// max-age, else Expires minus Date.
func freshnessLifetime(rc responseCacheControl, h headerGetter) time.Duration {
	if rc.maxAge >= 0 {
		return rc.maxAge
	}
	expires, _ := h.Get("expires")
	date, _ := h.Get("date")
	e, eok := parseHTTPTime(expires)
	d, dok := parseHTTPTime(date)
	if !eok || !dok {
		// An Expires that does not parse is in the past (RFC 9111
		// section 5.3).
		return 0
	}
	return e.Sub(d)
}

// requiresValidation decides, as Envoy's LookupRequest does, whether a
// stored response of the given age may be served without asking the
// upstream.
func requiresValidation(req requestCacheControl, resp responseCacheControl, lifetime, age time.Duration) bool {
	if resp.mustValidate || req.mustValidate || (req.maxAge >= 0 && req.maxAge < age) {
		return true
	}
	if age > lifetime {
		allowedStale := req.maxStale >= 0 && req.maxStale > age-lifetime
		return resp.noStale || !allowedStale
	}
	return req.minFresh >= 0 && req.minFresh > lifetime-age
}

// headerGetter reads one header (lower-case names).
type headerGetter interface {
	Get(name string) (string, bool)
}

// cacheableStatus lists the status codes Envoy's cache filter stores.
func cacheableStatus(status int) bool {
	switch status {
	case 200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 451, 501:
		return true
	}
	return false
}
