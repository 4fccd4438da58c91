package stats

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// HistogramBuckets is the histogram view of /stats?histogram_buckets=.
type HistogramBuckets uint8

// The histogram views.
const (
	// BucketsSummary shows quantiles (the default; "summary" or "none").
	// For Prometheus the default is BucketsCumulative: see
	// ParsePrometheusHistogramBuckets.
	BucketsSummary HistogramBuckets = iota
	// BucketsCumulative shows, per bound, the values below it.
	BucketsCumulative
	// BucketsDisjoint shows, per bound, the values between it and the
	// previous bound.
	BucketsDisjoint
	// BucketsDetailed shows every circllhist bin and the quantiles.
	BucketsDetailed
)

// ErrInvalidBuckets is wrapped by ParseHistogramBuckets.
var ErrInvalidBuckets = errors.New("invalid histogram_buckets")

// HistogramBucketsUsage is Envoy's exact 400 body for a bad
// histogram_buckets, to send when ErrInvalidBuckets is returned.
const HistogramBucketsUsage = "usage: /stats?histogram_buckets=(cumulative|disjoint|detailed|summary)\n"

// ErrPrometheusBuckets is wrapped by ParsePrometheusHistogramBuckets; its
// text is also Envoy's exact 400 body.
var ErrPrometheusBuckets = errors.New("unsupported prometheus histogram bucket mode")

// ParseHistogramBuckets parses histogram_buckets for the text and JSON
// formats; empty means summary.
func ParseHistogramBuckets(s string) (HistogramBuckets, error) {
	switch s {
	case "", "summary", "none":
		return BucketsSummary, nil
	case "cumulative":
		return BucketsCumulative, nil
	case "disjoint":
		return BucketsDisjoint, nil
	case "detailed":
		return BucketsDetailed, nil
	}
	return 0, fmt.Errorf("%w: %q", ErrInvalidBuckets, s)
}

// ParsePrometheusHistogramBuckets parses histogram_buckets for the
// Prometheus format: cumulative (the default) or summary.
func ParsePrometheusHistogramBuckets(s string) (HistogramBuckets, error) {
	switch s {
	case "", "cumulative":
		return BucketsCumulative, nil
	case "summary":
		return BucketsSummary, nil
	}
	return 0, fmt.Errorf("%w", ErrPrometheusBuckets)
}

// RenderOptions are the /stats query parameters that shape output.
type RenderOptions struct {
	VisitOptions
	// Buckets is the histogram view.
	Buckets HistogramBuckets
	// TextReadouts adds text readouts to Prometheus output, as gauges with
	// a text_value label (/stats/prometheus?text_readouts).
	TextReadouts bool
	// Naming is the product word of Prometheus names and labels.
	Naming Naming
	// Help, when set, gives the Prometheus HELP text of a tag-extracted
	// stat name (such as "cluster.upstream_rq_total"), or "" for none. It
	// is called once per rendered family and must be safe for concurrent
	// use.
	Help func(stat string) string
}

// chunkSize is how much output is gathered before a write: large enough
// that writes are few, small enough that memory stays flat.
const chunkSize = 64 << 10

// chunkWriter gathers output and writes it in chunks, remembering the
// first write error so renderers can stop walking.
type chunkWriter struct {
	w   io.Writer
	buf []byte
	err error
}

func newChunkWriter(w io.Writer) *chunkWriter {
	return &chunkWriter{w: w, buf: make([]byte, 0, chunkSize+4096)}
}

// maybeFlush writes the buffer once it holds a chunk.
func (c *chunkWriter) maybeFlush() error {
	if len(c.buf) >= chunkSize {
		return c.flush()
	}
	if c.err != nil {
		return fmt.Errorf("writing stats: %w", c.err)
	}
	return nil
}

func (c *chunkWriter) flush() error {
	if c.err == nil && len(c.buf) > 0 {
		_, c.err = c.w.Write(c.buf)
	}
	c.buf = c.buf[:0]
	if c.err != nil {
		return fmt.Errorf("writing stats: %w", c.err)
	}
	return nil
}

func (c *chunkWriter) str(s string)   { c.buf = append(c.buf, s...) }
func (c *chunkWriter) bytes(b []byte) { c.buf = append(c.buf, b...) }
func (c *chunkWriter) byte(b byte)    { c.buf = append(c.buf, b) }
func (c *chunkWriter) uint(v uint64)  { c.buf = strconv.AppendUint(c.buf, v, 10) }
func (c *chunkWriter) int(v int64)    { c.buf = strconv.AppendInt(c.buf, v, 10) }

// bucketCounts returns the interval and cumulative counts per bucket bound
// that the cumulative and disjoint views show: the summaries' own
// cumulative counts, or with BucketsDisjoint those made disjoint in the
// scratch slices, which are reused from one histogram to the next.
func bucketCounts(in, cum *HistogramStatistics, mode HistogramBuckets, scratch *[2][]uint64) (interval, cumulative []uint64) {
	if mode != BucketsDisjoint {
		return in.Buckets, cum.Buckets
	}
	scratch[0] = in.DisjointBuckets(scratch[0][:0])
	scratch[1] = cum.DisjointBuckets(scratch[1][:0])
	return scratch[0], scratch[1]
}

// appendDouble formats like the {fmt} library's "{}" for doubles, which
// Envoy uses in text and JSON: the shortest round-trip form, in exponent
// notation only below 1e-4 or from 1e16, and "nan" / "inf".
func appendDouble(b []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(b, "nan"...)
	case math.IsInf(v, 1):
		return append(b, "inf"...)
	case math.IsInf(v, -1):
		return append(b, "-inf"...)
	case v == 0:
		return append(b, '0')
	}
	if a := math.Abs(v); a >= 1e-4 && a < 1e16 {
		return strconv.AppendFloat(b, v, 'f', -1, 64)
	}
	return strconv.AppendFloat(b, v, 'e', -1, 64)
}

// appendG formats like C's printf %.<prec>g.
func appendG(b []byte, v float64, prec int) []byte {
	if math.IsNaN(v) {
		return append(b, "nan"...)
	}
	if math.IsInf(v, 0) {
		if v > 0 {
			return append(b, "inf"...)
		}
		return append(b, "-inf"...)
	}
	return strconv.AppendFloat(b, v, 'g', prec, 64)
}

// quantileLabels are the supported quantiles ×100, as text labels and
// JSON show them ("P{:g}" of 100×q).
var quantileLabels = [NumQuantiles]string{"0", "25", "50", "75", "90", "95", "99", "99.9", "100"}
