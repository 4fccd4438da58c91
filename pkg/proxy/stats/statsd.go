package stats

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultStatsdPrefix prefixes statsd names when the sink sets no prefix
// (Envoy's is "envoy"; ours follows the neutral naming).
const DefaultStatsdPrefix = "proxy"

// statsdMaxDatagram bounds one UDP datagram: lines are batched up to it,
// below common path MTUs.
const statsdMaxDatagram = 1432

// statsdWriteTimeout bounds a flush's write to a TCP statsd server, so a
// stuck server cannot stall the flusher.
const statsdWriteTimeout = time.Second

// StatsdSink sends counters (deltas, "|c"), gauges ("|g") and histograms
// (timers, "|ms") to a statsd server at every flush, over UDP (lines
// batched into datagrams) or TCP (newline-terminated lines). In DogStatsD
// mode names are tag-extracted and tags are appended as "|#name:value,...";
// in Graphite mode names are tag-extracted and tags follow the name as
// ";name=value;..." (Graphite's tagged series), before the value.
//
// Envoy sends a histogram value the moment it is recorded; Outrigger's
// histograms aggregate, so each flush sends one timer line per value
// recorded in the interval it closes, the value read back from the
// histogram's bin (exact for values with two significant digits, the bin's
// midpoint otherwise). Percent histograms are sent as fractions with "|h",
// as Envoy does; with ScaleToMilliseconds, microsecond histograms are sent
// in (fractional) milliseconds.
type StatsdSink struct {
	prefix  string
	tags    *tagFormat // nil: full names, no tags
	maxSize int
	dial    func(ctx context.Context) (net.Conn, error)
	udp     bool
	scale   bool

	mu   sync.Mutex
	conn net.Conn
	buf  []byte // the datagram (UDP) or the whole flush (TCP) being built
	line []byte // the line being built
	x    Extraction
	// xName is the name x was extracted from, while xValid: a histogram
	// emits one line per bin, all of one name, extracted once.
	xName  []byte
	xValid bool
	err    error // the first write error of the flush in progress
}

// StatsdOptions configure a StatsdSink.
type StatsdOptions struct {
	// Prefix starts every name; empty means DefaultStatsdPrefix.
	Prefix string
	// DogStatsD selects tag-extracted names with DogStatsD tags.
	DogStatsD bool
	// Graphite selects tag-extracted names with Graphite tags (ignored
	// with DogStatsD).
	Graphite bool
	// MaxDatagram bounds UDP datagrams; zero means 1432 bytes.
	MaxDatagram int
	// UDP says the connection is datagram-oriented.
	UDP bool
	// Dial opens the connection; it is called at the first flush and again
	// after a write error.
	Dial func(ctx context.Context) (net.Conn, error)
	// ScaleToMilliseconds sends the values of microsecond histograms
	// divided by 1000 (scale_histogram_units_to_milliseconds); otherwise
	// every value goes as recorded, as Envoy's default does.
	ScaleToMilliseconds bool
}

// NewStatsdSink returns a statsd sink.
func NewStatsdSink(o StatsdOptions) *StatsdSink {
	if o.Prefix == "" {
		o.Prefix = DefaultStatsdPrefix
	}
	if o.MaxDatagram <= 0 {
		o.MaxDatagram = statsdMaxDatagram
	}
	var tags *tagFormat
	switch {
	case o.DogStatsD:
		tags = dogStatsdTags()
	case o.Graphite:
		tags = graphiteTags()
	}
	nameBad := nameUnsafe
	if tags != nil {
		nameBad = tags.nameUnsafe
	}
	o.Prefix = string(appendStatsdName(nil, o.Prefix, nameBad))
	return &StatsdSink{prefix: o.Prefix, tags: tags, maxSize: o.MaxDatagram, dial: o.Dial, udp: o.UDP,
		scale: o.ScaleToMilliseconds}
}

// Flush sends the snapshot's used counters (their deltas, zero included,
// as Envoy sends them), gauges and the histogram values of the interval.
// A write error drops the connection, which the next flush opens again.
func (k *StatsdSink) Flush(sn *Snapshot) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.conn == nil {
		c, err := k.dial(context.Background())
		if err != nil {
			return fmt.Errorf("statsd sink: %w", err)
		}
		k.conn = c
	}
	k.buf, k.err, k.xValid = k.buf[:0], nil, false
	var num [24]byte
	sn.Counters(func(name []byte, delta, _ uint64) {
		k.emit(sn, name, strconv.AppendUint(num[:0], delta, 10), "|c", 1)
	})
	sn.Gauges(func(name []byte, v int64) {
		if v < 0 {
			// A signed statsd gauge value is a change, not a value: a
			// negative gauge is set by going through zero first.
			k.emit(sn, name, []byte("0"), "|g", 1)
		}
		k.emit(sn, name, strconv.AppendInt(num[:0], v, 10), "|g", 1)
	})
	sn.Histograms(func(name []byte, h *Histogram) {
		typ := "|ms"
		if h.Unit() == UnitPercent {
			typ = "|h"
		}
		st := h.IntervalStatistics()
		for _, b := range st.Bins {
			k.emit(sn, name, appendBinValue(num[:0], b, h.Unit(), k.scale), typ, b.Count)
		}
	})
	if k.err == nil {
		k.err = k.send()
	}
	if k.err != nil {
		_ = k.conn.Close()
		k.conn = nil
		return fmt.Errorf("statsd sink: %w", k.err)
	}
	return nil
}

