package admin

import (
	"errors"
	"fmt"
	"net/http"
)

// dispatch finds the route of a request and runs it, enforcing the rules
// that every endpoint shares (reference §1.2–§1.4):
//   - the path is normalized, then must equal a route's path exactly;
//     anything else is 404 with the help text;
//   - a mutating route runs only for POST; any other method is 400 with no
//     effect (the specification's status; Envoy answers 405);
//   - parameters come from the query, or from a form body when the query
//     has none, and empty string/enum values count as absent.
func (a *Admin) dispatch(rw http.ResponseWriter, hr *http.Request) {
	path := normalizePath(hr.URL.Path)
	w := newResponse(rw, a.log, path)
	a.serve(w, hr, path)
	// Not deferred: after a panic the headers must stay unsent, so that the
	// recovery middleware can still answer 500.
	w.finish()
	if dl := a.log.V(1); dl.Enabled() {
		// Envoy's admin debug record of every request.
		dl.Info("request complete: path: "+path, "method", hr.Method)
	}
}

// serve answers one request through w.
func (a *Admin) serve(w *Response, hr *http.Request, path string) {
	if a.opts.AllowPath != nil && !a.opts.AllowPath(pathAndQuery(path, hr)) {
		// admin.allow_paths: anything outside the list is forbidden,
		// known endpoint or not.
		w.Text(http.StatusForbidden, "path not allowed by admin.allow_paths\n")
		return
	}
	route, ok := a.byPath[path]
	if !ok || !route.present() {
		w.Text(http.StatusNotFound, "invalid path. "+a.helpNow())
		return
	}
	if route.Mutates && hr.Method != http.MethodPost {
		// Envoy's exact log line: operators grep for it.
		a.log.Error(nil, fmt.Sprintf("admin path %q mutates state, method=%s rather than POST", path, hr.Method))
		w.Text(http.StatusBadRequest, fmt.Sprintf("Method %s not allowed, POST required.", hr.Method))
		return
	}
	params, body, err := requestParams(hr)
	switch {
	case errors.Is(err, errBodyTooLarge):
		w.Text(http.StatusRequestEntityTooLarge, fmt.Sprintf("%v: the limit is %d bytes\n", err, maxBodyBytes))
		return
	case err != nil:
		w.Text(http.StatusBadRequest, fmt.Sprintf("%v\n", err))
		return
	}
	route.Handler(w, &Request{
		Path:   path,
		Method: hr.Method,
		Params: dropEmpty(params, route.Params),
		HTTP:   hr,
		Body:   body,
	})
}

// pathAndQuery is the normalized path with the request's query, as the
// :path header Envoy's admin.allow_paths matchers see.
func pathAndQuery(path string, hr *http.Request) string {
	if hr.URL.RawQuery == "" && !hr.URL.ForceQuery {
		return path
	}
	return path + "?" + hr.URL.RawQuery
}

// dropEmpty removes the empty values of the declared string and enum
// parameters: the home page's forms submit every input, filled or not, and
// "?format=" must mean the default format, not an invalid one.
func dropEmpty(p Params, declared []Param) Params {
	for _, d := range declared {
		if d.Kind == ParamFlag {
			continue
		}
		if v, ok := p.Lookup(d.Name); ok && v == "" {
			p = p.without(d.Name)
		}
	}
	return p
}
