package admin

import "testing"

func TestStatsText(t *testing.T) {
	runStatsCases(t, "stats", map[string]statsCase{
		"text":                   {req: request{target: "/stats"}, calls: renderCalls},
		"text-explicit":          {req: request{target: "/stats?format=text"}, calls: renderCalls},
		"text-usedonly":          {req: request{target: "/stats?usedonly"}, calls: renderCalls},
		"text-usedonly-false":    {req: request{target: "/stats?usedonly=false"}, calls: renderCalls},
		"text-filter":            {req: request{target: "/stats?filter=upstream_cx"}, calls: renderCalls},
		"text-filter-anchored":   {req: request{target: "/stats?filter=%5Eserver%5C.live%24"}, calls: renderCalls},
		"text-filter-usedonly":   {req: request{target: "/stats?filter=server&usedonly"}, calls: renderCalls},
		"text-filter-no-match":   {req: request{target: "/stats?filter=nothing-matches-this"}, calls: renderCalls},
		"text-type-counters":     {req: request{target: "/stats?type=Counters"}, calls: renderCalls},
		"text-type-gauges":       {req: request{target: "/stats?type=Gauges"}, calls: renderCalls},
		"text-type-histograms":   {req: request{target: "/stats?type=Histograms"}, calls: renderCalls},
		"text-type-textreadouts": {req: request{target: "/stats?type=TextReadouts"}, calls: renderCalls},
		"text-type-all":          {req: request{target: "/stats?type=All&usedonly"}, calls: renderCalls},
		"text-buckets-cumulative": {
			req: request{target: "/stats?histogram_buckets=cumulative&type=Histograms"}, calls: renderCalls,
		},
		"text-buckets-disjoint": {
			req: request{target: "/stats?histogram_buckets=disjoint&type=Histograms"}, calls: renderCalls,
		},
		"text-buckets-detailed": {
			req: request{target: "/stats?histogram_buckets=detailed&type=Histograms"}, calls: renderCalls,
		},
		"text-buckets-summary": {
			req: request{target: "/stats?histogram_buckets=summary&type=Histograms"}, calls: renderCalls,
		},
		"text-buckets-none": { // the older name of summary
			req: request{target: "/stats?histogram_buckets=none&type=Histograms"}, calls: renderCalls,
		},
		"text-empty-values": { // the home page's form submits every field
			req:   request{target: "/stats?format=&filter=&histogram_buckets=&type=&usedonly"},
			calls: renderCalls,
		},
		"text-form-body": {
			req:   request{method: "POST", target: "/stats", body: "filter=c1&usedonly=on", header: formHeader()},
			calls: renderCalls,
		},
		"text-readouts-ignored":  {req: request{target: "/stats?text_readouts&type=TextReadouts"}, calls: renderCalls},
		"text-unknown-parameter": {req: request{target: "/stats?pretty&scope=x&type=Gauges"}, calls: renderCalls},
		"text-first-value-wins": {
			req: request{target: "/stats?filter=live&filter=%5B"}, calls: renderCalls,
		},
		"text-ecmascript-filter": { // a lookahead, which RE2 lacks
			useECMAScript: true,
			req:           request{target: "/stats?filter=%5Ecluster%5C.(%3F!c1)"},
			calls:         renderCalls,
		},
		"text-empty-store": {empty: true, req: request{target: "/stats"}, calls: renderCalls},
	})
}

func TestStatsJSON(t *testing.T) {
	runStatsCases(t, "stats", map[string]statsCase{
		"json":               {req: request{target: "/stats?format=json"}, calls: renderCalls},
		"json-usedonly":      {req: request{target: "/stats?format=json&usedonly"}, calls: renderCalls},
		"json-filter":        {req: request{target: "/stats?format=json&filter=c1"}, calls: renderCalls},
		"json-no-match":      {req: request{target: "/stats?format=json&filter=nothing-matches-this"}, calls: renderCalls},
		"json-no-histograms": {req: request{target: "/stats?format=json&type=Gauges"}, calls: renderCalls},
		"json-buckets-cumulative": {
			req: request{target: "/stats?format=json&histogram_buckets=cumulative&type=Histograms"}, calls: renderCalls,
		},
		"json-buckets-disjoint": {
			req: request{target: "/stats?format=json&histogram_buckets=disjoint&type=Histograms"}, calls: renderCalls,
		},
		"json-buckets-detailed": {
			req: request{target: "/stats?format=json&histogram_buckets=detailed&type=Histograms"}, calls: renderCalls,
		},
		"json-empty-store": {empty: true, req: request{target: "/stats?format=json"}, calls: renderCalls},
		"json-unused-histograms-only": {
			req: request{target: "/stats?format=json&usedonly&filter=initialization"}, calls: renderCalls,
		},
	})
}

