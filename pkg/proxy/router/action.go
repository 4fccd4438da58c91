package router

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/datasource"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// DefaultTimeout is a route's upstream timeout when it configures none.
const DefaultTimeout = 15 * time.Second

// DefaultMaxDirectResponseBodySize is Envoy's limit on a direct response
// body when the route configuration sets none.
const DefaultMaxDirectResponseBodySize = 4096

// DirectResponse is a response the proxy answers itself.
type DirectResponse struct {
	Status uint32
	Body   string
	// format is body_format, nil without one: the body is then its
	// %LOCAL_REPLY_BODY%. contentType is its content_type (JSON
	// formats default to application/json), "" for the local reply's.
	format      *accesslog.Formatter
	contentType string
}

// Render is the response's body for the request e describes, and the
// content type a body_format sets ("" for the local reply's default).
func (d *DirectResponse) Render(e *accesslog.Entry) (body, contentType string) {
	if d.format == nil {
		return d.Body, ""
	}
	e.LocalReplyBody = d.Body
	body = string(d.format.Append(nil, e))
	e.LocalReplyBody = ""
	return body, d.contentType
}

// WeightedClusters spreads a route's requests over clusters by weight.
type WeightedClusters struct {
	Clusters []WeightedCluster
	// Total is the sum of the weights, above zero.
	Total uint64
	// HeaderName (header_name) names the request header whose unsigned
	// number picks the cluster instead of a random one; UseHashPolicy
	// (use_hash_policy) has the route's hash policy make that number, so
	// that proxies in a row pick alike. Either falls back to a random
	// number when the request has no usable value.
	HeaderName    string
	UseHashPolicy bool
	// runtimePrefix is runtime_key_prefix: the clusters' weights may
	// come from the runtime (see PickClusterWith).
	runtimePrefix string
}

// WeightedCluster is one cluster of a weighted_clusters action.
type WeightedCluster struct {
	Name   string
	Weight uint32
	// MetadataMatch is the cluster's metadata_match merged over the
	// route's, nil when neither has one.
	MetadataMatch *upstream.MetadataMatch
	// filters is the cluster's typed_per_filter_config, the most
	// specific level.
	filters filterConfigs
	// runtimeKey is <runtime_key_prefix>.<name>, "" without a prefix.
	runtimeKey string
	// ClusterHeader (cluster_header, instead of Name) names the request
	// header whose value is the cluster, as a route's cluster_header.
	ClusterHeader string
	// requestOps and responseOps are the cluster's own header edits,
	// hostRewrite its host_rewrite_literal (see weighted_headers.go).
	requestOps, responseOps *headerOps
	hostRewrite             string
}

// Pick chooses a cluster from a random number, as Envoy does: the random
// value modulo the total weight falls into one cluster's share, clusters
// taken in configuration order.
func (w *WeightedClusters) Pick(random uint64) string {
	return w.Clusters[w.PickIndex(random)].Name
}

// PickIndex is Pick, as the index of the cluster chosen.
func (w *WeightedClusters) PickIndex(random uint64) int {
	v := random % w.Total
	var end uint64
	for i, c := range w.Clusters {
		end += uint64(c.Weight)
		if v < end {
			return i
		}
	}
	// Unreachable: the weights add up to Total.
	return len(w.Clusters) - 1
}

// hasFilterConfigs reports whether a cluster has a
// typed_per_filter_config; false for nil.
func (w *WeightedClusters) hasFilterConfigs() bool {
	if w == nil {
		return false
	}
	for _, c := range w.Clusters {
		if len(c.filters) > 0 {
			return true
		}
	}
	return false
}

