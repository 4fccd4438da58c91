package router

// QueryParam is the first value of the query parameter name in path (its
// query string, without the fragment), keys and values percent-decoded
// ('+' stays '+'), as Envoy's parseAndDecodeQueryString reads it; a
// parameter without '=' has the empty value. Filters that read a request's
// query parameter (api_key_auth's key source) share it with the rate limit
// actions.
func QueryParam(path, name string) (string, bool) {
	return decodedQueryValue(query(path), name)
}
