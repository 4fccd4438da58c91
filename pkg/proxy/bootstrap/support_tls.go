package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedTLS lists the TLS fields Outrigger implements (see
// supportedCore and pkg/proxy/tlsconfig): the TLS transport socket of
// listeners' filter chains and of clusters (upstream TLS), and secrets.
// Not implemented, so refused with their path:
// private key providers, encrypted
// PKCS#8 keys (by tlsconfig), signed certificate timestamps,
// signature_algorithms where the peer signs (Go's crypto/tls cannot
// restrict the peer's algorithms), the CNSA compliance policies, custom
// handshakers and certificate selectors, and the SPIFFE validator's
// workload_trust_domain.
var supportedTLS = map[protoreflect.FullName]fieldSupport{
	"envoy.config.listener.v3.FilterChain.transport_socket":                 {},
	"envoy.config.listener.v3.FilterChain.transport_socket_connect_timeout": {},
	"envoy.config.core.v3.TransportSocket.name":                             {},
	"envoy.config.core.v3.TransportSocket.typed_config":                     {category: "envoy.transport_sockets.downstream", categories: []string{"envoy.transport_sockets.upstream"}},

	// Upstream TLS (clusters' transport_socket). allow_renegotiation is
	// refused by the cluster with its own error.
	"envoy.config.cluster.v3.Cluster.transport_socket":                                 {},
	"envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext.common_tls_context":  {},
	"envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext.sni":                 {},
	"envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext.allow_renegotiation": {},
	"envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext.max_session_keys":    {},
	// The host's hostname as SNI, and the SNI sent checked against the
	// certificate's DNS SANs (see tlsconfig.Client.HandshakeWith).
	"envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext.auto_host_sni":           {},
	"envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext.auto_sni_san_validation": {},

	// HTTP/2 or HTTP/1.1 by ALPN on TLS clusters (HTTP/3 is refused).
	"envoy.extensions.upstreams.http.v3.HttpProtocolOptions.auto_config":                           {},
	"envoy.extensions.upstreams.http.v3.HttpProtocolOptions.AutoHttpConfig.http_protocol_options":  {},
	"envoy.extensions.upstreams.http.v3.HttpProtocolOptions.AutoHttpConfig.http2_protocol_options": {},

	// Server name and SAN check from each request's host, on TLS clusters
	// of one protocol (the cluster refuses them with
	// use_downstream_protocol_config and auto_config). The deprecated
	// Cluster.upstream_http_protocol_options stays refused.
	"envoy.extensions.upstreams.http.v3.HttpProtocolOptions.upstream_http_protocol_options": {},
	"envoy.config.core.v3.UpstreamHttpProtocolOptions.auto_sni":                             {},
	"envoy.config.core.v3.UpstreamHttpProtocolOptions.auto_san_validation":                  {},
	"envoy.config.core.v3.UpstreamHttpProtocolOptions.override_auto_sni_header":             {},

	// Secrets: static_resources.secrets by name, and secrets from files
	// (sds_config with path_config_source; the server refuses any other
	// config source). Generic secrets are listed with the oauth2 filter
	// that reads them (support_oauth2.go).
	"envoy.config.bootstrap.v3.Bootstrap.StaticResources.secrets":         {},
	"envoy.extensions.transport_sockets.tls.v3.Secret.name":               {},
	"envoy.extensions.transport_sockets.tls.v3.Secret.tls_certificate":    {},
	"envoy.extensions.transport_sockets.tls.v3.Secret.validation_context": {},
	// Session ticket keys from a secret: rotating it rotates the keys
	// (the first issues tickets, all are accepted).
	"envoy.extensions.transport_sockets.tls.v3.Secret.session_ticket_keys":                                                                 {},
	"envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext.session_ticket_keys_sds_secret_config":                                 {},
	"envoy.extensions.transport_sockets.tls.v3.SdsSecretConfig.name":                                                                       {},
	"envoy.extensions.transport_sockets.tls.v3.SdsSecretConfig.sds_config":                                                                 {},
	"envoy.extensions.transport_sockets.tls.v3.CommonTlsContext.tls_certificate_sds_secret_configs":                                        {},
	"envoy.extensions.transport_sockets.tls.v3.CommonTlsContext.validation_context_sds_secret_config":                                      {},
	"envoy.extensions.transport_sockets.tls.v3.CommonTlsContext.combined_validation_context":                                               {},
	"envoy.extensions.transport_sockets.tls.v3.CommonTlsContext.CombinedCertificateValidationContext.default_validation_context":           {},
	"envoy.extensions.transport_sockets.tls.v3.CommonTlsContext.CombinedCertificateValidationContext.validation_context_sds_secret_config": {},

	// Filter chain matching on what the tls_inspector detects.
	"envoy.config.listener.v3.FilterChainMatch.server_names":          {},
	"envoy.config.listener.v3.FilterChainMatch.transport_protocol":    {},
	"envoy.config.listener.v3.FilterChainMatch.application_protocols": {},

	// envoy.filters.listener.tls_inspector. The JA3 hash and JA4
	// fingerprint of the ClientHello, for %TLS_JA3_FINGERPRINT% and
	// %TLS_JA4_FINGERPRINT% (see tlsinspector.ja3 and ja4).
	"envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector.enable_ja3_fingerprinting": {},
	"envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector.enable_ja4_fingerprinting": {},
	"envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector.initial_read_buffer_size":  {},
	// A larger ClientHello closes the connection (client_hello_too_large).
	"envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector.max_client_hello_size": {},
	// Bytes that are no ClientHello close the connection.
	"envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector.close_connection_on_client_hello_parsing_errors": {},

	"envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext.common_tls_context":                   {},
	"envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext.require_client_certificate":           {},
	"envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext.session_ticket_keys":                  {},
	"envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext.disable_stateless_session_resumption": {},
	// Go's server never resumes sessions by ID: disabling that is
	// already the case.
	"envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext.disable_stateful_session_resumption": {},
	"envoy.extensions.transport_sockets.tls.v3.TlsSessionTicketKeys.keys":                                {},
	// Tickets older than it are not resumed (see tlsconfig.applySessionTimeout).
	"envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext.session_timeout": {},
	// A server name no certificate covers picks by key type (see
	// tlsconfig.Server.certificateIndex).
	"envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext.full_scan_certs_on_sni_mismatch": {},
	// A hello without a server name, or with one no certificate covers,
	// fails the handshake (ssl.fail_no_sni_match; see
	// tlsconfig.Server.coversName). Envoy hides the field as not
	// implemented; Outrigger does what its documentation says.
	"envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext.require_sni": {},
	// TLS 1.2 handshakes get the client's most preferred usable suite
	// (see tlsconfig.clientPreferredSuite).
	"envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext.prefer_client_ciphers": {},

	"envoy.extensions.transport_sockets.tls.v3.CommonTlsContext.tls_params":         {},
	"envoy.extensions.transport_sockets.tls.v3.CommonTlsContext.tls_certificates":   {},
	"envoy.extensions.transport_sockets.tls.v3.CommonTlsContext.validation_context": {},
	"envoy.extensions.transport_sockets.tls.v3.CommonTlsContext.alpn_protocols":     {},
	// The NSS key log of the handshakes whose addresses are in the ranges
	// (see tlsconfig.compileKeyLog), written like the access logs.
	"envoy.extensions.transport_sockets.tls.v3.CommonTlsContext.key_log":       {},
	"envoy.extensions.transport_sockets.tls.v3.TlsKeyLog.path":                 {},
	"envoy.extensions.transport_sockets.tls.v3.TlsKeyLog.local_address_range":  {},
	"envoy.extensions.transport_sockets.tls.v3.TlsKeyLog.remote_address_range": {},

	"envoy.extensions.transport_sockets.tls.v3.TlsParameters.tls_minimum_protocol_version": {},
	"envoy.extensions.transport_sockets.tls.v3.TlsParameters.tls_maximum_protocol_version": {},
	"envoy.extensions.transport_sockets.tls.v3.TlsParameters.cipher_suites":                {},
	"envoy.extensions.transport_sockets.tls.v3.TlsParameters.ecdh_curves":                  {},
	// The algorithms of the listener's own signatures (see
	// tlsconfig.signatureSchemes); refused by tlsconfig where the peer
	// signs (clusters, listeners asking for client certificates).
	"envoy.extensions.transport_sockets.tls.v3.TlsParameters.signature_algorithms": {},
	// FIPS_202205 (see tlsconfig.compliance); the CNSA policies are
	// refused by tlsconfig.
	"envoy.extensions.transport_sockets.tls.v3.TlsParameters.compliance_policies": {},

	// In secrets delivered by SDS, the directory followed for the files'
	// rotation (server.secretWatch); refused elsewhere by tlsconfig, as
	// Envoy ignores it there.
	"envoy.extensions.transport_sockets.tls.v3.TlsCertificate.watched_directory":               {},
	"envoy.extensions.transport_sockets.tls.v3.CertificateValidationContext.watched_directory": {},

	// The leaf, chain and key in one PKCS#12 file, with password (see
	// tlsconfig.loadPKCS12).
	"envoy.extensions.transport_sockets.tls.v3.TlsCertificate.pkcs12": {},

	// A server certificate's own parameters over the context's, for the
	// handshakes that pick it (see tlsconfig.certParams); refused on
	// clients by tlsconfig, as Envoy ignores them there.
	"envoy.extensions.transport_sockets.tls.v3.TlsCertificate.tls_params":        {},
	"envoy.extensions.transport_sockets.tls.v3.TlsCertificate.certificate_chain": {},
	"envoy.extensions.transport_sockets.tls.v3.TlsCertificate.private_key":       {},
	// Decrypts keys in the legacy PEM encryption; encrypted PKCS#8 is
	// refused by tlsconfig with its path.
	"envoy.extensions.transport_sockets.tls.v3.TlsCertificate.password": {},
	// Stapled on listeners by ocsp_staple_policy (refused on clusters by
	// tlsconfig).
	"envoy.extensions.transport_sockets.tls.v3.TlsCertificate.ocsp_staple":              {},
	"envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext.ocsp_staple_policy": {},

	"envoy.extensions.transport_sockets.tls.v3.CertificateValidationContext.trusted_ca": {},
	// The system's roots where trusted_ca is absent (see
	// tlsconfig.validator.useSystemRoots). Envoy hides the field as not
	// implemented; Outrigger does what its documentation says.
	"envoy.extensions.transport_sockets.tls.v3.CertificateValidationContext.system_root_certs":             {},
	"envoy.extensions.transport_sockets.tls.v3.CertificateValidationContext.match_typed_subject_alt_names": {},
	"envoy.extensions.transport_sockets.tls.v3.CertificateValidationContext.match_subject_alt_names":       {},
	"envoy.extensions.transport_sockets.tls.v3.CertificateValidationContext.verify_certificate_spki":       {},
	"envoy.extensions.transport_sockets.tls.v3.CertificateValidationContext.verify_certificate_hash":       {},
	"envoy.extensions.transport_sockets.tls.v3.CertificateValidationContext.allow_expired_certificate":     {},
	"envoy.extensions.transport_sockets.tls.v3.CertificateValidationContext.crl":                           {},
	"envoy.extensions.transport_sockets.tls.v3.CertificateValidationContext.only_verify_leaf_cert_crl":     {},
	"envoy.extensions.transport_sockets.tls.v3.SubjectAltNameMatcher.san_type":                             {values: []string{"EMAIL", "DNS", "URI", "IP_ADDRESS", "OTHER_NAME"}},
	// The otherName type-id an OTHER_NAME matcher reads (see tlsconfig.otherNames).
	"envoy.extensions.transport_sockets.tls.v3.SubjectAltNameMatcher.oid":     {},
	"envoy.extensions.transport_sockets.tls.v3.SubjectAltNameMatcher.matcher": {},

	// Chains to trusted_ca deeper than it fail (see tlsconfig.withinDepth).
	"envoy.extensions.transport_sockets.tls.v3.CertificateValidationContext.max_verify_depth": {},
	// ACCEPT_UNTRUSTED: a certificate that fails verification is counted
	// (ssl.fail_verify_*) and the handshake goes on (see
	// tlsconfig.connectionCheck).
	"envoy.extensions.transport_sockets.tls.v3.CertificateValidationContext.trust_chain_verification": {},
	// Deprecated and ignored by Envoy, which always checks that an RSA
	// server certificate's key usage allows the key exchange, as
	// Outrigger does (see tlsconfig.checkRSAKeyUsage).
	"envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext.enforce_rsa_key_usage": {},
	// Listeners send no CA names in CertificateRequest; no effect upstream, as in Envoy.
	"envoy.extensions.transport_sockets.tls.v3.CertificateValidationContext.suppress_client_ca_list": {},

	// Certificate validators by custom_validator_config: Envoy's SPIFFE
	// validator, or the default one named (tlsconfig/spiffe.go). A trust
	// bundle map from a file is refused by tlsconfig (Envoy watches it).
	"envoy.extensions.transport_sockets.tls.v3.CertificateValidationContext.custom_validator_config": {},
	"envoy.extensions.transport_sockets.tls.v3.SPIFFECertValidatorConfig.trust_domains":              {},
	"envoy.extensions.transport_sockets.tls.v3.SPIFFECertValidatorConfig.trust_bundles":              {},
	"envoy.extensions.transport_sockets.tls.v3.SPIFFECertValidatorConfig.TrustDomain.name":           {},
	"envoy.extensions.transport_sockets.tls.v3.SPIFFECertValidatorConfig.TrustDomain.trust_bundle":   {},
}

// certificateProvidersRefused is why the certificate provider fields are
// refused.
const certificateProvidersRefused = "not implemented by Envoy either (its API marks the certificate provider fields " +
	"not implemented and publishes no certificate provider extension): give certificates in tls_certificates, or through " +
	"SDS (tls_certificate_sds_secret_configs, validation_context_sds_secret_config), whose files rotate with watched_directory"

// refusedTLS says why some TLS fields are refused, where "not supported"
// alone would leave the reader guessing.
var refusedTLS = map[protoreflect.FullName]string{
	// Certificate providers: every field that names one is hidden in
	// Envoy's API as not implemented, and the API publishes no provider
	// extension's configuration to put in certificate_provider_instances.
	"envoy.config.bootstrap.v3.Bootstrap.certificate_provider_instances":                                                                               certificateProvidersRefused,
	"envoy.extensions.transport_sockets.tls.v3.CommonTlsContext.tls_certificate_provider_instance":                                                     certificateProvidersRefused,
	"envoy.extensions.transport_sockets.tls.v3.CommonTlsContext.tls_certificate_certificate_provider":                                                  certificateProvidersRefused,
	"envoy.extensions.transport_sockets.tls.v3.CommonTlsContext.tls_certificate_certificate_provider_instance":                                         certificateProvidersRefused,
	"envoy.extensions.transport_sockets.tls.v3.CommonTlsContext.validation_context_certificate_provider":                                               certificateProvidersRefused,
	"envoy.extensions.transport_sockets.tls.v3.CommonTlsContext.validation_context_certificate_provider_instance":                                      certificateProvidersRefused,
	"envoy.extensions.transport_sockets.tls.v3.CommonTlsContext.CombinedCertificateValidationContext.validation_context_certificate_provider":          certificateProvidersRefused,
	"envoy.extensions.transport_sockets.tls.v3.CommonTlsContext.CombinedCertificateValidationContext.validation_context_certificate_provider_instance": certificateProvidersRefused,
	"envoy.extensions.transport_sockets.tls.v3.CertificateValidationContext.ca_certificate_provider_instance":                                          certificateProvidersRefused,
	"envoy.extensions.transport_sockets.tls.v3.SPIFFECertValidatorConfig.TrustDomain.workload_trust_domain": "not supported by Outrigger: " +
		"it picks the trust bundle by the connection's filter state object envoy.tls.cert_validator.spiffe.workload_trust_domain, " +
		"which no filter of Outrigger sets",
	"envoy.config.core.v3.DataSource.watched_directory": "not supported by Outrigger: Envoy reloads a DataSource from its " +
		"watched directory only where its consumer uses a reloading data source provider (ip_tagging, some filters' files), " +
		"none of which Outrigger has yet; TLS files rotate through TlsCertificate.watched_directory or " +
		"CertificateValidationContext.watched_directory in a secret delivered by SDS",
	"envoy.extensions.transport_sockets.tls.v3.TlsCertificate.private_key_provider": "not supported by Outrigger: " +
		"private key providers (CryptoMB, QAT) hand BoringSSL's private key operations to Intel's vectorised or " +
		"hardware implementations, which Outrigger (signing with Go's crypto) does not have; give the key in private_key",
}