// compileRouteAction compiles a RouteAction into r; errors name the field
// below it.
func compileRouteAction(r *Route, a *routev3.RouteAction, opts *Options) error {
	switch c := a.GetClusterSpecifier().(type) {
	case *routev3.RouteAction_Cluster:
		r.Cluster = c.Cluster
	case *routev3.RouteAction_WeightedClusters:
		w, err := compileWeighted(c.WeightedClusters, opts)
		if err != nil {
			return fmt.Errorf("weighted_clusters.%w", err)
		}
		r.WeightedClusters = w
	case *routev3.RouteAction_ClusterHeader:
		r.ClusterHeader = strings.ToLower(c.ClusterHeader)
	case *routev3.RouteAction_ClusterSpecifierPlugin, *routev3.RouteAction_InlineClusterSpecifierPlugin:
		if err := compileRouteClusterSpecifier(r, a, opts); err != nil {
			return err
		}
	case nil:
		return errors.New("cluster_specifier: one of cluster, weighted_clusters, cluster_header, cluster_specifier_plugin or inline_cluster_specifier_plugin is required")
	default:
		return fmt.Errorf("cluster_specifier: %s is not supported by Outrigger", oneofName(a.ProtoReflect(), "cluster_specifier"))
	}
	switch code := a.GetClusterNotFoundResponseCode(); code {
	case routev3.RouteAction_SERVICE_UNAVAILABLE:
		r.ClusterNotFoundStatus = 503
	case routev3.RouteAction_NOT_FOUND:
		r.ClusterNotFoundStatus = 404
	case routev3.RouteAction_INTERNAL_SERVER_ERROR:
		r.ClusterNotFoundStatus = 500
	default:
		return fmt.Errorf("cluster_not_found_response_code: %v is not supported by Outrigger", code)
	}

	var err error
	r.Timeout = DefaultTimeout
	if t := a.GetTimeout(); t != nil {
		d, err := duration(t)
		if err != nil {
			return fmt.Errorf("timeout: %w", err)
		}
		r.Timeout = d
	}
	if r.StreamDuration, err = compileStreamDuration(a.GetMaxStreamDuration()); err != nil {
		return fmt.Errorf("max_stream_duration.%w", err)
	}
	if r.StreamDuration != nil {
		// A route with max_stream_duration uses the "new timeouts", as
		// Envoy calls them: its timeout (and the 15 s default) and
		// max_grpc_timeout no longer apply upstream.
		r.Timeout = 0
	} else if r.GrpcTimeout, err = compileGrpcTimeout(a); err != nil {
		return err
	}
	if r.RetryPolicy, err = compileRetryPolicy(a.GetRetryPolicy()); err != nil {
		return fmt.Errorf("retry_policy.%w", err)
	}
	if hp := a.GetHedgePolicy(); hp != nil {
		if r.HedgeOnPerTryTimeout, err = compileHedgePolicy(hp); err != nil {
			return fmt.Errorf("hedge_policy.%w", err)
		}
		r.hedgeSet = true
	}
	if t := a.GetIdleTimeout(); t != nil {
		d, err := duration(t)
		if err != nil {
			return fmt.Errorf("idle_timeout: %w", err)
		}
		r.idleTimeout, r.idleTimeoutSet = d, true
	}
	if t := a.GetFlushTimeout(); t != nil {
		d, err := duration(t)
		if err != nil {
			return fmt.Errorf("flush_timeout: %w", err)
		}
		r.flushTimeout, r.flushTimeoutSet = d, true
	}

	r.HighPriority = a.GetPriority() == corev3.RoutingPriority_HIGH
	if err := compileHostRewrite(r, a); err != nil {
		return err
	}

	rw, err := compileRewrite(a.GetPrefixRewrite(), a.GetRegexRewrite())
	if err != nil {
		return err
	}
	if err := compileTemplateRewrite(&rw, a, r.match.tmpl); err != nil {
		return err
	}
	r.rewrite = rw
	if err := compilePathFormat(r, a); err != nil {
		return err
	}
	//lint:ignore SA1019 Envoy still honours a route's deprecated cors field
	if c := a.GetCors(); c != nil {
		p, err := CompileCorsPolicy(c)
		if err != nil {
			return fmt.Errorf("cors.%w", err)
		}
		r.Cors = p
	}
	if r.RateLimits, err = compileRateLimits(a.GetRateLimits()); err != nil {
		return fmt.Errorf("rate_limits%w", err)
	}
	if err := compileUpgrades(r, a.GetUpgradeConfigs()); err != nil {
		return err
	}
	if r.Mirrors, err = compileMirrorPolicies(a.GetRequestMirrorPolicies()); err != nil {
		return fmt.Errorf("request_mirror_policies%w", err)
	}
	if hp := a.GetHashPolicy(); len(hp) > 0 {
		if r.HashPolicy, err = CompileHashPolicy(hp); err != nil {
			return fmt.Errorf("hash_policy%w", err)
		}
	}
	//lint:ignore SA1019 Envoy still honours the deprecated include_vh_rate_limits
	r.IncludeVHRateLimits = a.GetIncludeVhRateLimits().GetValue()
	compileMetadataMatch(r, a)
	return compileInternalRedirect(r, a)
}

