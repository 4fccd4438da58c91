package accesslog

// ResponseFlags is a set of Envoy's response flags: what went wrong with a
// request, printed by %RESPONSE_FLAGS% as short codes. The bits follow
// Envoy's enum order, which is also the order codes are printed in.
type ResponseFlags uint32

// The response flags, in Envoy's order.
const (
	FailedLocalHealthCheck           ResponseFlags = 1 << iota // LH
	NoHealthyUpstream                                          // UH
	UpstreamRequestTimeout                                     // UT
	LocalReset                                                 // LR
	UpstreamRemoteReset                                        // UR
	UpstreamConnectionFailure                                  // UF
	UpstreamConnectionTermination                              // UC
	UpstreamOverflow                                           // UO
	NoRouteFound                                               // NR
	DelayInjected                                              // DI
	FaultInjected                                              // FI
	RateLimited                                                // RL
	UnauthorizedExternalService                                // UAEX
	RateLimitServiceError                                      // RLSE
	DownstreamConnectionTermination                            // DC
	UpstreamRetryLimitExceeded                                 // URX
	StreamIdleTimeout                                          // SI
	InvalidEnvoyRequestHeaders                                 // IH
	DownstreamProtocolError                                    // DPE
	UpstreamMaxStreamDurationReached                           // UMSDR
	ResponseFromCacheFilter                                    // RFCF
	NoFilterConfigFound                                        // NFCF
	DurationTimeout                                            // DT
	UpstreamProtocolError                                      // UPE
	NoClusterFound                                             // NC
	OverloadManager                                            // OM
	DNSResolutionFailed                                        // DF
	DropOverload                                               // DO
	DownstreamRemoteReset                                      // DR
	UnconditionalDropOverload                                  // UDO

	// flagCount is the number of defined flags.
	flagCount = iota
)

// flagCodes are the short codes, indexed by bit number. Immutable.
var flagCodes = [flagCount]string{
	"LH", "UH", "UT", "LR", "UR", "UF", "UC", "UO", "NR", "DI", "FI", "RL", "UAEX", "RLSE", "DC",
	"URX", "SI", "IH", "DPE", "UMSDR", "RFCF", "NFCF", "DT", "UPE", "NC", "OM", "DF", "DO", "DR", "UDO",
}

// AppendShort appends the flags' short codes joined by "," in Envoy's
// order, or "-" when none is set, as %RESPONSE_FLAGS% prints them.
func (f ResponseFlags) AppendShort(dst []byte) []byte {
	if f&(1<<flagCount-1) == 0 {
		return append(dst, '-')
	}
	first := true
	for i, code := range flagCodes {
		if f&(1<<i) == 0 {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, code...)
	}
	return dst
}

// String returns the short codes as AppendShort renders them.
func (f ResponseFlags) String() string { return string(f.AppendShort(nil)) }

// ParseFlag returns the flag of a short code ("UH"), as response_flag_filter
// names flags.
func ParseFlag(code string) (ResponseFlags, bool) {
	for i, c := range flagCodes {
		if c == code {
			return 1 << i, true
		}
	}
	return 0, false
}
