package admin

import (
	"fmt"
	"net"
	"net/http"
	"runtime/debug"
	"strings"

	"github.com/go-logr/logr"
	"github.com/gorilla/handlers"
)

// serverName is the value of the server header (Envoy sends "envoy").
const serverName = "outrigger"

// middleware wraps dispatch in the layers every admin request crosses, from
// the outside in: the access log (which must see the final status, even a
// recovered panic's), the common headers (which must be on every response,
// even a refusal), panic recovery, and the two browser guards (a foreign
// host name, then cross-origin mutations).
func (a *Admin) middleware(dispatch http.Handler) http.Handler {
	h := a.refuseCrossOrigin(dispatch)
	h = a.refuseRebinding(h)
	h = handlers.RecoveryHandler(
		handlers.RecoveryLogger(panicLogger{a.log}),
		handlers.PrintRecoveryStack(false), // panicLogger logs the stack itself
	)(h)
	h = commonHeaders(h)
	if a.opts.AccessLog != nil {
		h = a.accessLog(h)
	}
	return h
}

// commonHeaders sets the headers Envoy's admin puts on every response
// (reference §1.5). Cache-Control is a default that a handler may replace
// before it writes.
func commonHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, hr *http.Request) {
		h := rw.Header()
		h.Set("Server", serverName)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-cache, max-age=0")
		next.ServeHTTP(rw, hr)
	})
}

// refuseCrossOrigin answers 403 to cross-site browser requests with unsafe
// methods, using net/http's CrossOriginProtection (Sec-Fetch-Site, else
// Origin against Host). A page on another site can otherwise make an
// operator's browser POST /quitquitquit to a port-forwarded admin. Requests
// without those headers (curl, the controller) and same-origin forms of the
// home page pass.
func (a *Admin) refuseCrossOrigin(next http.Handler) http.Handler {
	protection := http.NewCrossOriginProtection()
	return http.HandlerFunc(func(rw http.ResponseWriter, hr *http.Request) {
		if err := protection.Check(hr); err != nil {
			w := newResponse(rw, a.log, hr.URL.Path)
			w.Text(http.StatusForbidden, fmt.Sprintf("cross-origin request refused: %v\n", err))
			w.finish()
			return
		}
		next.ServeHTTP(rw, hr)
	})
}

// refuseRebinding answers 403 to a browser's request (one carrying
// Sec-Fetch-Site or Origin) whose Host is a name other than localhost. A
// site whose name an attacker re-points at 127.0.0.1 (DNS rebinding) is
// same-origin to the browser, so the cross-origin check lets its scripts
// read and mutate a port-forwarded admin; the Host header still carries
// the attacker's name. Browsers reach the admin as localhost or by
// address (kubectl port-forward), and tools that send no browser header
// (curl, the controller's placeholder host) are not browsers.
func (a *Admin) refuseRebinding(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, hr *http.Request) {
		browser := hr.Header.Get("Sec-Fetch-Site") != "" || hr.Header.Get("Origin") != ""
		if browser && !localHost(hr.Host) {
			w := newResponse(rw, a.log, hr.URL.Path)
			w.Text(http.StatusForbidden, fmt.Sprintf("browser request for host %q refused: open the admin as localhost or by IP address\n", hr.Host))
			w.finish()
			return
		}
		next.ServeHTTP(rw, hr)
	})
}

// localHost reports whether a Host header names an IP address, localhost
// or a name under .localhost (which browsers resolve to loopback
// themselves, never through DNS).
func localHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if net.ParseIP(host) != nil {
		return true
	}
	host = strings.ToLower(host)
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}

// panicLogger adapts the admin logger to gorilla's RecoveryHandlerLogger.
type panicLogger struct{ log logr.Logger }

// Println logs a recovered panic. It runs inside the recovering deferred
// call, so debug.Stack still shows where the handler panicked.
func (p panicLogger) Println(v ...any) {
	p.log.Error(fmt.Errorf("panic: %s", fmt.Sprint(v...)), "admin handler panicked", "stack", string(debug.Stack()))
}
