package e2e

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protowire"
)

// stickyGet sends one GET on a connection of its own and returns the
// status, the body (the upstream's name) and the response headers.
func stickyGet(port int, path string, header ...string) (int, string, http.Header) {
	GinkgoHelper()
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	req, err := http.NewRequest("GET", listenerURL(port, path), nil)
	Expect(err).NotTo(HaveOccurred())
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, string(b), resp.Header
}

// stickyCookie is the Set-Cookie the sessions of the spec get.
var stickyCookie = regexp.MustCompile(`^sticky="([A-Za-z0-9+/=]+)"; Max-Age=120; Path=/; HttpOnly$`)

// cookieHost decodes a sticky cookie's value (Envoy's envoy.Cookie
// message) to the address it names and its expiry.
func cookieHost(value string) (string, uint64) {
	GinkgoHelper()
	b, err := base64.StdEncoding.DecodeString(value)
	Expect(err).NotTo(HaveOccurred())
	var addr string
	var expires uint64
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		Expect(n).To(BeNumerically(">", 0))
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.BytesType:
			addr, n = protowire.ConsumeString(b)
		case num == 2 && typ == protowire.VarintType:
			expires, n = protowire.ConsumeVarint(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		Expect(n).To(BeNumerically(">=", 0))
		b = b[n:]
	}
	return addr, expires
}

