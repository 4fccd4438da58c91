package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The stat scope of the overload specs' listener, named after its
// configured address (port 0).
const overloadScope = "listener.127.0.0.1_0."

// Type URLs of the overload manager's monitors.
const (
	fixedHeapURL   = "type.googleapis.com/envoy.extensions.resource_monitors.fixed_heap.v3.FixedHeapConfig"
	connMonitorURL = "type.googleapis.com/envoy.extensions.resource_monitors.downstream_connections.v3.DownstreamConnectionsConfig"
)

// overloadConfig is a bootstrap with an admin on 127.0.0.1, an admin
// runtime layer, the given overload_manager (YAML flow style, "" for none)
// and one listener "web" on 127.0.0.1:0 answering 200 "hello", with more
// listener fields (flow style, "" for none).
func overloadConfig(overloadManager, listenerFields string) string {
	var b strings.Builder
	// The test's admin connections stay out of the global limit, as in
	// Envoy they count against it without ignore_global_conn_limit.
	b.WriteString("admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}, ignore_global_conn_limit: true}\n")
	b.WriteString("layered_runtime: {layers: [{name: admin, admin_layer: {}}]}\n")
	if overloadManager != "" {
		b.WriteString("overload_manager: " + overloadManager + "\n")
	}
	b.WriteString("static_resources:\n  listeners:\n")
	l := listenerDef{Name: "web", Fields: listenerFields, Chains: []string{directChain("hello", "")}}
	b.WriteString("  - " + l.flowYAML("") + "\n")
	return b.String()
}

// heapOverload is an overload_manager whose fixed_heap monitor allows
// 1 MiB of heap, far less than the sidecar uses, so its pressure is well
// past 1 from the first refresh, with action on it.
func heapOverload(action string) string {
	return fmt.Sprintf(`{refresh_interval: 0.05s, resource_monitors: [{name: envoy.resource_monitors.fixed_heap, typed_config: {"@type": %s, max_heap_size_bytes: 1048576}}], `+
		`actions: [{name: %s, triggers: [{name: envoy.resource_monitors.fixed_heap, threshold: {value: 0.5}}]}]}`, fixedHeapURL, action)
}

// connOverload is an overload_manager with the downstream connections
// monitor limited to max, and actions (flow style, "" for none).
func connOverload(max int, actions string) string {
	return fmt.Sprintf(`{refresh_interval: 0.05s, resource_monitors: [{name: envoy.resource_monitors.global_downstream_max_connections, `+
		`typed_config: {"@type": %s, max_active_downstream_connections: %d}}], actions: [%s]}`, connMonitorURL, max, actions)
}

// heldConn is a client connection to the listener that sent one request.
type heldConn struct {
	c net.Conn
	r *bufio.Reader
}

// dialGet connects to addr and sends one keep-alive GET /.
func dialGet(addr string) *heldConn {
	GinkgoHelper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	Expect(err).NotTo(HaveOccurred(), "the kernel completes the handshake even when the sidecar does not accept")
	DeferCleanup(func() { _ = c.Close() }) // the spec may have closed it
	_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, err = c.Write([]byte("GET / HTTP/1.1\r\nHost: web\r\n\r\n"))
	Expect(err).NotTo(HaveOccurred())
	return &heldConn{c: c, r: bufio.NewReader(c)}
}

