package loadreport

import (
	"slices"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	lrsv3 "github.com/envoyproxy/go-control-plane/envoy/service/load_stats/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// webCluster has two localities at priority 0, given out of order, and
// one at priority 1.
const webCluster = `
name: web
type: STATIC
load_assignment:
  cluster_name: web
  endpoints:
  - locality: {region: r1, zone: z2}
    lb_endpoints:
    - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 1003}}}
  - locality: {region: r1, zone: z1}
    lb_endpoints:
    - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 1001}}}
    - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 1002}}}
  - locality: {region: r2, zone: z9}
    priority: 1
    lb_endpoints:
    - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 1004}}}
`

// edsCluster takes its endpoints from discovery under service name svc.
const edsCluster = `
name: eds
type: EDS
eds_cluster_config: {service_name: svc, eds_config: {ads: {}}}
`

// dropsCluster drops every request, counted under category throttle.
const dropsCluster = `
name: drops
type: STATIC
load_assignment:
  cluster_name: drops
  policy:
    drop_overloads: [{category: throttle, drop_percentage: {numerator: 100, denominator: HUNDRED}}]
  endpoints:
  - lb_endpoints:
    - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 1005}}}
`

// counts are a locality's totals over several reports.
type counts struct {
	success, errors, issued, inProgress uint64
}

// localityName names a locality and priority in test output.
func localityName(ls *endpointv3.UpstreamLocalityStats) string {
	l := ls.GetLocality()
	return l.GetRegion() + "/" + l.GetZone() + "/" + l.GetSubZone() + "@" + string(rune('0'+ls.GetPriority()))
}

// clusterOf returns the stats of cluster name in req, nil without.
func clusterOf(req *lrsv3.LoadStatsRequest, name string) *endpointv3.ClusterStats {
	for _, cs := range req.GetClusterStats() {
		if cs.GetClusterName() == name {
			return cs
		}
	}
	return nil
}

// collect adds up the locality stats of cluster name over the reports
// until issued requests reach wantIssued, checking each report's
// localities are in order; the counts of a request may land in two
// reports if one is latched midway.
func collect(t *testing.T, s *lrsServer, name string, wantIssued uint64) map[string]counts {
	t.Helper()
	got := map[string]counts{}
	var issued uint64
	for issued < wantIssued {
		cs := clusterOf(s.nextWith(t, name), name)
		var order []string
		for _, ls := range cs.GetUpstreamLocalityStats() {
			k := localityName(ls)
			order = append(order, k)
			c := got[k]
			c.success += ls.GetTotalSuccessfulRequests()
			c.errors += ls.GetTotalErrorRequests()
			c.issued += ls.GetTotalIssuedRequests()
			c.inProgress = ls.GetTotalRequestsInProgress()
			got[k] = c
			issued += ls.GetTotalIssuedRequests()
		}
		if !slices.IsSorted(order) {
			t.Errorf("localities out of order: %v", order)
		}
	}
	if issued != wantIssued {
		t.Errorf("issued requests %d, want %d", issued, wantIssued)
	}
	return got
}

func TestFirstRequestAndNamedClusters(t *testing.T) {
	s, conn := startLRS(t)
	m := testClusters(t, nil, webCluster, edsCluster, dropsCluster)
	_, store := newTestReporter(t, conn, m, nil)

	first := s.next(t)
	if first.GetNode().GetId() != "proxy-1" || first.GetNode().GetCluster() != "mesh" {
		t.Errorf("first request's node %v", first.GetNode())
	}
	if want := []string{"envoy.lb.does_not_support_overprovisioning", SendAllClustersFeature}; !slices.Equal(first.GetNode().GetClientFeatures(), want) {
		t.Errorf("client features %v, want %v", first.GetNode().GetClientFeatures(), want)
	}
	if len(first.GetClusterStats()) != 0 {
		t.Errorf("first request reports %v before the server asked", first.GetClusterStats())
	}

	// Requests before the period starts are latched away, not reported.
	serve(hostOf(t, m.Cluster("web"), "127.0.0.1:1001"), 7, 0)
	s.respond(&lrsv3.LoadStatsResponse{Clusters: []string{"web", "eds", "absent"}, LoadReportingInterval: durationpb.New(20 * time.Millisecond)})
	req := s.nextWith(t, "web")
	var names []string
	for _, cs := range req.GetClusterStats() {
		names = append(names, cs.GetClusterName())
	}
	if !slices.Equal(names, []string{"eds", "web"}) {
		t.Errorf("clusters reported %v, want [eds web] (absent does not exist, drops was not asked for)", names)
	}
	if got := clusterOf(req, "eds").GetClusterServiceName(); got != "svc" {
		t.Errorf("eds cluster_service_name %q, want svc", got)
	}
	web := clusterOf(req, "web")
	if web.GetClusterServiceName() != "" || len(web.GetUpstreamLocalityStats()) != 0 {
		t.Errorf("web's first report %v: no service name and no load expected", web)
	}
	if web.GetLoadReportInterval().AsDuration() <= 0 {
		t.Errorf("load_report_interval %v, want the measured interval", web.GetLoadReportInterval())
	}
	if req.GetNode().GetId() != "proxy-1" {
		t.Errorf("a later request's node %v: every request carries it", req.GetNode())
	}

	c := m.Cluster("web")
	serve(hostOf(t, c, "127.0.0.1:1001"), 3, 1)
	serve(hostOf(t, c, "127.0.0.1:1002"), 2, 0)
	serve(hostOf(t, c, "127.0.0.1:1003"), 1, 0)
	serve(hostOf(t, c, "127.0.0.1:1004"), 0, 2)
	got := collect(t, s, "web", 9)
	want := map[string]counts{
		"r1/z1/@0": {success: 5, errors: 1, issued: 6},
		"r1/z2/@0": {success: 1, issued: 1},
		"r2/z9/@1": {errors: 2, issued: 2},
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("locality %s: %+v, want %+v", k, got[k], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("localities %v, want %v", got, want)
	}
	// Once reported, the counts start again from zero.
	if ls := clusterOf(s.nextWith(t, "web"), "web").GetUpstreamLocalityStats(); len(ls) != 0 {
		t.Errorf("a report without new requests lists %v", ls)
	}
	if store.Counter("load_reporter.requests").Value() != 1 {
		t.Errorf("load_reporter.requests %d, want 1 (the responses received)", store.Counter("load_reporter.requests").Value())
	}
	if store.Counter("load_reporter.responses").Value() < 3 {
		t.Errorf("load_reporter.responses %d, want one per report sent", store.Counter("load_reporter.responses").Value())
	}
}

func TestSendAllClusters(t *testing.T) {
	s, conn := startLRS(t)
	m := testClusters(t, nil, webCluster, edsCluster, dropsCluster)
	newTestReporter(t, conn, m, nil)
	s.next(t)
	s.respond(&lrsv3.LoadStatsResponse{SendAllClusters: true, LoadReportingInterval: durationpb.New(20 * time.Millisecond)})
	req := s.nextWith(t, "web")
	var names []string
	for _, cs := range req.GetClusterStats() {
		names = append(names, cs.GetClusterName())
	}
	if !slices.Equal(names, []string{"drops", "eds", "web"}) {
		t.Errorf("clusters reported %v, want every cluster", names)
	}
	// A new response narrows the set: the clusters no longer named go.
	s.respond(&lrsv3.LoadStatsResponse{Clusters: []string{"drops"}, LoadReportingInterval: durationpb.New(20 * time.Millisecond)})
	for {
		req := s.next(t)
		if len(req.GetClusterStats()) == 1 && clusterOf(req, "drops") != nil {
			break
		}
	}
}

func TestDrops(t *testing.T) {
	s, conn := startLRS(t)
	m := testClusters(t, nil, dropsCluster)
	newTestReporter(t, conn, m, nil)
	s.next(t)
	s.respond(&lrsv3.LoadStatsResponse{Clusters: []string{"drops"}, LoadReportingInterval: durationpb.New(20 * time.Millisecond)})
	s.nextWith(t, "drops")
	for range 3 {
		if !m.Cluster("drops").DropOverload() {
			t.Fatal("drop_overloads of 100% did not drop")
		}
	}
	var total, byCategory uint64
	for total < 3 {
		cs := clusterOf(s.nextWith(t, "drops"), "drops")
		total += cs.GetTotalDroppedRequests()
		for _, d := range cs.GetDroppedRequests() {
			if d.GetCategory() != "throttle" {
				t.Errorf("dropped requests under category %q, want throttle", d.GetCategory())
			}
			byCategory += d.GetDroppedCount()
		}
	}
	if total != 3 || byCategory != 3 {
		t.Errorf("dropped %d (by category %d), want 3", total, byCategory)
	}
}

func TestEndpointGranularityAndRequestsInProgress(t *testing.T) {
	s, conn := startLRS(t)
	m := testClusters(t, nil, webCluster)
	newTestReporter(t, conn, m, nil)
	s.next(t)
	s.respond(&lrsv3.LoadStatsResponse{Clusters: []string{"web"}, ReportEndpointGranularity: true, LoadReportingInterval: durationpb.New(20 * time.Millisecond)})
	s.nextWith(t, "web")
	// Requests in progress, none issued since: the locality is listed
	// (report_load_when_rq_active_is_non_zero is on by default).
	hostOf(t, m.Cluster("web"), "127.0.0.1:1002").Stats.RqActive.Add(2)
	for {
		ls := clusterOf(s.nextWith(t, "web"), "web").GetUpstreamLocalityStats()
		if len(ls) == 0 {
			continue
		}
		if len(ls) != 1 || localityName(ls[0]) != "r1/z1/@0" || ls[0].GetTotalRequestsInProgress() != 2 || ls[0].GetTotalIssuedRequests() != 0 {
			t.Fatalf("localities %v, want r1/z1 with 2 in progress", ls)
		}
		eps := ls[0].GetUpstreamEndpointStats()
		if len(eps) != 1 || eps[0].GetAddress().GetSocketAddress().GetPortValue() != 1002 || eps[0].GetTotalRequestsInProgress() != 2 {
			t.Fatalf("endpoint stats %v, want host 1002 alone with 2 in progress", eps)
		}
		break
	}
}

func TestRuntimeFeaturesChooseLocalities(t *testing.T) {
	s, conn := startLRS(t)
	m := testClusters(t, nil, webCluster)
	newTestReporter(t, conn, m, map[string]bool{activeProxyKey: false})
	s.next(t)
	s.respond(&lrsv3.LoadStatsResponse{Clusters: []string{"web"}, LoadReportingInterval: durationpb.New(20 * time.Millisecond)})
	s.nextWith(t, "web")
	c := m.Cluster("web")
	hostOf(t, c, "127.0.0.1:1002").Stats.RqActive.Add(2)
	serve(hostOf(t, c, "127.0.0.1:1003"), 1, 0)
	got := collect(t, s, "web", 1)
	if _, ok := got["r1/z1/@0"]; ok {
		t.Errorf("a locality with requests in progress only was listed with the feature off: %v", got)
	}
}

func TestLocalLocalityFirst(t *testing.T) {
	s, conn := startLRS(t)
	m := testClusters(t, &upstream.Locality{Region: "r1", Zone: "z2"}, webCluster)
	newTestReporter(t, conn, m, nil)
	s.next(t)
	s.respond(&lrsv3.LoadStatsResponse{Clusters: []string{"web"}, LoadReportingInterval: durationpb.New(20 * time.Millisecond)})
	s.nextWith(t, "web")
	c := m.Cluster("web")
	hostOf(t, c, "127.0.0.1:1001").Stats.RqActive.Add(1)
	hostOf(t, c, "127.0.0.1:1003").Stats.RqActive.Add(1)
	for {
		ls := clusterOf(s.nextWith(t, "web"), "web").GetUpstreamLocalityStats()
		if len(ls) < 2 {
			continue
		}
		if localityName(ls[0]) != "r1/z2/@0" || localityName(ls[1]) != "r1/z1/@0" {
			t.Errorf("localities %s, %s: the proxy's own (r1/z2) comes first", localityName(ls[0]), localityName(ls[1]))
		}
		break
	}
}

func TestReconnect(t *testing.T) {
	s, conn := startLRS(t)
	m := testClusters(t, nil, webCluster)
	_, store := newTestReporter(t, conn, m, nil)
	<-s.streams
	s.next(t)
	// A long interval: what follows comes from the new streams.
	s.respond(&lrsv3.LoadStatsResponse{Clusters: []string{"web"}, LoadReportingInterval: durationpb.New(time.Hour)})
	s.respond(abort)
	select {
	case <-s.streams:
	case <-time.After(wait):
		t.Fatal("no new stream after a failed one")
	}
	// The new stream's first request reports on the clusters the last
	// response named, as Envoy's.
	if req := s.next(t); clusterOf(req, "web") == nil || req.GetNode().GetId() != "proxy-1" {
		t.Errorf("first request of the new stream %v: want the node and web's stats", req)
	}
	if store.Counter("load_reporter.errors").Value() != 1 || store.Counter("load_reporter.retries").Value() != 1 {
		t.Errorf("errors %d, retries %d, want 1 and 1", store.Counter("load_reporter.errors").Value(), store.Counter("load_reporter.retries").Value())
	}
	// A stream the server ends with an OK status is opened again, and
	// is no error.
	s.respond(nil)
	select {
	case <-s.streams:
	case <-time.After(wait):
		t.Fatal("no new stream after a closed one")
	}
	s.next(t)
	if store.Counter("load_reporter.errors").Value() != 1 || store.Counter("load_reporter.retries").Value() != 2 {
		t.Errorf("errors %d, retries %d, want 1 and 2", store.Counter("load_reporter.errors").Value(), store.Counter("load_reporter.retries").Value())
	}
}

func TestNewRequires(t *testing.T) {
	_, conn := startLRS(t)
	m := testClusters(t, nil, webCluster)
	for name, o := range map[string]Options{
		"conn":     {Node: &corev3.Node{}, Clusters: m},
		"node":     {Conn: conn, Clusters: m},
		"clusters": {Conn: conn, Node: &corev3.Node{}},
		"stats":    {Conn: conn, Node: &corev3.Node{}, Clusters: m},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New without %s succeeded", name)
		}
	}
}