func TestStatsPrometheus(t *testing.T) {
	runStatsCases(t, "stats", map[string]statsCase{
		"prometheus":              {req: request{target: "/stats/prometheus"}, calls: renderCalls},
		"prometheus-format-param": {req: request{target: "/stats?format=prometheus"}, calls: renderCalls},
		"prometheus-format-param-text-readouts": {
			req: request{target: "/stats?format=prometheus&text_readouts"}, calls: renderCalls,
		},
		"prometheus-text-readouts":       {req: request{target: "/stats/prometheus?text_readouts"}, calls: renderCalls},
		"prometheus-text-readouts-false": {req: request{target: "/stats/prometheus?text_readouts=false"}, calls: renderCalls},
		"prometheus-usedonly":            {req: request{target: "/stats/prometheus?usedonly"}, calls: renderCalls},
		"prometheus-filter":              {req: request{target: "/stats/prometheus?filter=c1"}, calls: renderCalls},
		"prometheus-summary":             {req: request{target: "/stats/prometheus?histogram_buckets=summary"}, calls: renderCalls},
		"prometheus-none":                {req: request{target: "/stats/prometheus?histogram_buckets=none&type=Histograms"}, calls: renderCalls},
		"prometheus-cumulative": {
			req: request{target: "/stats/prometheus?histogram_buckets=cumulative&type=Histograms"}, calls: renderCalls,
		},
		"prometheus-type-counters": {req: request{target: "/stats/prometheus?type=Counters"}, calls: renderCalls},
		"prometheus-format-json-ignored": { // validated, then /stats/prometheus is Prometheus anyway
			req: request{target: "/stats/prometheus?format=json&type=Gauges"}, calls: renderCalls,
		},
		"prometheus-empty-store": {empty: true, req: request{target: "/stats/prometheus"}, calls: renderCalls},
		"prometheus-empty-values": {
			req: request{target: "/stats/prometheus?format=&filter=&histogram_buckets=&type=Gauges"}, calls: renderCalls,
		},
	})
}

func TestStatsRefused(t *testing.T) {
	runStatsCases(t, "stats", map[string]statsCase{
		"refused-filter":             {req: request{target: "/stats?filter=%5Ba"}, calls: refusedCalls},
		"refused-filter-ecmascript":  {useECMAScript: true, req: request{target: "/stats?filter=%5Ba"}, calls: refusedCalls},
		"refused-filter-before-type": {req: request{target: "/stats?filter=(&type=x"}, calls: refusedCalls},
		"refused-format":             {req: request{target: "/stats?format=xml"}, calls: refusedCalls},
		"refused-format-html-case":   {req: request{target: "/stats?format=HTML"}, calls: refusedCalls},
		"refused-html-filter":        {req: request{target: "/stats?format=html&filter=%5Ba"}, calls: refusedCalls},
		"refused-active-html-type":   {req: request{target: "/stats?format=active-html&type=counters"}, calls: refusedCalls},
		"refused-buckets":            {req: request{target: "/stats?histogram_buckets=linear"}, calls: refusedCalls},
		"refused-buckets-before-format": {
			req: request{target: "/stats?histogram_buckets=linear&format=xml"}, calls: refusedCalls,
		},
		"refused-type":                  {req: request{target: "/stats?type=counters"}, calls: refusedCalls},
		"refused-prometheus-disjoint":   {req: request{target: "/stats?format=prometheus&histogram_buckets=disjoint"}, calls: refusedCalls},
		"refused-prometheus-detailed":   {req: request{target: "/stats/prometheus?histogram_buckets=detailed"}, calls: refusedCalls},
		"refused-prometheus-bad-bucket": {req: request{target: "/stats/prometheus?histogram_buckets=linear"}, calls: refusedCalls},
		"refused-prometheus-filter":     {req: request{target: "/stats/prometheus?filter=%5Ba"}, calls: refusedCalls},
		"refused-prometheus-format":     {req: request{target: "/stats/prometheus?format=xml"}, calls: refusedCalls},
	})
}
