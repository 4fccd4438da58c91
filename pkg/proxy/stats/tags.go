package stats

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"

	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/config/metrics/v3"
)

// Tag is one extracted tag. Value aliases the name it was extracted from
// (or the producer's fixed value): copy it to keep it.
type Tag struct {
	Name  string
	Value []byte
}

// Extraction is the result of TagProducer.Extract, reused across calls so
// that extracting a million names does not allocate a million results.
type Extraction struct {
	// Name is the tag-extracted name: the stat name with every extracted
	// tag's removed part cut out.
	Name []byte
	// Tags are the tags in extraction order: fixed tags first, then each
	// extractor's in configuration order.
	Tags   []Tag
	remove [][2]int
}

// tagExtractor pulls one tag out of a name with a regular expression whose
// first group is the part removed from the name and whose second group,
// when present, is the value (else the first group is).
type tagExtractor struct {
	name    string
	re      *regexp.Regexp
	prefix  string // the name must start with it: a cheap pre-filter
	substr  []byte // the name must contain it: a cheap pre-filter
	exclude string // a value that does not make a tag ("admin" for listeners)
	// tokenized says re is "^prefix((value)\.)", matched without the regex
	// engine: the token after prefix, which a dot must follow.
	tokenized bool
	// fast, when set, matches re without the regex engine.
	fast fastMatcher
}

// match returns the removed span and the value span of the extractor's
// match in name, or ok=false.
func (e *tagExtractor) match(name []byte) (rs, re, vs, ve int, ok bool) {
	if e.tokenized {
		rest := name[len(e.prefix):]
		dot := bytes.IndexByte(rest, '.')
		if dot <= 0 {
			return 0, 0, 0, 0, false
		}
		vs, ve = len(e.prefix), len(e.prefix)+dot
		return vs, ve + 1, vs, ve, true
	}
	if e.fast != nil {
		return e.fast(name)
	}
	m := e.re.FindSubmatchIndex(name)
	if m == nil || m[2] < 0 {
		return 0, 0, 0, 0, false
	}
	rs, re = m[2], m[3]
	vs, ve = rs, re
	if len(m) >= 6 && m[4] >= 0 {
		vs, ve = m[4], m[5]
	}
	return rs, re, vs, ve, true
}

// TagProducer turns stat names into a tag-extracted name and tags, as the
// Prometheus renderer and the dog_statsd sink need. It is immutable and
// safe for concurrent use.
type TagProducer struct {
	fixed      []Tag
	extractors []tagExtractor
	// byHead lists, for each first name segment that some extractor's
	// prefix starts with, the extractors a name with that head can match:
	// those with that head and those with no prefix, in configuration
	// order. headless lists the extractors with no prefix, for every
	// other name. Most of the default extractors are for one head, so a
	// name is tried against a third of them.
	byHead   map[string][]int
	headless []int
}

// NewTagProducer builds the extractors of a stats_config: its stats_tags
// in order, then (unless use_all_default_tags is false) every default
// extractor whose tag name was not configured. A nil config gives the
// defaults.
func NewTagProducer(cfg *metricsv3.StatsConfig) (*TagProducer, error) {
	p := &TagProducer{}
	names := map[string]bool{}
	for i, spec := range cfg.GetStatsTags() {
		name := canonicalTagName(spec.GetTagName())
		if name == "" {
			return nil, fmt.Errorf("stats_config.stats_tags[%d]: tag_name is empty", i)
		}
		switch v := spec.GetTagValue().(type) {
		case *metricsv3.TagSpecifier_FixedValue:
			p.fixed = append(p.fixed, Tag{Name: name, Value: []byte(v.FixedValue)})
		case *metricsv3.TagSpecifier_Regex:
			x, err := newRegexExtractor(name, v.Regex)
			if err != nil {
				return nil, fmt.Errorf("stats_config.stats_tags[%d]: %w", i, err)
			}
			p.extractors = append(p.extractors, x)
		default:
			found := false
			for _, d := range defaultExtractors {
				if d.name == name {
					x, err := d.compile()
					if err != nil {
						return nil, err
					}
					p.extractors = append(p.extractors, x)
					found = true
				}
			}
			if !found {
				return nil, fmt.Errorf("stats_config.stats_tags[%d]: no regex specified for tag specifier and no default regex for name %q", i, spec.GetTagName())
			}
		}
		names[name] = true
	}
	if cfg.GetUseAllDefaultTags() == nil || cfg.GetUseAllDefaultTags().GetValue() {
		for _, d := range defaultExtractors {
			if names[d.name] {
				continue
			}
			x, err := d.compile()
			if err != nil {
				return nil, err
			}
			p.extractors = append(p.extractors, x)
		}
	}
	p.indexHeads()
	return p, nil
}