// duration converts a configured duration, refusing negative ones.
func duration(d *durationpb.Duration) (time.Duration, error) {
	if err := d.CheckValid(); err != nil {
		return 0, err
	}
	v := d.AsDuration()
	if v < 0 {
		return 0, fmt.Errorf("%v is negative", v)
	}
	return v, nil
}

func compileWeighted(w *routev3.WeightedCluster, opts *Options) (*WeightedClusters, error) {
	wc := &WeightedClusters{}
	for i, c := range w.GetClusters() {
		if c.GetName() == "" && c.GetClusterHeader() == "" {
			return nil, fmt.Errorf("clusters[%d].name: a cluster name (or cluster_header) is required", i)
		}
		weight := c.GetWeight().GetValue()
		fc, err := compileFilterConfigs(c.GetTypedPerFilterConfig(), opts)
		if err != nil {
			return nil, fmt.Errorf("clusters[%d].%w", i, err)
		}
		cw := WeightedCluster{Name: c.GetName(), Weight: weight, filters: fc, ClusterHeader: strings.ToLower(c.GetClusterHeader())}
		if err := compileWeightedHeaders(c, &cw); err != nil {
			return nil, fmt.Errorf("clusters[%d].%w", i, err)
		}
		wc.Clusters = append(wc.Clusters, cw)
		wc.Total += uint64(weight)
	}
	if len(wc.Clusters) == 0 {
		return nil, errors.New("clusters: at least one cluster is required")
	}
	wc.HeaderName = strings.ToLower(w.GetHeaderName())
	if p := w.GetRuntimeKeyPrefix(); p != "" {
		wc.runtimePrefix = p
		for i := range wc.Clusters {
			if n := wc.Clusters[i].Name; n != "" {
				wc.Clusters[i].runtimeKey = p + "." + n
			}
		}
	}
	wc.UseHashPolicy = w.GetUseHashPolicy().GetValue()
	if wc.Total == 0 {
		return nil, errors.New("clusters: the sum of the weights must be above 0")
	}
	if t := legacyTotalWeight(w); t != nil && uint64(t.GetValue()) != wc.Total {
		return nil, fmt.Errorf("total_weight: %d is not the sum of the weights (%d)", t.GetValue(), wc.Total)
	}
	return wc, nil
}

// compileDirect compiles a DirectResponseAction.
func compileDirect(d *routev3.DirectResponseAction, maxBody uint32, opts *Options) (*DirectResponse, error) {
	dr := &DirectResponse{Status: d.GetStatus()}
	if dr.Status < 200 || dr.Status > 599 {
		return nil, fmt.Errorf("status: %d is not in [200, 599]", dr.Status)
	}
	if b := d.GetBody(); b != nil {
		switch s := b.GetSpecifier().(type) {
		case *corev3.DataSource_InlineString:
			dr.Body = s.InlineString
		case *corev3.DataSource_InlineBytes:
			dr.Body = string(s.InlineBytes)
		case *corev3.DataSource_Filename:
			body, err := readBodyFile(s.Filename, maxBody)
			if err != nil {
				return nil, fmt.Errorf("body.filename: %w", err)
			}
			dr.Body = body
		case *corev3.DataSource_EnvironmentVariable:
			body, err := datasource.Env(s.EnvironmentVariable)
			if err != nil {
				return nil, fmt.Errorf("body.%w", err)
			}
			dr.Body = body
		default:
			return nil, fmt.Errorf("body.%s: not supported by Outrigger (only inline_string and inline_bytes are)", oneofName(b.ProtoReflect(), "specifier"))
		}
	}
	if uint64(len(dr.Body)) > uint64(maxBody) {
		return nil, fmt.Errorf("body: %d bytes is above the maximum of %d (max_direct_response_body_size_bytes)", len(dr.Body), maxBody)
	}
	if sf := d.GetBodyFormat(); sf != nil {
		f, err := accesslog.CompileSubstitution(sf, opts.Formatters)
		if err != nil {
			return nil, fmt.Errorf("body_format.%w", err)
		}
		dr.format, dr.contentType = f, sf.GetContentType()
		if dr.contentType == "" && sf.GetJsonFormat() != nil {
			dr.contentType = "application/json"
		}
	}
	return dr, nil
}

