package upstream

// HTTP1Format is how requests are written on a cluster's HTTP/1.1
// connections (its http_protocol_options).
type HTTP1Format struct {
	// ProperCase writes field names in proper case
	// (header_key_format.proper_case_words).
	ProperCase bool
	// FullyQualifiedURL writes the request target in absolute form,
	// scheme://host/path, as Envoy's send_fully_qualified_url does for
	// every request but a CONNECT.
	FullyQualifiedURL bool
	// Secure: the cluster's transport is TLS, the scheme of the absolute
	// form when the connection manager's scheme_header_transformation
	// says match_upstream.
	Secure bool
}
