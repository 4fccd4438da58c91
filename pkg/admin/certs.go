package admin

import adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"

// certsRoutes serves /certs.
func (a *Admin) certsRoutes() []Route {
	if a.opts.Certs == nil {
		return nil
	}
	return []Route{{
		Path:    "/certs",
		Help:    "print certs on machine",
		Handler: a.handleCerts,
	}}
}

// handleCerts answers the Certificates message with zero values and empty
// lists printed, so a context without certificates reads
// {"ca_cert": [], "cert_chain": []} as in Envoy.
func (a *Admin) handleCerts(w *Response, _ *Request) {
	c := a.opts.Certs.Certificates()
	if c == nil {
		c = &adminv3.Certificates{}
	}
	w.Proto(c, true)
}
