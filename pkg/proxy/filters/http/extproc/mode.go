package extproc

import (
	"errors"
	"fmt"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
)

// mode is a compiled ProcessingMode: which phases of a request go to the
// processor.
type mode struct {
	// requestHeaders and responseHeaders send the heads (DEFAULT and
	// SEND; SKIP does not).
	requestHeaders, responseHeaders bool
	// requestBody and responseBody are the body modes Outrigger
	// implements: NONE, STREAMED, BUFFERED, BUFFERED_PARTIAL and
	// FULL_DUPLEX_STREAMED.
	requestBody, responseBody extprocv3.ProcessingMode_BodySendMode
	// requestTrailers and responseTrailers send the trailers (SEND).
	requestTrailers, responseTrailers bool
}

// defaultMode is the mode of a filter without processing_mode: both heads
// sent, no bodies, no trailers.
var defaultMode = mode{requestHeaders: true, responseHeaders: true}

// disabledMode is the mode a per-route disabled gives: nothing is sent.
var disabledMode = mode{}

// compileMode checks a ProcessingMode; errors name the field below it.
func compileMode(pm *extprocv3.ProcessingMode) (mode, error) {
	if pm == nil {
		return defaultMode, nil
	}
	m := mode{
		requestHeaders:   pm.GetRequestHeaderMode() != extprocv3.ProcessingMode_SKIP,
		responseHeaders:  pm.GetResponseHeaderMode() != extprocv3.ProcessingMode_SKIP,
		requestBody:      pm.GetRequestBodyMode(),
		responseBody:     pm.GetResponseBodyMode(),
		requestTrailers:  pm.GetRequestTrailerMode() == extprocv3.ProcessingMode_SEND,
		responseTrailers: pm.GetResponseTrailerMode() == extprocv3.ProcessingMode_SEND,
	}
	if err := checkBodyMode(pm.GetRequestBodyMode()); err != nil {
		return m, fmt.Errorf("request_body_mode: %w", err)
	}
	if err := checkBodyMode(pm.GetResponseBodyMode()); err != nil {
		return m, fmt.Errorf("response_body_mode: %w", err)
	}
	return m, nil
}

// checkBodyMode refuses the body modes Outrigger does not implement.
func checkBodyMode(b extprocv3.ProcessingMode_BodySendMode) error {
	switch b {
	case extprocv3.ProcessingMode_NONE, extprocv3.ProcessingMode_STREAMED,
		extprocv3.ProcessingMode_BUFFERED, extprocv3.ProcessingMode_BUFFERED_PARTIAL,
		extprocv3.ProcessingMode_FULL_DUPLEX_STREAMED:
		return nil
	}
	if b == extprocv3.ProcessingMode_GRPC {
		// [#not-implemented-hide:] in the API Outrigger follows.
		return fmt.Errorf("%s is not supported by Outrigger (nor implemented by Envoy)", b)
	}
	return fmt.Errorf("%s is not supported by Outrigger", b)
}

// overrideKey is a ProcessingMode as allowed_override_modes compares
// them, as Envoy's AllowedOverrideModesSet: every mode but
// request_header_mode (which a mode_override cannot change, the request
// headers having been sent), by its enum value (DEFAULT and SEND
// differ).
func overrideKey(pm *extprocv3.ProcessingMode) uint32 {
	return uint32(pm.GetResponseHeaderMode())*10 +
		uint32(pm.GetRequestBodyMode())*100 +
		uint32(pm.GetResponseBodyMode())*1000 +
		uint32(pm.GetRequestTrailerMode())*10000 +
		uint32(pm.GetResponseTrailerMode())*100000
}

// checkDuplex applies Envoy's rules for the FULL_DUPLEX_STREAMED body mode
// of a filter (verifyProcessingModeConfig, with its messages): the
// direction's trailer mode must be SEND, and failure_mode_allow false. An
// upstream filter chain cannot have it in Outrigger: the attempt's body
// cannot be produced at the processor's pace.
func checkDuplex(p *extprocv3.ExternalProcessor, m mode, upstream bool) error {
	const duplex = extprocv3.ProcessingMode_FULL_DUPLEX_STREAMED
	if m.requestBody == duplex && !m.requestTrailers {
		return errors.New("processing_mode: If the ext_proc filter has the request_body_mode set to FULL_DUPLEX_STREAMED, then the request_trailer_mode has to be set to SEND")
	}
	if m.responseBody == duplex && !m.responseTrailers {
		return errors.New("processing_mode: If the ext_proc filter has the response_body_mode set to FULL_DUPLEX_STREAMED, then the response_trailer_mode has to be set to SEND")
	}
	if (m.requestBody == duplex || m.responseBody == duplex) && p.GetFailureModeAllow() {
		return errors.New("failure_mode_allow: If the ext_proc filter has either the request_body_mode or the response_body_mode set to FULL_DUPLEX_STREAMED, then the failure_mode_allow has to be left as false")
	}
	if m.requestBody == duplex && upstream {
		return errors.New("processing_mode.request_body_mode: FULL_DUPLEX_STREAMED is not supported by Outrigger in an upstream filter chain")
	}
	return nil
}
