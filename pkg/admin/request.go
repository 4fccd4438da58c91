package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// maxBodyBytes bounds the request body the admin reads. Only form-encoded
// parameters travel in bodies, and a megabyte is far more than any form on
// the home page produces.
const maxBodyBytes = 1 << 20

// formContentType is the only body type whose parameters are used; Envoy
// requires it exactly (no charset), and browsers send it exactly.
const formContentType = "application/x-www-form-urlencoded"

// errBodyTooLarge is answered 413.
var errBodyTooLarge = errors.New("request body too large")

// Request is what a handler sees of an admin request.
type Request struct {
	// Path is the normalized path that matched the route.
	Path string
	// Method is the HTTP method (always POST for mutating routes).
	Method string
	// Params are the decoded query parameters, or the form-body parameters
	// when the URL has none; empty values of the route's string and enum
	// parameters are already removed.
	Params Params
	// HTTP is the underlying request, for its headers and context. Its body
	// has already been read.
	HTTP *http.Request
	// Body is the request body as read (at most maxBodyBytes); /tap takes
	// its configuration there.
	Body []byte
}

// Context returns the request's context, cancelled when the client goes
// away; streaming handlers stop on it.
func (r *Request) Context() context.Context { return r.HTTP.Context() }

// requestParams decodes the parameters of hr. Like Envoy, the body is read in
// full before any handler runs; its parameters are used only when the URL
// carries none and the body is declared a form.
func requestParams(hr *http.Request) (Params, []byte, error) {
	body, err := readBody(hr.Body)
	if err != nil {
		return Params{}, nil, err
	}
	p := ParseQuery(hr.URL.RawQuery)
	if p.Len() == 0 && hr.Header.Get("Content-Type") == formContentType {
		p = ParseQuery(string(body))
	}
	return p, body, nil
}

// readBody reads at most maxBodyBytes of body.
func readBody(body io.Reader) ([]byte, error) {
	if body == nil || body == http.NoBody {
		return nil, nil
	}
	b, err := io.ReadAll(io.LimitReader(body, maxBodyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read request body: %w", err)
	}
	if len(b) > maxBodyBytes {
		return nil, errBodyTooLarge
	}
	return b, nil
}