var _ = Describe("Stateful sessions", func() {
	const fast = `timeout: 1s, interval: 0.1s, no_traffic_interval: 0.1s, unhealthy_threshold: 1, healthy_threshold: 1`
	const cookieState = `{name: envoy.http.stateful_session.cookie, typed_config: {"@type": type.googleapis.com/envoy.extensions.http.stateful_session.cookie.v3.CookieBasedSessionState, cookie: {name: sticky, ttl: 120s, path: /}}}`
	perRoute := func(session string) string {
		return `typed_per_filter_config: {envoy.filters.http.stateful_session: {"@type": type.googleapis.com/envoy.extensions.filters.http.stateful_session.v3.StatefulSessionPerRoute, ` + session + `}}`
	}

	It("keeps a client on its host by cookie or header, falls back or fails strictly when the host cannot be picked", func() {
		ups := map[string]*hcUpstream{}
		var ports []int
		for _, n := range []string{"a", "b", "c"} {
			ups[n] = newHCUpstream(n)
			ports = append(ports, portNum(ups[n].addr))
		}
		addrOf := func(name string) string { return "127.0.0.1:" + fmt.Sprint(portNum(ups[name].addr)) }
		hc := `, health_checks: [{` + fast + `, http_health_check: {path: /healthz}}]`
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port: port,
			Filters: `[{name: envoy.filters.http.stateful_session, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.stateful_session.v3.StatefulSession,
			  stat_prefix: sticky, session_state: ` + cookieState + `}}]`,
			Routes: `[
			  {match: {prefix: /strict}, route: {cluster: up}, ` + perRoute(`stateful_session: {strict: true, status_on_strict_destination_not_found: 404, session_state: `+cookieState+`}`) + `},
			  {match: {prefix: /any-status}, route: {cluster: up_any}, ` + perRoute(`stateful_session: {strict: true, session_state: `+cookieState+`}`) + `},
			  {match: {prefix: /header}, route: {cluster: up}, ` + perRoute(`stateful_session: {session_state: {name: envoy.http.stateful_session.header, typed_config: {"@type": type.googleapis.com/envoy.extensions.http.stateful_session.header.v3.HeaderBasedSessionState, name: x-session}}}`) + `},
			  {match: {prefix: /off}, route: {cluster: up}, ` + perRoute(`disabled: true`) + `},
			  {match: {prefix: /}, route: {cluster: up}}]`,
			Clusters: []proxyCluster{
				{Name: "up", Extra: `{` + hcEndpoints("up", ports...) + hc + `}`},
				// The same hosts, whose overrides may pick unhealthy ones.
				{Name: "up_any", Extra: `{` + hcEndpoints("up_any", ports...) + hc + `, common_lb_config: {override_host_status: {statuses: [HEALTHY, UNHEALTHY]}}}`},
			},
		}.YAML())
		s.WaitLive()
		for _, c := range []string{"up", "up_any"} {
			Eventually(func() string { return statValue(s, "cluster."+c+".membership_healthy") }, 10*time.Second, 50*time.Millisecond).Should(Equal("3"))
		}

		By("balancing requests without a session over the hosts")
		seen := map[string]bool{}
		for range 6 {
			status, body, _ := stickyGet(port, "/off")
			Expect(status).To(Equal(200))
			seen[body] = true
		}
		Expect(len(seen)).To(BeNumerically(">=", 2), "hosts %v", seen)

		By("setting the cookie on the first response, and sticking to its host after")
		status, first, h := stickyGet(port, "/")
		Expect(status).To(Equal(200))
		m := stickyCookie.FindStringSubmatch(h.Get("Set-Cookie"))
		Expect(m).NotTo(BeNil(), "set-cookie %q", h.Get("Set-Cookie"))
		value := m[1]
		addr, expires := cookieHost(value)
		Expect(addr).To(Equal(addrOf(first)))
		Expect(expires).NotTo(BeZero())
		for range 6 {
			status, body, h := stickyGet(port, "/", "cookie", "other=1; sticky=\""+value+"\"")
			Expect(status).To(Equal(200))
			Expect(body).To(Equal(first))
			Expect(h.Values("Set-Cookie")).To(BeEmpty())
		}
		Expect(statValue(s, "http.l.stateful_session.sticky.routed")).To(Equal("6"))
		// Envoy's older cookie format, the base64 of the address, is
		// still read.
		legacy := base64.StdEncoding.EncodeToString([]byte(addrOf(first)))
		_, body, _ := stickyGet(port, "/", "cookie", "sticky="+legacy)
		Expect(body).To(Equal(first))

		By("falling back to the balancer, or failing strictly, when the host is unhealthy")
		ups[first].set("503")
		Eventually(func() string { return statValue(s, "cluster.up.membership_healthy") }, 10*time.Second, 50*time.Millisecond).Should(Equal("2"))
		Eventually(func() string { return statValue(s, "cluster.up_any.membership_healthy") }, 10*time.Second, 50*time.Millisecond).Should(Equal("2"))
		status, other, h := stickyGet(port, "/", "cookie", "sticky=\""+value+"\"")
		Expect(status).To(Equal(200))
		Expect(other).NotTo(Equal(first))
		m = stickyCookie.FindStringSubmatch(h.Get("Set-Cookie"))
		Expect(m).NotTo(BeNil(), "set-cookie %q", h.Get("Set-Cookie"))
		newAddr, _ := cookieHost(m[1])
		Expect(newAddr).To(Equal(addrOf(other)))
		Expect(statValue(s, "http.l.stateful_session.sticky.failed_open")).To(Equal("1"))
		status, _, h = stickyGet(port, "/strict", "cookie", "sticky=\""+value+"\"")
		Expect(status).To(Equal(503))
		Expect(h.Values("Set-Cookie")).To(BeEmpty())
		// A cluster whose override_host_status allows UNHEALTHY still
		// sends the session to its host.
		status, body, _ = stickyGet(port, "/any-status", "cookie", "sticky=\""+value+"\"")
		Expect(status).To(Equal(200))
		Expect(body).To(Equal(first))

		By("answering status_on_strict_destination_not_found for a host the cluster does not have")
		gone := base64.StdEncoding.EncodeToString([]byte("127.0.0.1:1"))
		status, _, _ = stickyGet(port, "/strict", "cookie", "sticky="+gone)
		Expect(status).To(Equal(404))
		status, body, h = stickyGet(port, "/", "cookie", "sticky="+gone)
		Expect(status).To(Equal(200))
		Expect(body).NotTo(Equal(first))
		Expect(h.Get("Set-Cookie")).To(MatchRegexp(stickyCookie.String()))

		By("keeping a session by header")
		status, hb, h := stickyGet(port, "/header")
		Expect(status).To(Equal(200))
		enc := h.Get("x-session")
		Expect(enc).To(Equal(base64.StdEncoding.EncodeToString([]byte(addrOf(hb)))))
		Expect(h.Values("Set-Cookie")).To(BeEmpty())
		for range 4 {
			status, body, h := stickyGet(port, "/header", "x-session", enc)
			Expect(status).To(Equal(200))
			Expect(body).To(Equal(hb))
			Expect(h.Get("x-session")).To(BeEmpty())
		}
		Expect(strings.Join(h.Values("x-session"), ",")).To(Equal(enc))
	})

	It("wraps the upstream's own session header with its host (envelope) and restores it on the way back", func() {
		var ports []int
		for _, n := range []string{"a", "b", "c"} {
			ports = append(ports, portNum(httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				// The upstream sees its own value back, and sets it.
				w.Header().Set("x-got", r.Header.Get("session-id"))
				w.Header().Set("session-id", n+"-session")
				_, _ = io.WriteString(w, n)
			}), false)))
		}
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port: port,
			Filters: `[{name: envoy.filters.http.stateful_session, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.stateful_session.v3.StatefulSession,
			  session_state: {name: envoy.http.stateful_session.envelope, typed_config: {"@type": type.googleapis.com/envoy.extensions.http.stateful_session.envelope.v3.EnvelopeSessionState, header: {name: session-id}}}}}]`,
			Clusters: []proxyCluster{{Name: "up", Extra: lbCluster("", ports...)}},
		}.YAML())
		s.WaitLive()
		status, first, h := stickyGet(port, "/")
		Expect(status).To(Equal(200))
		wrapped := h.Get("session-id")
		parts := strings.SplitN(wrapped, ";UV:", 2)
		Expect(parts).To(HaveLen(2), "session-id %q", wrapped)
		host, err := base64.StdEncoding.DecodeString(parts[0])
		Expect(err).NotTo(HaveOccurred())
		Expect(string(host)).To(HavePrefix("127.0.0.1:"))
		Expect(parts[1]).To(Equal(base64.StdEncoding.EncodeToString([]byte(first + "-session"))))
		for range 4 {
			status, body, h := stickyGet(port, "/", "session-id", wrapped)
			Expect(status).To(Equal(200))
			Expect(body).To(Equal(first))
			Expect(h.Get("x-got")).To(Equal(first + "-session"))
		}
	})

	It("refuses a session state of another category and a bad cookie name at load", func() {
		port := freePort()
		for _, tc := range []struct{ state, want string }{
			{`{name: bad, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}`, "session_state"},
			{`{name: envoy.http.stateful_session.cookie, typed_config: {"@type": type.googleapis.com/envoy.extensions.http.stateful_session.cookie.v3.CookieBasedSessionState, cookie: {name: "a;b"}}}`, "cookie.name"},
		} {
			r, _ := validate("bootstrap.yaml", proxySpec{
				Port:     port,
				Filters:  `[{name: envoy.filters.http.stateful_session, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.stateful_session.v3.StatefulSession, session_state: ` + tc.state + `}}]`,
				Clusters: []proxyCluster{{Name: "up", Port: 1}},
			}.YAML())
			Expect(r.ExitCode).NotTo(Equal(0), r.Stdout)
			Expect(r.Stderr + r.Stdout).To(ContainSubstring(tc.want))
		}
	})
})
