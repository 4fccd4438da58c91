package admin

import (
	"fmt"
	"net/http"
	"runtime/debug"

	"github.com/go-logr/logr"
	"github.com/gorilla/handlers"
)

// serverName is the value of the server header (Envoy sends "envoy").
const serverName = "outrigger"

// middleware wraps dispatch in the layers every admin request crosses, from
// the outside in: the access log (which must see the final status, even a
// recovered panic's), the common headers (which must be on every response,
// even a refusal), panic recovery, and cross-origin protection.
func (a *Admin) middleware(dispatch http.Handler) http.Handler {
	h := a.refuseCrossOrigin(dispatch)
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

// panicLogger adapts the admin logger to gorilla's RecoveryHandlerLogger.
type panicLogger struct{ log logr.Logger }

// Println logs a recovered panic. It runs inside the recovering deferred
// call, so debug.Stack still shows where the handler panicked.
func (p panicLogger) Println(v ...any) {
	p.log.Error(fmt.Errorf("panic: %s", fmt.Sprint(v...)), "admin handler panicked", "stack", string(debug.Stack()))
}
