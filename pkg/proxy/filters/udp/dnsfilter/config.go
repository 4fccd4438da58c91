// Package dnsfilter is the DNS filter (envoy.filters.udp.dns_filter): a
// UDP listener filter that answers DNS queries from a table of virtual
// domains (address lists, clusters' hosts, SRV services) and, with
// client_config, forwards the names the table does not know to upstream
// resolvers. Queries are parsed and answers built as Envoy's filter does
// (dns_parser.cc): one question per query, A, AAAA and SRV answers, at
// most eight answers within 512 bytes, NXDOMAIN without answers. Stats
// are Envoy's, under dns_filter.<stat_prefix>.
package dnsfilter

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	dnstablev3 "github.com/envoyproxy/go-control-plane/envoy/data/dns/v3"
	dnsfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/udp/dns_filter/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/outrigger-dev/outrigger/pkg/proxy/dns"
	"github.com/outrigger-dev/outrigger/pkg/proxy/udpfilter"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.udp.dns_filter"

// defaultResolverTimeout is Envoy's resolver_timeout default.
const defaultResolverTimeout = 500 * time.Millisecond

// maxTableFile bounds the external table file read.
const maxTableFile = 16 << 20

// Factory compiles DnsFilterConfig configurations.
type Factory struct{}

var _ udpfilter.Factory = Factory{}

// config is a compiled DnsFilterConfig.
type config struct {
	statPrefix string
	table      *table
	// forward is set by client_config: names the table does not know go
	// to the resolver.
	forward         bool
	resolver        dns.Spec
	resolverTimeout time.Duration
	maxPending      uint64
}

// Compile implements udpfilter.Factory. Errors name the field path below
// typed_config.
func (Factory) Compile(msg proto.Message, ctx udpfilter.Context) (udpfilter.Filter, error) {
	cfg, ok := msg.(*dnsfilterv3.DnsFilterConfig)
	if !ok {
		return nil, fmt.Errorf("expected a %s, got %T", proto.MessageName(&dnsfilterv3.DnsFilterConfig{}), msg)
	}
	c, notes, err := compile(cfg, ctx, rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())))
	if err != nil {
		return nil, err
	}
	for _, n := range notes {
		ctx.Log.Info("dns_filter: " + n)
	}
	return newFilter(c, ctx), nil
}

// compile checks a DnsFilterConfig and reads what it configures. Fields
// Outrigger does not implement are refused with their path (the loader's
// support check refuses them too; this guards other callers). notes are
// what Envoy accepts and does nothing with, for the log.
func compile(cfg *dnsfilterv3.DnsFilterConfig, ctx udpfilter.Context, rng *rand.Rand) (*config, []string, error) {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	c := &config{statPrefix: cfg.GetStatPrefix(), resolverTimeout: defaultResolverTimeout}
	if c.statPrefix == "" {
		fail("stat_prefix: required")
	}
	if len(cfg.GetAccessLog()) > 0 {
		fail("access_log: not supported by Outrigger's DNS filter yet")
	}
	var notes []string
	tbl := &dnstablev3.DnsTable{}
	switch src := cfg.GetServerConfig().GetConfigSource().(type) {
	case *dnsfilterv3.DnsFilterConfig_ServerContextConfig_InlineDnsTable:
		tbl = src.InlineDnsTable
	case *dnsfilterv3.DnsFilterConfig_ServerContextConfig_ExternalDnsTable:
		t, note, err := loadTable(src.ExternalDnsTable.GetFilename(), src.ExternalDnsTable.GetSpecifier() != nil)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("server_config.external_dns_table.%w", err))
		case note != "":
			// As Envoy: a table that cannot be read leaves the filter
			// without one.
			notes = append(notes, "server_config.external_dns_table: "+note+"; the filter answers without a table")
		default:
			tbl = t
		}
	}
	tablePath := "server_config.inline_dns_table."
	if cfg.GetServerConfig().GetExternalDnsTable() != nil {
		tablePath = "server_config.external_dns_table: "
	}
	//lint:ignore SA1019 Envoy ignores it too: the suffixes come from the virtual domains.
	if len(tbl.GetKnownSuffixes()) > 0 {
		notes = append(notes, tablePath+"known_suffixes: deprecated and unused by Envoy; the known suffixes are the virtual domains'")
	}
	t, terrs := compileTable(tbl, cfg.GetCaseInsensitive(), rng)
	for _, err := range terrs {
		errs = append(errs, fmt.Errorf("%s%w", tablePath, err))
	}
	for _, n := range t.notes {
		notes = append(notes, tablePath+n)
	}
	c.table = t
	if cc := cfg.GetClientConfig(); cc != nil {
		c.forward = true
		if d := cc.GetResolverTimeout(); d != nil {
			c.resolverTimeout = d.AsDuration()
			if c.resolverTimeout < time.Second {
				fail("client_config.resolver_timeout: must be at least 1s")
			}
		}
		c.maxPending = cc.GetMaxPendingLookups()
		if c.maxPending == 0 {
			fail("client_config.max_pending_lookups: must be at least 1")
		}
		//lint:ignore SA1019 refused below, as Envoy no longer reads it.
		if len(cc.GetUpstreamResolvers()) > 0 {
			fail("client_config.upstream_resolvers: not implemented by Envoy (a field of 1.19.0 and 1.19.1); use typed_dns_resolver_config")
		}
		spec, serrs := resolverSpec(cc, ctx)
		errs = append(errs, serrs...)
		c.resolver = spec
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	return c, notes, nil
}

