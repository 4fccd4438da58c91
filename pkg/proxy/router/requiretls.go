package router

import routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

// setRequireTLS compiles the virtual host's require_tls: with EXTERNAL_ONLY
// or ALL, the requests it covers that did not come over TLS get the
// virtual host's SSL redirect route instead of any of its routes, as
// Envoy's virtual host answers them before matching (a 301 to the same
// host and path over https).
func (vh *VirtualHost) setRequireTLS(req routev3.VirtualHost_TlsRequirementType) {
	vh.requireTLS = req
	if req == routev3.VirtualHost_NONE {
		return
	}
	vh.sslRedirect = &Route{VirtualHost: vh, Redirect: &Redirect{Status: 301, Scheme: "https", ssl: true}}
}

// needsRedirectToTLS reports whether require_tls sends req to HTTPS: its
// x-forwarded-proto (which the connection manager set or trusted) is not
// "https" and, with EXTERNAL_ONLY, the request is not internal
// (x-envoy-internal: true).
func (vh *VirtualHost) needsRedirectToTLS(req *Request) bool {
	if proto, _ := req.header("x-forwarded-proto"); proto == "https" {
		return false
	}
	if vh.requireTLS == routev3.VirtualHost_EXTERNAL_ONLY {
		internal, _ := req.header("x-envoy-internal")
		return internal != "true"
	}
	return true
}
