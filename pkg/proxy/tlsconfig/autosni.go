package tlsconfig

// HostOverride is the Override of a connection to a host known by name,
// with the upstream options auto_sni and auto_san_validation, as a dynamic
// forward proxy cluster always has them: the client sends serverName as
// its SNI, and, when the context validates the server's certificate, the
// certificate must be valid for serverName in place of the configured SAN
// matchers; the trusted CA and the pins still apply.
func (cl *Client) HostOverride(serverName string) Override {
	ov := Override{ServerName: serverName}
	if cl.current().v.active() {
		ov.VerifySAN = serverName
	}
	return ov
}