// readBodyFile reads a direct response body from a file, once, when the
// configuration loads (as Envoy does), reading no more than one byte past
// max so that a huge file is refused without being read whole.
func readBodyFile(name string, max uint32) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(max)+1))
	if err != nil {
		return "", err
	}
	if uint64(len(b)) > uint64(max) {
		return "", fmt.Errorf("%s is larger than the maximum of %d bytes (max_direct_response_body_size_bytes)", name, max)
	}
	return string(b), nil
}

// rewrite is a compiled prefix_rewrite, regex_rewrite or
// path_rewrite_policy.
type rewrite struct {
	prefix    string
	hasPrefix bool
	re        *regexp.Regexp
	// tmpl is path_rewrite_policy's uri_template rewriter.
	tmpl *TemplateRewrite
	// substitution is the RE2 substitution turned into Go's template
	// syntax (\1 becomes ${1}).
	substitution string
}

// compileRewrite compiles a prefix_rewrite and regex_rewrite pair; errors
// name the field.
func compileRewrite(prefix string, rr *matcherv3.RegexMatchAndSubstitute) (rewrite, error) {
	rw := rewrite{prefix: prefix, hasPrefix: prefix != ""}
	if rr == nil {
		return rw, nil
	}
	if rw.hasPrefix {
		return rw, errors.New("regex_rewrite: cannot be combined with prefix_rewrite")
	}
	re, err := regexp.Compile(rr.GetPattern().GetRegex())
	if err != nil {
		return rw, fmt.Errorf("regex_rewrite.pattern.regex: %w", err)
	}
	sub, err := goTemplate(rr.GetSubstitution(), re.NumSubexp())
	if err != nil {
		return rw, fmt.Errorf("regex_rewrite.substitution: %w", err)
	}
	rw.re, rw.substitution = re, sub
	return rw, nil
}

// goTemplate turns an RE2 substitution (\0-\9 name groups, \\ is a
// backslash) into regexp.Expand's template syntax, refusing what RE2 would
// refuse.
func goTemplate(sub string, groups int) (string, error) {
	var b strings.Builder
	for i := 0; i < len(sub); i++ {
		c := sub[i]
		switch c {
		case '$':
			b.WriteString("$$")
		case '\\':
			if i+1 >= len(sub) {
				return "", errors.New("ends with a lone backslash")
			}
			i++
			switch d := sub[i]; {
			case d == '\\':
				b.WriteByte('\\')
			case d >= '0' && d <= '9':
				if n := int(d - '0'); n > groups {
					return "", fmt.Errorf("\\%d refers to a group the pattern does not have (it has %d)", n, groups)
				}
				b.WriteString("${")
				b.WriteByte(d)
				b.WriteByte('}')
			default:
				return "", fmt.Errorf("invalid escape \\%c (use \\0-\\9 or \\\\)", d)
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// active reports whether the route rewrites paths.
func (rw *rewrite) active() bool { return rw.hasPrefix || rw.re != nil || rw.tmpl != nil }

// apply rewrites path (query included). matched is how many leading bytes
// of path the route's path matcher matched: they are what prefix_rewrite
// replaces. A regex rewrite replaces every match in the path without its
// query. The query string is kept either way.
func (rw *rewrite) apply(path string, matched int) string {
	if rw.hasPrefix {
		return rw.prefix + path[matched:]
	}
	if rw.tmpl != nil {
		// A path the matcher does not capture (it always does on the
		// route that matched) is left alone, as Envoy leaves it.
		out, _ := rw.tmpl.Rewrite(path)
		return out
	}
	p := pathOnly(path)
	return rw.re.ReplaceAllString(p, rw.substitution) + path[len(p):]
}
