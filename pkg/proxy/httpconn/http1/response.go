package http1

// Response is a parsed response head. Its byte slices reference the head
// buffer given to ParseResponse.
type Response struct {
	Version Version
	// Status is the three-digit status code, 100 to 599.
	Status int
	// Reason is the reason phrase as sent (proxies do not forward it).
	Reason  []byte
	Headers Headers

	// ContentLength is -1 when the response has no usable Content-Length.
	ContentLength int64
	// Chunked is set when chunked is the final transfer coding.
	Chunked bool
	// UntilClose is set when a transfer coding other than chunked comes
	// last, so the body runs until the connection closes (RFC 9112 §6.3)
	// even if the response has a length.
	UntilClose bool
	// KeepAlive reports whether the server keeps the connection open for
	// another request once the body is read; see Reusable.
	KeepAlive bool
	// ConnectionTokens are the Connection header's tokens naming other
	// hop-by-hop fields.
	ConnectionTokens [][]byte
}

// ParseResponse parses head, as ReadHead returned it, into resp, reusing
// the capacity of resp's slices. Header names in head are lower-cased in
// place.
func ParseResponse(head []byte, resp *Response, maxHeaders int) error {
	line, rest, err := splitLine(head)
	if err != nil {
		return err
	}
	*resp = Response{Headers: resp.Headers[:0], ConnectionTokens: resp.ConnectionTokens[:0], ContentLength: -1}
	// status-line = HTTP-version SP status-code SP [ reason-phrase ]; the
	// SP after the code is often missing when the reason is empty, and
	// RFC 9112 §4 asks recipients to accept that.
	if len(line) < 12 || line[8] != ' ' || (len(line) > 12 && line[12] != ' ') {
		return ErrStatusLine
	}
	if resp.Version, err = parseVersion(line[:8]); err != nil {
		return err
	}
	code := line[9:12]
	if !isDigit(code[0]) || !isDigit(code[1]) || !isDigit(code[2]) {
		return ErrStatusCode
	}
	resp.Status = int(code[0]-'0')*100 + int(code[1]-'0')*10 + int(code[2]-'0')
	if resp.Status < 100 || resp.Status > 599 {
		return ErrStatusCode
	}
	if len(line) > 12 {
		resp.Reason = line[13:]
		for _, c := range resp.Reason {
			if chars[c]&classValue == 0 {
				return ErrStatusLine
			}
		}
	}
	if resp.Headers, err = parseFields(rest, resp.Headers, maxHeaders); err != nil {
		return err
	}
	return resp.interpretFields()
}

// interpretFields reads the fields that govern framing and persistence.
func (r *Response) interpretFields() error {
	r.KeepAlive = r.Version == HTTP11
	var lastCoding []byte
	encoded := false
	for i := range r.Headers {
		h := &r.Headers[i]
		switch string(h.Name) {
		case "content-length":
			n, err := parseContentLength(h.Value)
			if err != nil || (r.ContentLength >= 0 && n != r.ContentLength) {
				return ErrContentLength
			}
			r.ContentLength = n
		case "transfer-encoding":
			encoded = true
			for v := h.Value; len(v) > 0; {
				var tok []byte
				tok, v = NextToken(v)
				if len(tok) > 0 {
					lastCoding = tok
				}
			}
		case "connection":
			r.ConnectionTokens = connection(h.Value, r.Version, &r.KeepAlive, r.ConnectionTokens)
		}
	}
	if encoded {
		// Transfer-Encoding overrides Content-Length (RFC 9112 §6.3);
		// a message with both may be an attempt at smuggling, and an
		// HTTP/1.0 message with it has faulty framing (§6.1): either
		// way the connection is not reused afterwards.
		if r.ContentLength >= 0 || r.Version == HTTP10 {
			r.KeepAlive = false
		}
		r.ContentLength = -1
		if r.Version == HTTP11 && EqualFold(lastCoding, "chunked") {
			r.Chunked = true
		} else {
			r.UntilClose = true
		}
	}
	return nil
}

// BodyKind says how a response body is framed, given what it answers:
// responses to HEAD, 1xx, 204 and 304 responses have none, whatever
// their fields say (RFC 9112 §6.3).
func (r *Response) BodyKind(requestIsHead bool) BodyKind {
	switch {
	case requestIsHead || r.Status < 200 || r.Status == 204 || r.Status == 304:
		return BodyNone
	case r.Chunked:
		return BodyChunked
	case r.ContentLength >= 0 && !r.UntilClose:
		return BodyLength
	default:
		return BodyUntilClose
	}
}

// Reusable reports whether the connection can carry another request once a
// body of the given kind has been read to its end.
func (r *Response) Reusable(kind BodyKind) bool {
	return r.KeepAlive && kind != BodyUntilClose
}
