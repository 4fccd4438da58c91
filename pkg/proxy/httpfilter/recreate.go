package httpfilter

// StreamRecreator is implemented by a Stream whose response an encoder
// filter may drop, during EncodeHeaders, to send the request again, as
// the filter left it, through the filters and the router: Envoy's
// recreateStream, which the custom response filter's redirect policy
// uses. The client sees one request and the response of the last pass.
type StreamRecreator interface {
	// CanRecreate reports whether RecreateStream would succeed now: the
	// response head was not sent, it is not an upgrade's, it comes on
	// the request's own pass (an upstream's answer or a local reply of
	// the router), and the request has arrived whole (Envoy recreates
	// complete requests only); its body, if any, is not sent again.
	CanRecreate() bool
	// RecreateStream drops the response whose head the encoder filters
	// are seeing (the filters after the caller do not see it) and makes
	// the request, without a body, go through the filter chain and the
	// router once more. It reports false, changing nothing, when
	// CanRecreate does.
	RecreateStream() bool
	// SetScheme replaces the request's :scheme; routing sees it after
	// ClearRouteCache.
	SetScheme(scheme string)
}