// answer reads the response to the request within wait: the status line
// with the body read, or an error (a timeout when the request waits, EOF or
// a reset when the sidecar closed the connection).
func (h *heldConn) answer(wait time.Duration) (string, error) {
	_ = h.c.SetReadDeadline(time.Now().Add(wait))
	status, err := h.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	length := 0
	for {
		line, err := h.r.ReadString('\n')
		if err != nil {
			return "", err
		}
		if line == "\r\n" {
			break
		}
		if v, ok := strings.CutPrefix(strings.ToLower(line), "content-length:"); ok {
			length, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	if _, err := io.CopyN(io.Discard, h.r, int64(length)); err != nil {
		return "", err
	}
	return strings.TrimSpace(status), nil
}

// served opens a connection, gets one answer and keeps the connection.
func served(addr string) *heldConn {
	GinkgoHelper()
	h := dialGet(addr)
	status, err := h.answer(5 * time.Second)
	Expect(err).NotTo(HaveOccurred())
	Expect(status).To(Equal("HTTP/1.1 200 OK"))
	return h
}

// closedAtOnce reports whether the sidecar closed a new connection without
// answering (rather than answering, or leaving it waiting).
func closedAtOnce(addr string) bool {
	GinkgoHelper()
	h := dialGet(addr)
	defer h.c.Close()
	_, err := h.answer(3 * time.Second)
	return err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
}

// queuedConn waits (bounded) until a new connection is left unanswered:
// accepting is paused, so it waits in the kernel's queue. Connections
// served before the pause takes effect are closed.
func queuedConn(addr string) *heldConn {
	GinkgoHelper()
	var queued *heldConn
	Eventually(func() bool {
		h := dialGet(addr)
		_, err := h.answer(300 * time.Millisecond)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			queued = h
			return true
		}
		_ = h.c.Close()
		return false
	}).Should(BeTrue(), "a new connection is left waiting")
	return queued
}

// intStat reads a counter or gauge as an integer.
func intStat(s *Sidecar, name string) int {
	GinkgoHelper()
	v := statValue(s, name)
	n, err := strconv.Atoi(v)
	Expect(err).NotTo(HaveOccurred(), "stat %s = %q", name, v)
	return n
}

var _ = Describe("Overload manager and connection limits", func() {
	It("stops accepting connections under heap pressure and keeps the admin answering", func() {
		s := Start(newDir(), overloadConfig(heapOverload("envoy.overload_actions.stop_accepting_connections"), ""))
		waitStat(s, "overload.envoy.overload_actions.stop_accepting_connections.active", "1")
		Expect(intStat(s, "overload.envoy.resource_monitors.fixed_heap.pressure")).To(BeNumerically(">", 100))
		Expect(statValue(s, "overload.envoy.overload_actions.stop_accepting_connections.scale_percent")).To(Equal("100"))
		addr := listenerAddr(s, "web")
		queued := queuedConn(addr)
		total := statValue(s, overloadScope+"downstream_cx_total")
		Consistently(func() string { return statValue(s, overloadScope+"downstream_cx_total") }, "500ms").Should(Equal(total),
			"nothing is accepted while paused")
		_, err := queued.answer(200 * time.Millisecond)
		Expect(err).To(MatchError(os.ErrDeadlineExceeded), "the queued request stays unanswered")
		Expect(s.Get("/ready").Status).To(Equal(200), "the admin listener is never paused")
	})

	It("rejects incoming connections under heap pressure", func() {
		s := Start(newDir(), overloadConfig(heapOverload("proxy.overload_actions.reject_incoming_connections"), ""))
		waitStat(s, "overload.proxy.overload_actions.reject_incoming_connections.active", "1")
		addr := listenerAddr(s, "web")
		for range 3 {
			Expect(closedAtOnce(addr)).To(BeTrue(), "a rejected connection is closed without an answer")
		}
		Expect(intStat(s, overloadScope+"downstream_cx_overload_reject")).To(BeNumerically(">=", 3))
		Expect(statValue(s, overloadScope+"downstream_cx_total")).To(Equal("0"))
		Expect(s.Get("/ready").Status).To(Equal(200), "the admin listener is never affected")
	})

	It("refuses connections past the global limit and admits again when they close", func() {
		s := Start(newDir(), overloadConfig(connOverload(3, ""), ""))
		s.WaitLive()
		addr := listenerAddr(s, "web")
		var held []*heldConn
		for range 3 {
			held = append(held, served(addr))
		}
		Expect(closedAtOnce(addr)).To(BeTrue(), "the fourth connection is refused")
		Expect(statValue(s, overloadScope+"downstream_global_cx_overflow")).To(Equal("1"))
		Expect(statValue(s, "overload.envoy.resource_monitors.global_downstream_max_connections.failed_updates")).To(Equal("1"))
		waitStat(s, "overload.envoy.resource_monitors.global_downstream_max_connections.pressure", "100")
		for _, h := range held {
			Expect(h.c.Close()).To(Succeed())
		}
		waitStat(s, overloadScope+"downstream_cx_active", "0")
		for range 3 {
			served(addr)
		}
		Expect(statValue(s, overloadScope+"downstream_global_cx_overflow")).To(Equal("1"))
	})

	It("pauses accepting at a connection pressure threshold and serves the queued connection once pressure drops", func() {
		s := Start(newDir(), overloadConfig(connOverload(4,
			`{name: envoy.overload_actions.stop_accepting_connections, triggers: [{name: envoy.resource_monitors.global_downstream_max_connections, threshold: {value: 0.5}}]}`), ""))
		s.WaitLive()
		addr := listenerAddr(s, "web")
		a, b := served(addr), served(addr)
		waitStat(s, "overload.envoy.overload_actions.stop_accepting_connections.active", "1")
		queued := queuedConn(addr)
		Expect(a.c.Close()).To(Succeed())
		Expect(b.c.Close()).To(Succeed())
		status, err := queued.answer(5 * time.Second)
		Expect(err).NotTo(HaveOccurred(), "the queued connection is accepted once the action clears")
		Expect(status).To(Equal("HTTP/1.1 200 OK"))
		waitStat(s, "overload.envoy.overload_actions.stop_accepting_connections.active", "0")
	})

	It("applies the runtime limits set through /runtime_modify", func() {
		s := Start(newDir(), overloadConfig("", ""))
		s.WaitLive()
		Expect(s.Stderr()).To(ContainSubstring("There is no configured limit to the number of allowed active downstream connections."))
		addr := listenerAddr(s, "web")

		By("the global limit of the runtime key overload.global_downstream_max_connections")
		Expect(s.Post("/runtime_modify?overload.global_downstream_max_connections=1").Status).To(Equal(200))
		first := served(addr)
		Expect(closedAtOnce(addr)).To(BeTrue())
		Expect(statValue(s, overloadScope+"downstream_global_cx_overflow")).To(Equal("1"))
		Expect(s.Post("/runtime_modify?overload.global_downstream_max_connections=").Status).To(Equal(200))
		second := served(addr)

		By("the listener's limit envoy.resource_limits.listener.web.connection_limit")
		Expect(s.Post("/runtime_modify?envoy.resource_limits.listener.web.connection_limit=2").Status).To(Equal(200))
		Expect(closedAtOnce(addr)).To(BeTrue())
		Expect(statValue(s, overloadScope+"downstream_cx_overflow")).To(Equal("1"))
		Expect(s.Post("/runtime_modify?envoy.resource_limits.listener.web.connection_limit=3").Status).To(Equal(200))
		served(addr)
		Expect(closedAtOnce(addr)).To(BeTrue())
		Expect(statValue(s, overloadScope+"downstream_cx_overflow")).To(Equal("2"))
		Expect(first.c.Close()).To(Succeed())
		Expect(second.c.Close()).To(Succeed())
		waitStat(s, overloadScope+"downstream_cx_active", "1")
		served(addr)
	})

	It("balances connections over the workers with exact_balance", func() {
		s := Start(newDir(), overloadConfig("", "connection_balance_config: {exact_balance: {}}"), "--concurrency", "2")
		s.WaitLive()
		addr := listenerAddr(s, "web")
		// However the kernel spreads them, every second connection goes to
		// the other worker: after each pair both workers hold as many.
		for i := 1; i <= 5; i++ {
			served(addr)
			served(addr)
			want := strconv.Itoa(i)
			Expect(statValue(s, overloadScope+"worker_0.downstream_cx_active")).To(Equal(want), "after %d connections", 2*i)
			Expect(statValue(s, overloadScope+"worker_1.downstream_cx_active")).To(Equal(want), "after %d connections", 2*i)
		}
		Expect(statValue(s, overloadScope+"worker_0.downstream_cx_total")).To(Equal("5"))
		Expect(statValue(s, overloadScope+"worker_1.downstream_cx_total")).To(Equal("5"))
	})

	It("is checked by --mode validate, every problem with its path", func() {
		r, _ := validate("ok.yaml", overloadConfig(connOverload(10,
			`{name: envoy.overload_actions.reduce_timeouts, triggers: [{name: envoy.resource_monitors.global_downstream_max_connections, scaled: {scaling_threshold: 0.5, saturation_threshold: 0.9}}], `+
				`typed_config: {"@type": type.googleapis.com/envoy.config.overload.v3.ScaleTimersOverloadActionConfig, timer_scale_factors: [{timer: HTTP_DOWNSTREAM_CONNECTION_IDLE, min_timeout: 1s}]}}`),
			"connection_balance_config: {exact_balance: {}}, ignore_global_conn_limit: true"))
		Expect(r.ExitCode).To(Equal(0), r.Stderr)
		Expect(r.Stdout).To(ContainSubstring("OK"))

		r, _ = validate("unsupported.yaml", overloadConfig(
			`{resource_monitors: [{name: envoy.resource_monitors.fixed_heap, typed_config: {"@type": `+fixedHeapURL+`, max_heap_size_bytes: 1000}}], `+
				`loadshed_points: [{name: envoy.load_shed_points.tcp_listener_accept, triggers: [{name: envoy.resource_monitors.fixed_heap, threshold: {value: 0.9}}]}], `+
				`actions: [{name: envoy.overload_actions.reduce_timeouts, triggers: [{name: envoy.resource_monitors.fixed_heap, threshold: {value: 0.9}}], `+
				`typed_config: {"@type": type.googleapis.com/envoy.config.overload.v3.ScaleTimersOverloadActionConfig, timer_scale_factors: [{timer: TRANSPORT_SOCKET_CONNECT, min_timeout: 1s}]}}]}`,
			"connection_balance_config: {cpu_locality_balance: {}}"))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("overload_manager.loadshed_points: not supported by Outrigger"))
		Expect(r.Stderr).To(ContainSubstring("overload_manager.actions[0].typed_config.timer_scale_factors[0].timer: TRANSPORT_SOCKET_CONNECT is not supported by Outrigger"))
		Expect(r.Stderr).To(ContainSubstring("static_resources.listeners[0].connection_balance_config.cpu_locality_balance: not supported by Outrigger"))

		r, _ = validate("semantic.yaml", overloadConfig(
			`{resource_monitors: [{name: envoy.resource_monitors.fixed_heap, typed_config: {"@type": `+fixedHeapURL+`, max_heap_size_bytes: 1000}}], `+
				`actions: [{name: envoy.overload_actions.go_faster, triggers: [{name: envoy.resource_monitors.fixed_heap, threshold: {value: 0.9}}]}, `+
				`{name: envoy.overload_actions.disable_http_keepalive, triggers: [{name: envoy.resource_monitors.fixed_heap, scaled: {scaling_threshold: 0.9, saturation_threshold: 0.8}}]}]}`, ""))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("overload_manager.actions[0].name: Unknown Overload Manager Action envoy.overload_actions.go_faster"))
		Expect(r.Stderr).To(ContainSubstring("overload_manager.actions[1].triggers[0].scaled: scaling_threshold must be less than saturation_threshold"))
	})
})
