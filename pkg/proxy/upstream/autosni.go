package upstream

// AutoSNI is a TLS cluster's upstream_http_protocol_options: the
// upstream handshake of each request takes its server name (auto_sni)
// and the SAN the server's certificate must have (auto_san_validation)
// from the request's host after host rewrites, or from the Header
// (override_auto_sni_header, lower case) when the request has it with a
// value.
type AutoSNI struct {
	SNI, SAN bool
	Header   string
}
