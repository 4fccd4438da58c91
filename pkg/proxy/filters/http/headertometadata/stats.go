package headertometadata

import "github.com/outrigger-dev/outrigger/pkg/proxy/stats"

// filterStats are the counters of a Config with a stat_prefix, Envoy's:
// http_filter_name.<stat_prefix>.*, in the server's scope. A Config
// without stat_prefix counts nothing, as in Envoy (opt-in).
type filterStats struct {
	// rulesProcessed, metadataAdded and headerNotFound are by direction:
	// [0] the request's, [1] the response's.
	rulesProcessed, metadataAdded, headerNotFound [2]*stats.Counter
	base64DecodeFailed, valueTooLong, regexFailed *stats.Counter
}

// newFilterStats makes the counters of stat_prefix; nil without one.
func newFilterStats(store *stats.Store, statPrefix string) *filterStats {
	if statPrefix == "" || store == nil {
		return nil
	}
	p := "http_filter_name." + statPrefix + "."
	return &filterStats{
		rulesProcessed:     [2]*stats.Counter{store.Counter(p + "request_rules_processed"), store.Counter(p + "response_rules_processed")},
		metadataAdded:      [2]*stats.Counter{store.Counter(p + "request_metadata_added"), store.Counter(p + "response_metadata_added")},
		headerNotFound:     [2]*stats.Counter{store.Counter(p + "request_header_not_found"), store.Counter(p + "response_header_not_found")},
		base64DecodeFailed: store.Counter(p + "base64_decode_failed"),
		valueTooLong:       store.Counter(p + "header_value_too_long"),
		regexFailed:        store.Counter(p + "regex_substitution_failed"),
	}
}

// The events Envoy counts; each does nothing on a nil filterStats (a
// Config without stat_prefix). dir is 0 for the request, 1 for the
// response.

func (s *filterStats) processed(dir int) {
	if s != nil {
		s.rulesProcessed[dir].Inc()
	}
}

func (s *filterStats) added(dir int) {
	if s != nil {
		s.metadataAdded[dir].Inc()
	}
}

func (s *filterStats) notFound(dir int) {
	if s != nil {
		s.headerNotFound[dir].Inc()
	}
}

// failed counts a value refused for outcome.
func (s *filterStats) failed(o outcome) {
	if s == nil {
		return
	}
	switch o {
	case tooLong:
		s.valueTooLong.Inc()
	case base64Failed:
		s.base64DecodeFailed.Inc()
	}
}

func (s *filterStats) regexFailedOnce() {
	if s != nil {
		s.regexFailed.Inc()
	}
}
