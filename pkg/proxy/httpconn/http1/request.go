package http1

import "bytes"

// Request is a parsed request head. Its byte slices reference the head
// buffer given to ParseRequest.
type Request struct {
	// Method and Target are the request line's first two parts, as sent.
	Method []byte
	Target []byte
	// Path is what routes match and what goes upstream: the target in
	// origin form ("/a?b"), the path of an absolute-form target ("/" when
	// it has none), "*" for asterisk form, empty for authority form
	// (CONNECT).
	Path []byte
	// Authority is the host the request is for: an absolute-form target's
	// authority, else the Host header. Empty for an HTTP/1.0 request
	// without Host.
	Authority []byte
	// Version is the request line's protocol version.
	Version Version
	// Headers are the header fields as received.
	Headers Headers

	// Body framing (RFC 9112 §6): ContentLength is -1 when the request has
	// no Content-Length; Chunked is set for Transfer-Encoding: chunked.
	// Without either the request has no body.
	ContentLength int64
	Chunked       bool

	// KeepAlive reports whether the client lets the connection carry
	// another request after this one (HTTP/1.1 without Connection: close,
	// or HTTP/1.0 with Connection: keep-alive).
	KeepAlive bool
	// Expect100 is set for Expect: 100-continue on an HTTP/1.1 request.
	Expect100 bool
	// ConnectionTokens holds the Connection header's value(s) naming
	// other fields, which are hop-by-hop too (RFC 9110 §7.6.1); the
	// forwarder drops the fields they name.
	ConnectionTokens [][]byte
	// AbsoluteForm is set when the target was an absolute URI.
	AbsoluteForm bool

	// pathBuf holds Path when the target's bytes cannot.
	pathBuf []byte
}

// HasBody reports whether a body follows the head.
func (r *Request) HasBody() bool { return r.Chunked || r.ContentLength > 0 }

// IsHead reports whether the method is HEAD, whose responses have no body.
func (r *Request) IsHead() bool { return string(r.Method) == "HEAD" }

// RequestOptions are a server's choices in reading request heads.
type RequestOptions struct {
	// MaxHeaders bounds the number of header fields.
	MaxHeaders int
	// AllowChunkedLength accepts a request with both Content-Length and
	// Transfer-Encoding: chunked, whose Content-Length is then removed
	// (Envoy's allow_chunked_length); otherwise it is refused.
	AllowChunkedLength bool
	// KeepAbsoluteURL leaves an absolute-form target whole as the
	// request's Path, its host taken from the Host field as for any other
	// form (Envoy's allow_absolute_url: false). The connection manager
	// then refuses the path, which does not begin with "/".
	KeepAbsoluteURL bool
}

// ParseRequest parses head, as ReadHead returned it, into req, reusing the
// capacity of req's slices. Header names in head are lower-cased in place.
// The errors are *Error values whose Status is the response to send.
func ParseRequest(head []byte, req *Request, opts RequestOptions) error {
	line, rest, err := splitLine(head)
	if err != nil {
		return err
	}
	*req = Request{
		Headers:          req.Headers[:0],
		ConnectionTokens: req.ConnectionTokens[:0],
		pathBuf:          req.pathBuf[:0],
		ContentLength:    -1,
	}
	sp := bytes.IndexByte(line, ' ')
	if sp < 0 {
		return ErrRequestLine
	}
	req.Method = line[:sp]
	if !isToken(req.Method) {
		return ErrMethod
	}
	line = line[sp+1:]
	sp = bytes.IndexByte(line, ' ')
	if sp <= 0 {
		return ErrRequestLine
	}
	req.Target = line[:sp]
	for _, c := range req.Target {
		if chars[c]&classTarget == 0 {
			return ErrTarget
		}
	}
	if req.Version, err = parseVersion(line[sp+1:]); err != nil {
		return err
	}
	if req.Headers, err = parseFields(rest, req.Headers, opts.MaxHeaders); err != nil {
		return err
	}
	if err := req.interpretFields(opts.AllowChunkedLength); err != nil {
		return err
	}
	return req.interpretTarget(opts.KeepAbsoluteURL)
}

