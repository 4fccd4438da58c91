// Package iptagging is the HTTP filter envoy.filters.http.ip_tagging: it
// tags a request by the client's address, as Envoy's filter does. Each
// tag has a list of CIDR ranges; the tags whose ranges hold the client's
// address are joined with "," into x-envoy-ip-tags (or the header of
// ip_tag_header), and counted in http.<stat_prefix>.ip_tagging.<tag>.hit,
// no_hit and total. The tags come from ip_tags or from a YAML or JSON
// file (ip_tags_datasource), read once when the configuration loads.
package iptagging

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"

	iptv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ip_tagging/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/outrigger-dev/outrigger/pkg/proxy/cidr"
	"github.com/outrigger-dev/outrigger/pkg/proxy/datasource"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.ip_tagging"

// enabledKey is Envoy's runtime key of the share of requests the filter
// tags (a percentage, 100 by default).
const enabledKey = "ip_tagging.http_filter_enabled"

// defaultHeader is the header the tags go in without ip_tag_header.
const defaultHeader = "x-envoy-ip-tags"

// Factory builds the filter.
type Factory struct{}

var _ httpfilter.Factory = Factory{}

// Compile implements httpfilter.Factory.
func (Factory) Compile(config proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	cfg, ok := config.(*iptv3.IPTagging)
	if !ok {
		return nil, errors.New("not an IPTagging configuration")
	}
	if ctx.Stats == nil {
		return nil, errors.New("no stat store")
	}
	tags, field := cfg.GetIpTags(), "ip_tags"
	switch {
	case len(tags) == 0 && cfg.GetIpTagsDatasource() == nil:
		return nil, errors.New("ip_tags: HTTP IP Tagging Filter requires either ip_tags or ip_tags_datasource to be specified")
	case len(tags) > 0 && cfg.GetIpTagsDatasource() != nil:
		return nil, errors.New("ip_tags_datasource: only one of ip_tags or ip_tags_datasource can be configured")
	case len(tags) == 0:
		var err error
		if tags, err = readTags(cfg); err != nil {
			return nil, fmt.Errorf("ip_tags_datasource.%w", err)
		}
		field = "ip_tags_datasource.ip_tags"
	}
	c := &filterConfig{
		requestType: cfg.GetRequestType(),
		header:      defaultHeader,
		runtime:     ctx.Runtime,
		enabled:     runtime.Fraction{Key: enabledKey, Numerator: 100, Denominator: 100},
	}
	if h := cfg.GetIpTagHeader(); h != nil {
		c.header = strings.ToLower(h.GetHeader())
		c.custom = true
		c.appendHeader = h.GetAction() == iptv3.IPTagging_IpTagHeader_APPEND_IF_EXISTS_OR_ADD
	}
	scope := ctx.Stats.Scope(ctx.StatPrefix + "ip_tagging.")
	c.noHit, c.total = scope.Counter("no_hit"), scope.Counter("total")
	for i, t := range tags {
		tg := tag{name: t.GetIpTagName(), hit: scope.Counter(t.GetIpTagName() + ".hit")}
		for j, r := range t.GetIpList() {
			p, err := cidr.Parse(r)
			if err != nil {
				return nil, fmt.Errorf("%s[%d].ip_list[%d].%w", field, i, j, err)
			}
			tg.ranges = append(tg.ranges, p)
		}
		c.tags = append(c.tags, tg)
	}
	return c, nil
}

// readTags reads the tags of ip_tags_datasource: a YAML or JSON file
// (by its extension) of an IPTags message, as Envoy reads it.
func readTags(cfg *iptv3.IPTagging) ([]*iptv3.IPTagging_IPTag, error) {
	ds := cfg.GetIpTagsDatasource()
	name := ds.GetFilename()
	if name == "" {
		return nil, errors.New("filename: cannot load tags from empty filename in datasource")
	}
	ext := filepath.Ext(name)
	if ext != ".yaml" && ext != ".json" {
		return nil, fmt.Errorf("filename: unsupported file format, unable to parse ip tags from file %s", name)
	}
	b, err := datasource.Read(ds)
	if err != nil {
		return nil, err
	}
	if ext == ".yaml" {
		if b, err = yaml.YAMLToJSON(b); err != nil {
			return nil, fmt.Errorf("filename: %s: %w", name, err)
		}
	}
	var set iptv3.IPTagging_IPTags
	if err := protojson.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("filename: %s: %w", name, err)
	}
	if err := set.ValidateAll(); err != nil {
		return nil, fmt.Errorf("filename: %s: %w", name, err)
	}
	return set.GetIpTags(), nil
}

// filterConfig is the compiled filter.
type filterConfig struct {
	requestType iptv3.IPTagging_RequestType
	// header receives the tags; custom: it is ip_tag_header's, whose
	// action appendHeader chooses (else a request without tags loses
	// it).
	header       string
	custom       bool
	appendHeader bool
	tags         []tag
	runtime      httpfilter.Runtime
	enabled      runtime.Fraction
	noHit, total *stats.Counter
}

// tag is one compiled IPTag.
type tag struct {
	name   string
	ranges []netip.Prefix
	hit    *stats.Counter
}

// NewFilter implements httpfilter.Config: the filter keeps no state per
// request.
func (c *filterConfig) NewFilter() httpfilter.Filter { return (*filter)(c) }
