//lint:file-ignore SA1019 Envoy still reads the deprecated DNS fields of a cluster

package dnscluster

import (
	"fmt"
	"math"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/bootstrap"
	"github.com/outrigger-dev/outrigger/pkg/proxy/dns"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// DefaultRefreshRate is dns_refresh_rate's default (Envoy's).
const DefaultRefreshRate = 5 * time.Second

// Target is one endpoint of a DNS cluster: the name to resolve, the port
// of its hosts, and what every host resolved from it carries.
type Target struct {
	// Name is the endpoint's socket_address.address: a host name or an
	// IP literal.
	Name string
	Port uint16
	// Host is the template of the target's hosts: everything but the
	// address (Hostname is the endpoint's hostname, or Name without one;
	// Cluster, Locality, Priority, Weight, Canary, ConfigHealth).
	Host *upstream.Host
}

// Backoff is dns_failure_refresh_rate (see dns.Backoff).
type Backoff = dns.Backoff

// Config is a DNS cluster's resolution behaviour, checked.
type Config struct {
	// Logical selects LOGICAL_DNS: one host per cluster, the first
	// address of the answer; otherwise STRICT_DNS: one host per address.
	Logical bool
	Targets []Target
	// RefreshRate is the time between resolutions (dns_refresh_rate).
	RefreshRate time.Duration
	// Failure is the back-off after failures; nil retries at RefreshRate.
	Failure *Backoff
	// RespectTTL refreshes after the answer's TTL instead (the smallest
	// of the answer for STRICT_DNS, the first address's for LOGICAL_DNS),
	// at least MinRefreshRate.
	RespectTTL     bool
	MinRefreshRate time.Duration
	// Jitter adds a random delay below it to each refresh after a
	// success.
	Jitter time.Duration
	Family dns.Family
	// WaitForWarm holds the server's initialisation until the first
	// resolution of one of the targets has ended (wait_for_warm_on_init,
	// default true).
	WaitForWarm bool
}

// FromCluster reads a DNS cluster's resolution settings: every field but
// the endpoints and the resolver. Errors are relative to the cluster.
func FromCluster(c *clusterv3.Cluster) (Config, []error) {
	cfg := Config{
		Logical:     c.GetType() == clusterv3.Cluster_LOGICAL_DNS,
		RefreshRate: DefaultRefreshRate,
		RespectTTL:  c.GetRespectDnsTtl(),
		Family:      dns.FamilyFromCluster(c.GetDnsLookupFamily()),
		WaitForWarm: true,
	}
	var errs []error
	if d, ok := duration(c.GetDnsRefreshRate(), "dns_refresh_rate", &errs); ok {
		cfg.RefreshRate = d
	}
	if d, ok := duration(c.GetDnsJitter(), "dns_jitter", &errs); ok {
		cfg.Jitter = d
	}
	failure, ferrs := dns.FailureBackoff(c.GetDnsFailureRefreshRate(), "dns_failure_refresh_rate")
	for _, err := range ferrs {
		if fe, ok := err.(*dns.ConfigError); ok {
			err = fieldErrorf(fe.Path, "%s", fe.Reason)
		}
		errs = append(errs, err)
	}
	cfg.Failure = failure
	if w := c.GetWaitForWarmOnInit(); w != nil {
		cfg.WaitForWarm = w.GetValue()
	}
	if cfg.RefreshRate < time.Millisecond {
		errs = append(errs, fieldErrorf("dns_refresh_rate", "must be at least 1ms"))
	}
	return cfg, errs
}

// duration reads an optional duration; ok is false when unset or invalid
// (then an error is added).
func duration(d *durationpb.Duration, path string, errs *[]error) (time.Duration, bool) {
	if d == nil {
		return 0, false
	}
	if err := d.CheckValid(); err != nil || d.AsDuration() < 0 {
		*errs = append(*errs, fieldErrorf(path, "must be a non-negative duration"))
		return 0, false
	}
	return d.AsDuration(), true
}

// saturatingAdd adds durations without overflowing.
func saturatingAdd(a, b time.Duration) time.Duration {
	if a > time.Duration(math.MaxInt64)-b {
		return time.Duration(math.MaxInt64)
	}
	return a + b
}

func fieldErrorf(path, format string, args ...any) *bootstrap.FieldError {
	return &bootstrap.FieldError{Path: path, Reason: fmt.Sprintf(format, args...)}
}