// resolverSpec is client_config's resolver, chosen as Envoy chooses it:
// typed_dns_resolver_config, else the deprecated dns_resolution_config,
// else the default c-ares resolver (the system's nameservers).
func resolverSpec(cc *dnsfilterv3.DnsFilterConfig_ClientContextConfig, ctx udpfilter.Context) (dns.Spec, []error) {
	var (
		spec dns.Spec
		errs []error
	)
	//lint:ignore SA1019 Envoy still reads the deprecated field.
	rc := cc.GetDnsResolutionConfig()
	switch {
	case cc.GetTypedDnsResolverConfig() != nil:
		spec, errs = dns.FromTyped(cc.GetTypedDnsResolverConfig(), ctx.Extensions)
		for i, err := range errs {
			errs[i] = fmt.Errorf("client_config.typed_dns_resolver_config.%w", err)
		}
	case rc != nil:
		spec, errs = dns.FromResolutionConfig(rc, "client_config.dns_resolution_config")
	default:
		spec = dns.CaresSpec(dns.CaresOptions{})
	}
	return spec, errs
}

// loadTable reads the DnsTable of an external_dns_table file, as Envoy's
// MessageUtil::loadFromFile: by its extension, .pb binary, .pb_text text,
// .yaml and .yml YAML, anything else JSON; unknown fields are ignored.
// Envoy reads only a filename: another DataSource is refused. A file that
// cannot be read or decoded is a note, not an error, as Envoy logs it and
// goes on without a table.
func loadTable(name string, set bool) (*dnstablev3.DnsTable, string, error) {
	if name == "" {
		if set {
			return nil, "", errors.New("specifier: Envoy reads the table from a filename only")
		}
		return nil, "", errors.New("filename: required")
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err.Error(), nil
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxTableFile+1))
	if err != nil {
		return nil, err.Error(), nil
	}
	if len(b) > maxTableFile {
		return nil, fmt.Sprintf("%s is larger than %d bytes", name, maxTableFile), nil
	}
	t := &dnstablev3.DnsTable{}
	switch ext := strings.ToLower(filepath.Ext(name)); ext {
	case ".pb":
		err = proto.Unmarshal(b, t)
	case ".pb_text":
		err = prototext.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(b, t)
	case ".yaml", ".yml":
		var j []byte
		if j, err = sigsyaml.YAMLToJSON(b); err == nil {
			err = protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(j, t)
		}
	default:
		err = protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(b, t)
	}
	if err != nil {
		return nil, fmt.Sprintf("cannot decode %s: %v", name, err), nil
	}
	return t, "", nil
}
