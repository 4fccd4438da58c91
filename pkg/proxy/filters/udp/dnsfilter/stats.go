package dnsfilter

import "github.com/outrigger-dev/outrigger/pkg/proxy/stats"

// filterStats are Envoy's DNS filter stats (ALL_DNS_FILTER_STATS), under
// dns_filter.<stat_prefix>., all made up front as Envoy makes them.
type filterStats struct {
	aQueries, aaaaQueries, srvQueries, unsupportedQueries             *stats.Counter
	clusterA, clusterAAAA, clusterUnsupported                         *stats.Counter
	rxErrors, rxInvalid, rxQueries                                    *stats.Counter
	externalAQueries, externalAAAAQueries, externalUnsupportedQueries *stats.Counter
	externalA, externalAAAA, externalUnsupported                      *stats.Counter
	externallyResolved, knownDomain                                   *stats.Counter
	localA, localAAAA, localSRV, localUnsupported                     *stats.Counter
	unanswered, txResponses                                           *stats.Counter
	bufferUnderflow, parseFailures, withAdditional, withAnsOrAuth     *stats.Counter
	nameOverflow                                                      *stats.Counter
	rxBytes, latency, txBytes                                         *stats.Histogram
}

func newFilterStats(st *stats.Store, prefix string) *filterStats {
	sc := st.Scope("dns_filter." + prefix + ".")
	return &filterStats{
		aQueries:                   sc.Counter("a_record_queries"),
		aaaaQueries:                sc.Counter("aaaa_record_queries"),
		srvQueries:                 sc.Counter("srv_record_queries"),
		clusterA:                   sc.Counter("cluster_a_record_answers"),
		clusterAAAA:                sc.Counter("cluster_aaaa_record_answers"),
		clusterUnsupported:         sc.Counter("cluster_unsupported_answers"),
		rxErrors:                   sc.Counter("downstream_rx_errors"),
		rxInvalid:                  sc.Counter("downstream_rx_invalid_queries"),
		rxQueries:                  sc.Counter("downstream_rx_queries"),
		externalAQueries:           sc.Counter("external_a_record_queries"),
		externalA:                  sc.Counter("external_a_record_answers"),
		externalAAAA:               sc.Counter("external_aaaa_record_answers"),
		externalAAAAQueries:        sc.Counter("external_aaaa_record_queries"),
		externalUnsupported:        sc.Counter("external_unsupported_answers"),
		externalUnsupportedQueries: sc.Counter("external_unsupported_queries"),
		externallyResolved:         sc.Counter("externally_resolved_queries"),
		knownDomain:                sc.Counter("known_domain_queries"),
		localA:                     sc.Counter("local_a_record_answers"),
		localAAAA:                  sc.Counter("local_aaaa_record_answers"),
		localSRV:                   sc.Counter("local_srv_record_answers"),
		localUnsupported:           sc.Counter("local_unsupported_answers"),
		unanswered:                 sc.Counter("unanswered_queries"),
		unsupportedQueries:         sc.Counter("unsupported_queries"),
		txResponses:                sc.Counter("downstream_tx_responses"),
		bufferUnderflow:            sc.Counter("query_buffer_underflow"),
		parseFailures:              sc.Counter("query_parsing_failure"),
		withAdditional:             sc.Counter("queries_with_additional_rrs"),
		withAnsOrAuth:              sc.Counter("queries_with_ans_or_authority_rrs"),
		nameOverflow:               sc.Counter("record_name_overflow"),
		rxBytes:                    sc.Histogram("downstream_rx_bytes", stats.UnitBytes),
		latency:                    sc.Histogram("downstream_rx_query_latency", stats.UnitMilliseconds),
		txBytes:                    sc.Histogram("downstream_tx_bytes", stats.UnitBytes),
	}
}

// The parser's counters (parseCounters).
func (s *filterStats) underflow()            { s.bufferUnderflow.Inc() }
func (s *filterStats) parsingFailure()       { s.parseFailures.Inc() }
func (s *filterStats) additionalRRs()        { s.withAdditional.Inc() }
func (s *filterStats) answerOrAuthorityRRs() { s.withAnsOrAuth.Inc() }

// queryType counts a question by type.
func (s *filterStats) queryType(t uint16) {
	pick(t, s.aQueries, s.aaaaQueries, s.srvQueries, s.unsupportedQueries).Inc()
}

// localAnswer counts an answer from the table.
func (s *filterStats) localAnswer(t uint16) {
	pick(t, s.localA, s.localAAAA, s.localSRV, s.localUnsupported).Inc()
}

// clusterAnswer counts an answer from a cluster's hosts (an SRV answer
// counts as unsupported, as in Envoy).
func (s *filterStats) clusterAnswer(t uint16) {
	pick(t, s.clusterA, s.clusterAAAA, s.clusterUnsupported, s.clusterUnsupported).Inc()
}

// externalQuery counts a query answered by the upstream resolvers.
func (s *filterStats) externalQuery(t uint16) {
	pick(t, s.externalAQueries, s.externalAAAAQueries, s.externalUnsupportedQueries, s.externalUnsupportedQueries).Inc()
}

// externalAnswer counts an address the upstream resolvers returned.
func (s *filterStats) externalAnswer(t uint16) {
	pick(t, s.externalA, s.externalAAAA, s.externalUnsupported, s.externalUnsupported).Inc()
}

// pick is the counter of a record type: A, AAAA, SRV or any other.
func pick(t uint16, a, aaaa, srv, other *stats.Counter) *stats.Counter {
	switch t {
	case typeA:
		return a
	case typeAAAA:
		return aaaa
	case typeSRV:
		return srv
	}
	return other
}