// indexHeads fills byHead and headless.
func (p *TagProducer) indexHeads() {
	p.byHead = map[string][]int{}
	for _, e := range p.extractors {
		if head, _, ok := strings.Cut(e.prefix, "."); ok {
			p.byHead[head] = nil
		}
	}
	for i, e := range p.extractors {
		if head, _, ok := strings.Cut(e.prefix, "."); ok {
			p.byHead[head] = append(p.byHead[head], i)
			continue
		}
		// No prefix (configured extractors have none), or one without a
		// dot (no default has one): any name may match.
		p.headless = append(p.headless, i)
		for h := range p.byHead {
			p.byHead[h] = append(p.byHead[h], i)
		}
	}
}

// candidates returns the extractors that name can match.
func (p *TagProducer) candidates(name []byte) []int {
	if dot := bytes.IndexByte(name, '.'); dot >= 0 {
		if c, ok := p.byHead[string(name[:dot])]; ok {
			return c
		}
	}
	return p.headless
}

// canonicalTagName maps Envoy's "envoy." tag names to ours, so configs
// written for Envoy keep working.
func canonicalTagName(n string) string {
	if rest, ok := strings.CutPrefix(n, "envoy."); ok {
		return "proxy." + rest
	}
	return n
}

func newRegexExtractor(name, pattern string) (tagExtractor, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return tagExtractor{}, fmt.Errorf("tag %q: invalid regex: %w", name, err)
	}
	if re.NumSubexp() < 1 {
		return tagExtractor{}, fmt.Errorf("tag %q: regex %q has no capture group", name, pattern)
	}
	return tagExtractor{name: name, re: re}, nil
}

// Extract fills x with the tag-extracted name and tags of name.
func (p *TagProducer) Extract(name []byte, x *Extraction) {
	x.Tags = append(x.Tags[:0], p.fixed...)
	x.remove = x.remove[:0]
	for _, i := range p.candidates(name) {
		e := &p.extractors[i]
		if e.prefix != "" && !hasPrefix(name, e.prefix) {
			continue
		}
		if e.substr != nil && !bytes.Contains(name, e.substr) {
			continue
		}
		rs, re, vs, ve, ok := e.match(name)
		if !ok {
			continue
		}
		value := name[vs:ve]
		if e.exclude != "" && string(value) == e.exclude {
			continue
		}
		if slices.ContainsFunc(x.Tags, func(t Tag) bool { return t.Name == e.name }) {
			continue
		}
		x.Tags = append(x.Tags, Tag{Name: e.name, Value: value})
		x.remove = append(x.remove, [2]int{rs, re})
	}
	x.Name = x.Name[:0]
	if len(x.remove) == 0 {
		x.Name = append(x.Name, name...)
		return
	}
	slices.SortFunc(x.remove, func(a, b [2]int) int { return a[0] - b[0] })
	pos := 0
	for _, r := range x.remove {
		if r[0] > pos {
			x.Name = append(x.Name, name[pos:r[0]]...)
		}
		pos = max(pos, r[1])
	}
	x.Name = append(x.Name, name[pos:]...)
}

// ExtractString is Extract for callers holding a string, such as tests and
// sinks that are not on a hot path.
func (p *TagProducer) ExtractString(name string) (string, []Tag) {
	var x Extraction
	b := []byte(name)
	p.Extract(b, &x)
	return string(x.Name), x.Tags
}

func hasPrefix(b []byte, p string) bool { return len(b) >= len(p) && string(b[:len(p)]) == p }