// appendBinValue appends the value a histogram bin stands for: its lower
// bound when the bin holds a single integer (values with up to two
// significant digits are recorded exactly), else its midpoint; percent
// histograms are scaled to fractions, and microsecond ones to milliseconds
// when scale is set.
func appendBinValue(dst []byte, b Bin, unit Unit, scale bool) []byte {
	v := b.LowerBound
	if b.Width > 1 {
		v += b.Width / 2
	}
	switch {
	case unit == UnitPercent:
		return strconv.AppendFloat(dst, v/PercentScale, 'g', 6, 64)
	case unit == UnitMicroseconds && scale:
		v /= 1000
	}
	// The bins' bounds are powers of ten times two-digit mantissas,
	// computed in floating point: a midpoint of 115 comes out as
	// 115.00000000000001. Such noise is rounded away, so that a timer
	// of whole milliseconds is sent as one, as Envoy sends its values.
	if r := math.Round(v); math.Abs(v-r) <= 1e-9*math.Max(1, math.Abs(v)) {
		v = r
	}
	if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
		return strconv.AppendInt(dst, int64(v), 10)
	}
	return strconv.AppendFloat(dst, v, 'f', -1, 64)
}

// emit builds one metric line and adds it times times to the batch. After
// a write error the rest of the flush is skipped.
func (k *StatsdSink) emit(sn *Snapshot, name, value []byte, typ string, times uint64) {
	if k.err != nil || times == 0 {
		return
	}
	k.line = append(append(k.line[:0], k.prefix...), '.')
	tf := k.tags
	if tf == nil {
		k.line = appendStatsdName(k.line, name, nameUnsafe)
		k.line = append(append(append(k.line, ':'), value...), typ...)
	} else {
		if !k.xValid || !bytes.Equal(name, k.xName) {
			sn.TagProducer().Extract(name, &k.x)
			k.xName, k.xValid = append(k.xName[:0], name...), true
		}
		k.line = appendStatsdName(k.line, k.x.Name, tf.nameUnsafe)
		if tf.afterName {
			k.line = k.appendTags(tf)
		}
		k.line = append(append(append(k.line, ':'), value...), typ...)
		if !tf.afterName {
			k.line = k.appendTags(tf)
		}
	}
	for range times {
		if err := k.add(); err != nil {
			k.err = err
			return
		}
	}
}

// appendTags appends the extracted tags to the line in format tf; nothing
// when there is none.
func (k *StatsdSink) appendTags(tf *tagFormat) []byte {
	line := k.line
	for i, t := range k.x.Tags {
		if i == 0 {
			line = append(line, tf.start...)
		} else {
			line = append(line, tf.separator)
		}
		line = appendStatsdName(line, t.Name, tf.tagUnsafe)
		line = append(line, tf.assign)
		line = appendStatsdName(line, t.Value, tf.tagUnsafe)
	}
	return line
}

// tagFormat is how a tagged statsd line carries its tags, as Envoy's
// TagFormat: the bytes that start them, join a name to its value and
// separate two tags, whether they follow the name (Graphite) or the type
// (DogStatsD), and the bytes a name or tag may not hold.
type tagFormat struct {
	start                 string
	assign, separator     byte
	afterName             bool
	nameUnsafe, tagUnsafe string
}

// dogStatsdTags is DogStatsD's format: "name:1|c|#k:v,k2:v2".
func dogStatsdTags() *tagFormat {
	return &tagFormat{start: "|#", assign: ':', separator: ',', nameUnsafe: nameUnsafe, tagUnsafe: tagUnsafe}
}

// graphiteTags is Graphite's format: "name;k=v;k2=v2:1|c". A ';' in a name
// would start a tag, and a ':' or '|' in a tag would end the name.
func graphiteTags() *tagFormat {
	return &tagFormat{start: ";", assign: '=', separator: ';', afterName: true,
		nameUnsafe: nameUnsafe + ";", tagUnsafe: ";=:|\n\r"}
}

// The bytes that would break a statsd line in a name (the value and type
// separators, line ends) and in a DogStatsD tag (also the tag separators).
// Names come from the configuration (cluster names, stat prefixes), so a
// hostile or careless one must not inject lines.
const (
	nameUnsafe = ":|\n\r"
	tagUnsafe  = "|,#\n\r"
)

// appendStatsdName appends b with every unsafe byte replaced by '_'.
func appendStatsdName[T string | []byte](dst []byte, b T, unsafe string) []byte {
	for i := range len(b) {
		c := b[i]
		if strings.IndexByte(unsafe, c) >= 0 {
			c = '_'
		}
		dst = append(dst, c)
	}
	return dst
}

// add appends the current line to the batch, sending the datagram first
// when the line would not fit in it. A line longer than a datagram goes
// alone.
func (k *StatsdSink) add() error {
	if k.udp && len(k.buf) > 0 && len(k.buf)+1+len(k.line) > k.maxSize {
		if err := k.send(); err != nil {
			return err
		}
	}
	if len(k.buf) > 0 {
		k.buf = append(k.buf, '\n')
	}
	k.buf = append(k.buf, k.line...)
	return nil
}

// send writes the batch: one datagram over UDP, or the whole flush with a
// final newline over TCP.
func (k *StatsdSink) send() error {
	if len(k.buf) == 0 {
		return nil
	}
	if !k.udp {
		k.buf = append(k.buf, '\n')
		_ = k.conn.SetWriteDeadline(time.Now().Add(statsdWriteTimeout))
	}
	_, err := k.conn.Write(k.buf)
	k.buf = k.buf[:0]
	return err
}

// Close closes the sink's connection.
func (k *StatsdSink) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.conn == nil {
		return nil
	}
	err := k.conn.Close()
	k.conn = nil
	return err
}
