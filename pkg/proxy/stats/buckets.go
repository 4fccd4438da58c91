package stats

import (
	"fmt"
	"math"
	"slices"

	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/config/metrics/v3"
)

// bucketRule is one stats_config.histogram_bucket_settings entry: the
// histograms whose names match get these bucket bounds.
type bucketRule struct {
	match stringMatcher
	// empty is the summary of a histogram with these bounds and no value,
	// shared by every such histogram until it records.
	empty *HistogramStatistics
}

func newBucketRules(cfg []*metricsv3.HistogramBucketSettings) ([]bucketRule, error) {
	rules := make([]bucketRule, 0, len(cfg))
	for i, c := range cfg {
		m, err := newStringMatcher(c.GetMatch())
		if err != nil {
			return nil, fmt.Errorf("stats_config.histogram_bucket_settings[%d].match: %w", i, err)
		}
		b := slices.Clone(c.GetBuckets())
		if len(b) == 0 {
			return nil, fmt.Errorf("stats_config.histogram_bucket_settings[%d].buckets: at least one bucket is required", i)
		}
		for _, v := range b {
			if !(v > 0) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("stats_config.histogram_bucket_settings[%d].buckets: %v is not a positive finite number", i, v)
			}
		}
		slices.Sort(b)
		if len(slices.Compact(slices.Clone(b))) != len(b) {
			return nil, fmt.Errorf("stats_config.histogram_bucket_settings[%d].buckets: values must be unique", i)
		}
		empty := emptyStatistics(b)
		rules = append(rules, bucketRule{match: m, empty: &empty})
	}
	return rules, nil
}

// emptyFor returns the empty summary of the histogram named prefix+name,
// which carries its bucket bounds: the first matching rule's, else the
// defaults. The summary and its slices are shared and never modified.
func (s *Store) emptyFor(prefix, name string) *HistogramStatistics {
	if len(s.buckets) == 0 {
		return s.defaultEmpty
	}
	name = prefix + name
	for _, r := range s.buckets {
		if r.match.match(name) {
			return r.empty
		}
	}
	return s.defaultEmpty
}