// interpretFields reads the fields that govern framing, persistence and
// routing; allowChunkedLength is RequestOptions.AllowChunkedLength.
func (r *Request) interpretFields(allowChunkedLength bool) error {
	r.KeepAlive = r.Version == HTTP11
	hosts := 0
	var host, te []byte
	teCount := 0
	for i := range r.Headers {
		h := &r.Headers[i]
		switch string(h.Name) {
		case "host":
			hosts++
			host = h.Value
		case "content-length":
			n, err := parseContentLength(h.Value)
			if err != nil || (r.ContentLength >= 0 && n != r.ContentLength) {
				return ErrContentLength
			}
			r.ContentLength = n
		case "transfer-encoding":
			teCount++
			te = h.Value
		case "connection":
			r.ConnectionTokens = connection(h.Value, r.Version, &r.KeepAlive, r.ConnectionTokens)
		case "expect":
			if r.Version == HTTP11 && EqualFold(h.Value, "100-continue") {
				r.Expect100 = true
			}
		}
	}
	if hosts > 1 {
		return ErrMultipleHost
	}
	if hosts == 0 && r.Version == HTTP11 {
		return ErrMissingHost
	}
	r.Authority = host
	if teCount > 0 {
		if r.Version == HTTP10 {
			// RFC 9112 §6.1: Transfer-Encoding in an HTTP/1.0 message
			// is faulty framing.
			return ErrTransferEncoding
		}
		if r.ContentLength >= 0 && !allowChunkedLength {
			// Both framings at once is how requests are smuggled past
			// an intermediary; refuse it (RFC 9112 §6.1 allows that).
			return ErrLengthAndEncoding
		}
		if teCount > 1 {
			return ErrTransferEncoding
		}
		if err := requireChunked(te); err != nil {
			return err
		}
		r.Chunked = true
		if r.ContentLength >= 0 {
			// Chunked framing wins (RFC 9112 §6.3); the length goes,
			// so that no one further on reads it.
			r.ContentLength = -1
			r.removeContentLength()
		}
	}
	return nil
}

// removeContentLength drops the Content-Length fields, keeping the order
// of the others.
func (r *Request) removeContentLength() {
	kept := r.Headers[:0]
	for _, h := range r.Headers {
		if string(h.Name) != "content-length" {
			kept = append(kept, h)
		}
	}
	r.Headers = kept
}

// connection reads one Connection header value of a message of the given
// version: close and keep-alive (HTTP/1.0 only) set *keepAlive, and the
// other tokens, which name hop-by-hop fields, are appended to tokens.
func connection(v []byte, version Version, keepAlive *bool, tokens [][]byte) [][]byte {
	for len(v) > 0 {
		var tok []byte
		tok, v = NextToken(v)
		switch {
		case len(tok) == 0:
		case EqualFold(tok, "close"):
			*keepAlive = false
		case EqualFold(tok, "keep-alive"):
			if version == HTTP10 {
				*keepAlive = true
			}
		default:
			tokens = append(tokens, tok)
		}
	}
	return tokens
}

// requireChunked accepts exactly "chunked" as a request's transfer coding:
// chunked must be last (RFC 9112 §6.3), and the proxy implements no other
// coding.
func requireChunked(te []byte) error {
	first, rest := NextToken(te)
	if !EqualFold(first, "chunked") {
		if HasToken(te, "chunked") || len(first) == 0 {
			return ErrTransferEncoding
		}
		return ErrUnsupportedEncoding
	}
	if len(rest) > 0 {
		// "chunked, gzip": chunked is not the final coding.
		return ErrTransferEncoding
	}
	return nil
}

// interpretTarget derives Path and, for an absolute-form target, Authority
// (RFC 9112 §3.2); keepAbsolute is RequestOptions.KeepAbsoluteURL.
func (r *Request) interpretTarget(keepAbsolute bool) error {
	t := r.Target
	switch {
	case t[0] == '/':
		r.Path = t
	case len(t) == 1 && t[0] == '*':
		r.Path = t
	case string(r.Method) == "CONNECT":
		r.Authority = t
	case keepAbsolute:
		r.Path = t
	default:
		scheme := bytes.Index(t, []byte("://"))
		if scheme <= 0 || !isToken(t[:scheme]) {
			return ErrTarget
		}
		rest := t[scheme+3:]
		end := bytes.IndexAny(rest, "/?")
		if end < 0 {
			end = len(rest)
		}
		if end == 0 {
			return ErrTarget
		}
		r.Authority = rest[:end]
		r.Path = rest[end:]
		if len(r.Path) == 0 || r.Path[0] == '?' {
			// "http://h" and "http://h?q" have the path "/" (RFC 9112
			// §3.2.1); the target holds no '/' to point at, so the path
			// is built in the request's own reusable buffer.
			r.pathBuf = append(append(r.pathBuf[:0], '/'), r.Path...)
			r.Path = r.pathBuf
		}
		r.AbsoluteForm = true
	}
	return nil
}
