package e2e

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("LDS: listeners discovered from a file", func() {
	// lds is a discovery file listener answering body on 127.0.0.1:port.
	lds := func(name, direction string, port int, body string) listenerDef {
		return listenerDef{Name: name, Direction: direction, Port: port, Chains: []string{directChain(body, "")}}
	}
	// addrOf is the loopback address of a fixed port.
	addrOf := func(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

	DescribeTable("serves the file's listeners once LIVE and reloads the file when a new one is moved over it",
		func(src ldsSource) {
			port := freePort()
			dir := ldsSetup(ldsResponse("v1", lds("dyn", "INBOUND", port, "one")))
			s := Start(newDir(), ldsBootstrap(dir, src))
			waitLive(s)

			// Read before LIVE: no waiting for the listener.
			Expect(getBody(addrOf(port))).To(Equal("one"))
			Expect(s.Get("/listeners").Body).To(Equal(fmt.Sprintf("dyn::127.0.0.1:%d\n", port)))
			for name, want := range map[string]string{
				"listener_manager.lds.update_attempt":     "1",
				"listener_manager.lds.update_success":     "1",
				"listener_manager.lds.update_rejected":    "0",
				"listener_manager.lds.update_failure":     "0",
				"listener_manager.lds.version_text":       `"v1"`,
				"listener_manager.listener_added":         "1",
				"listener_manager.listener_modified":      "0",
				"listener_manager.listener_removed":       "0",
				"listener_manager.total_listeners_active": "1",
			} {
				Expect(statValue(s, name)).To(Equal(want), name)
			}
			dump := listenersDump(s)
			Expect(dump.GetVersionInfo()).To(Equal("v1"))
			Expect(dump.GetStaticListeners()).To(BeEmpty())
			Expect(dump.GetDynamicListeners()).To(HaveLen(1))
			dl := dump.GetDynamicListeners()[0]
			Expect(dl.GetName()).To(Equal("dyn"))
			Expect(dl.GetActiveState().GetVersionInfo()).To(Equal("v1"))
			Expect(dl.GetActiveState().GetLastUpdated().IsValid()).To(BeTrue(), "last_updated is set")
			var l listenerv3.Listener
			Expect(dl.GetActiveState().GetListener().UnmarshalTo(&l)).To(Succeed())
			Expect(l.GetName()).To(Equal("dyn"))
			Expect(l.GetTrafficDirection().String()).To(Equal("INBOUND"))

			replaceLDS(dir, ldsResponse("v2", lds("dyn", "INBOUND", port, "two")))
			waitStat(s, "listener_manager.lds.version_text", `"v2"`)
			// Envoy reloads on a move into the directory (IN_MOVED_TO) only:
			// creating the temporary file is not an update.
			Expect(statValue(s, "listener_manager.lds.update_attempt")).To(Equal("2"), "one move, one reload")
			Expect(statValue(s, "listener_manager.lds.update_success")).To(Equal("2"))
			Expect(statValue(s, "listener_manager.listener_modified")).To(Equal("1"))
			Expect(getBody(addrOf(port))).To(Equal("two"))
			Expect(listenersDump(s).GetVersionInfo()).To(Equal("v2"))
		},
		Entry("path_config_source.path", ldsPath),
		Entry("path_config_source.watched_directory", ldsWatchedDirectory),
	)

	It("refuses to start when the file does not exist", func() {
		dir := newDir()
		cfg := filepath.Join(dir, "bootstrap.yaml")
		writeFile(cfg, ldsBootstrap(filepath.Join(dir, "nowhere"), ldsPath))
		r := Run("-c", cfg)
		Expect(r.ExitCode).To(Equal(1), "stdout: %s", r.Stdout)
		Expect(r.Stderr).To(ContainSubstring("dynamic_resources.lds_config.path_config_source.path"))
		Expect(r.Stderr).To(ContainSubstring("does not exist"))
	})

	DescribeTable("reloads on a move only, as Envoy does: rewriting the file in place or creating another file is not an update",
		func(src ldsSource) {
			dir := ldsSetup(ldsResponse("v1", lds("dyn", "", 0, "one")))
			s := Start(newDir(), ldsBootstrap(dir, src))
			waitLive(s)
			addr := listenerAddr(s, "dyn")
			Expect(os.WriteFile(filepath.Join(dir, ldsFileName), []byte(ldsResponse("v2", lds("dyn", "", 0, "two"))), 0o600)).To(Succeed())
			writeFile(filepath.Join(dir, "notes.txt"), "not a move\n")
			Consistently(func() string { return statValue(s, "listener_manager.lds.update_attempt") }).Should(Equal("1"))
			Expect(getBody(addr)).To(Equal("one"))

			// The next move picks the content up.
			replaceLDS(dir, ldsResponse("v3", lds("dyn", "", 0, "three")))
			waitStat(s, "listener_manager.lds.version_text", `"v3"`)
			Expect(getBody(addr)).To(Equal("three"))
		},
		Entry("path_config_source.path", ldsPath),
		Entry("path_config_source.watched_directory", ldsWatchedDirectory),
	)

	It("changes a listener in place: same port, new connections get the new config, kept ones drain on the old", func() {
		dir := ldsSetup(ldsResponse("v1", lds("dyn", "", 0, "one")))
		// The default drain time (600 s) keeps the old listener draining
		// for the whole spec; the immediate strategy closes every answer.
		s := Start(newDir(), ldsBootstrap(dir, ldsPath), "--drain-strategy", "immediate")
		waitLive(s)
		addr := listenerAddr(s, "dyn")
		kept := dialKept(addr)
		body, closed := kept.get()
		Expect(body).To(Equal("one"))
		Expect(closed).To(BeFalse(), "nothing drains before the update")

		replaceLDS(dir, ldsResponse("v2", lds("dyn", "", 0, "two")))
		waitStat(s, "listener_manager.listener_modified", "1")
		Expect(listenerAddr(s, "dyn")).To(Equal(addr), "the kernel-chosen port is kept across the update")
		Expect(getBody(addr)).To(Equal("two"), "a new connection gets the new config")

		body, closed = kept.get()
		Expect(body).To(Equal("one"), "the connection opened before the change keeps the old config")
		Expect(closed).To(BeTrue(), "and is asked to close: its listener is draining")

		Expect(statValue(s, "listener_manager.total_listeners_active")).To(Equal("1"))
		Expect(statValue(s, "listener_manager.total_listeners_draining")).To(Equal("1"))
		Expect(statValue(s, "listener_manager.listener_added")).To(Equal("1"))
		dl := dynamicListeners(s)
		Expect(dl).To(HaveLen(1))
		Expect(dl["dyn"].GetActiveState().GetVersionInfo()).To(Equal("v2"))
		Expect(dl["dyn"].GetDrainingState().GetVersionInfo()).To(Equal("v1"), "the replaced listener is shown while it drains")
	})

	It("ends the drain of a replaced listener after --drain-time-s", func() {
		dir := ldsSetup(ldsResponse("v1", lds("dyn", "", 0, "one")))
		s := Start(newDir(), ldsBootstrap(dir, ldsPath), "--drain-time-s", "1")
		waitLive(s)
		replaceLDS(dir, ldsResponse("v2", lds("dyn", "", 0, "two")))
		waitStat(s, "listener_manager.listener_modified", "1")
		Eventually(func() *adminv3.ListenersConfigDump_DynamicListenerState {
			return dynamicListeners(s)["dyn"].GetDrainingState()
		}, 5*time.Second).Should(BeNil(), "draining_state goes away with the drain")
		waitStat(s, "listener_manager.total_listeners_draining", "0")
		Expect(dynamicListeners(s)["dyn"].GetActiveState().GetVersionInfo()).To(Equal("v2"))
	})

	It("fails no request while a listener is updated under load", func() {
		dir := ldsSetup(ldsResponse("v1", lds("busy", "", 0, "old")))
		s := Start(newDir(), ldsBootstrap(dir, ldsPath), "--drain-time-s", "1", "--concurrency", "2")
		waitLive(s)
		addr := listenerAddr(s, "busy")
		res := runLoadAcross(addr, "old", "new", func() {
			replaceLDS(dir, ldsResponse("v2", lds("busy", "", 0, "new")))
		})
		GinkgoWriter.Printf("answers by body %v, %d after the update\n", res.bodies, res.afterUpdate)
		Expect(res.failed).To(BeZero(), "failed requests across the update: %v", res.errors)
		Expect(res.bodies["old"]).To(BeNumerically(">", 0), "answers before the update")
		Expect(res.bodies["new"]).To(BeNumerically(">", 0), "the update took effect under load")
		Expect(res.afterUpdate).To(BeNumerically(">", 0))
		Expect(res.backwards).To(BeZero(), "a client that got the new config never gets the old one again")
		Expect(statValue(s, "listener_manager.listener_modified")).To(Equal("1"))
		Expect(listenerAddr(s, "busy")).To(Equal(addr))
	})

	It("removes a listener the file no longer names", func() {
		dir := ldsSetup(ldsResponse("v1", lds("a", "", 0, "a"), lds("b", "", 0, "b")))
		s := Start(newDir(), ldsBootstrap(dir, ldsPath))
		waitLive(s)
		a, b := listenerAddr(s, "a"), listenerAddr(s, "b")
		Expect(getBody(b)).To(Equal("b"))

		replaceLDS(dir, ldsResponse("v2", lds("a", "", 0, "a")))
		waitStat(s, "listener_manager.listener_removed", "1")
		Eventually(func() bool { return accepts(b) }).Should(BeFalse(), "the removed listener stops accepting")
		Expect(listenerNames(s)).To(Equal([]string{"a"}))
		Expect(s.Get("/listeners").Body).NotTo(ContainSubstring("b::"))
		Expect(getBody(a)).To(Equal("a"))
		Expect(statValue(s, "listener_manager.total_listeners_active")).To(Equal("1"))

		dl := dynamicListeners(s)
		Expect(dl["b"].GetActiveState()).To(BeNil(), "b is no longer active")
		Expect(dl["b"].GetDrainingState().GetVersionInfo()).To(Equal("v1"), "b drains (default drain time)")
	})

	It("adds a listener the file names anew", func() {
		dir := ldsSetup(ldsResponse("v1", lds("a", "INBOUND", 0, "a")))
		s := Start(newDir(), ldsBootstrap(dir, ldsPath))
		waitLive(s)

		replaceLDS(dir, ldsResponse("v2", lds("a", "INBOUND", 0, "a"), lds("b", "OUTBOUND", 0, "b")))
		waitStat(s, "listener_manager.listener_added", "2")
		Expect(listenerNames(s)).To(ConsistOf("a", "b"))
		Expect(s.Get("/listeners").Body).To(MatchRegexp(`(?m)^b::127\.0\.0\.1:[1-9][0-9]*$`))
		Expect(getBody(listenerAddr(s, "b"))).To(Equal("b"))
		Expect(getBody(listenerAddr(s, "a"))).To(Equal("a"))
		Expect(statValue(s, "listener_manager.lds.version_text")).To(Equal(`"v2"`))
		Expect(statValue(s, "listener_manager.listener_modified")).To(Equal("0"), "an unchanged listener is left alone")
		Expect(statValue(s, "listener_manager.total_listeners_active")).To(Equal("2"))

		dl := dynamicListeners(s)
		Expect(dl["a"].GetActiveState().GetVersionInfo()).To(Equal("v1"), "the unchanged listener keeps its version")
		Expect(dl["b"].GetActiveState().GetVersionInfo()).To(Equal("v2"))
	})

	It("keeps the listeners as they were when the file cannot be parsed", func() {
		dir := ldsSetup(ldsResponse("v1", lds("a", "", 0, "a")))
		s := Start(newDir(), ldsBootstrap(dir, ldsPath))
		waitLive(s)
		a := listenerAddr(s, "a")

		replaceLDS(dir, "version_info: v2\nresources: [\n")
		waitStat(s, "listener_manager.lds.update_failure", "1")
		Expect(statValue(s, "listener_manager.lds.update_attempt")).To(Equal("2"))
		Expect(statValue(s, "listener_manager.lds.update_success")).To(Equal("1"))
		Expect(statValue(s, "listener_manager.lds.update_rejected")).To(Equal("0"))
		Expect(statValue(s, "listener_manager.lds.version_text")).To(Equal(`"v1"`))
		Expect(listenerNames(s)).To(Equal([]string{"a"}))
		Expect(getBody(a)).To(Equal("a"))

		replaceLDS(dir, ldsResponse("v3", lds("a", "", 0, "a3")))
		waitStat(s, "listener_manager.lds.update_success", "2")
		Expect(getBody(a)).To(Equal("a3"), "the next good file applies")
		Expect(statValue(s, "listener_manager.lds.version_text")).To(Equal(`"v3"`))
	})

	It("rejects the listeners that fail, applies the others, and shows why in /config_dump", func() {
		held := freePort()
		dir := ldsSetup(ldsResponse("v1", lds("kept", "", 0, "k"), lds("changed", "", 0, "c1")))
		s := Start(newDir(), ldsBootstrap(dir, ldsPath, listenerDef{Name: "holder", Port: held, Chains: []string{directChain("h", "")}}))
		waitLive(s)
		changed := listenerAddr(s, "changed")
		Expect(statValue(s, "listener_manager.listener_added")).To(Equal("3"), "static listeners count too, as in Envoy")

		bad := lds("bad", "", 0, "x")
		bad.Fields = "max_connections_to_accept_per_socket_event: 1"
		replaceLDS(dir, ldsResponse("v2",
			lds("kept", "", 0, "k"), lds("changed", "", 0, "c2"), bad,
			lds("clash", "", held, "x"), lds("added", "", 0, "added")))
		waitStat(s, "listener_manager.lds.update_rejected", "1")
		Expect(statValue(s, "listener_manager.lds.update_success")).To(Equal("1"))
		Expect(statValue(s, "listener_manager.listener_added")).To(Equal("4"), "holder, kept, changed, then added")
		Expect(statValue(s, "listener_manager.listener_modified")).To(Equal("1"))

		Expect(listenerNames(s)).To(ConsistOf("holder", "kept", "changed", "added"))
		Expect(getBody(changed)).To(Equal("c2"), "the other listeners of the file still apply")
		Expect(getBody(listenerAddr(s, "added"))).To(Equal("added"))
		Expect(getBody(addrOf(held))).To(Equal("h"), "the clashing listener took nothing from the holder")

		dump := listenersDump(s)
		Expect(dump.GetVersionInfo()).To(Equal("v2"))
		dl := dynamicListeners(s)
		Expect(dl["bad"].GetActiveState()).To(BeNil())
		Expect(dl["bad"].GetErrorState().GetDetails()).To(ContainSubstring("max_connections_to_accept_per_socket_event"))
		Expect(dl["clash"].GetActiveState()).To(BeNil())
		Expect(dl["clash"].GetErrorState().GetDetails()).To(SatisfyAll(
			ContainSubstring(addrOf(held)), ContainSubstring("holder")))
		var failed listenerv3.Listener
		Expect(dl["clash"].GetErrorState().GetFailedConfiguration().UnmarshalTo(&failed)).To(Succeed())
		Expect(failed.GetName()).To(Equal("clash"))

		// One failure only in the golden: failures have no defined order.
		r := s.Get("/config_dump?resource=dynamic_listeners&name_regex=" + url.QueryEscape("^(kept|changed|bad)$"))
		Expect(r.Status).To(Equal(200))
		expectGolden("lds_dynamic_listeners.json", maskTimestamps(maskPorts(r.Body)))
	})

	Describe("after /drain_listeners", func() {
		It("refuses new and changed inbound listeners with inboundonly, still adds outbound ones", func() {
			dir := ldsSetup(ldsResponse("v1", lds("in1", "INBOUND", 0, "in1"), lds("out1", "OUTBOUND", 0, "out1")))
			s := Start(newDir(), ldsBootstrap(dir, ldsPath))
			waitLive(s)
			in1, out1 := listenerAddr(s, "in1"), listenerAddr(s, "out1")

			Expect(s.Post("/drain_listeners?inboundonly").Body).To(Equal("OK\n"))
			Expect(accepts(in1)).To(BeFalse())
			in2, out2 := freePort(), freePort()
			replaceLDS(dir, ldsResponse("v2",
				lds("in1", "INBOUND", 0, "in1 changed"), lds("out1", "OUTBOUND", 0, "out1"),
				lds("in2", "INBOUND", in2, "in2"), lds("out2", "OUTBOUND", out2, "out2")))
			waitStat(s, "listener_manager.lds.update_success", "2")
			Expect(statValue(s, "listener_manager.lds.update_rejected")).To(Equal("0"), "a refused listener does not reject the update")

			Expect(listenerNames(s)).To(ConsistOf("in1", "out1", "out2"))
			Expect(accepts(addrOf(in2))).To(BeFalse(), "the refused inbound listener is not bound")
			Expect(accepts(in1)).To(BeFalse(), "the changed inbound listener stays stopped")
			Expect(getBody(addrOf(out2))).To(Equal("out2"), "the outbound listener of the same update serves")
			Expect(getBody(out1)).To(Equal("out1"))
			Expect(statValue(s, "listener_manager.listener_added")).To(Equal("3"))
			Expect(statValue(s, "listener_manager.listener_modified")).To(Equal("0"))
			dl := dynamicListeners(s)
			Expect(dl).NotTo(HaveKey("in2"))
			Expect(dl["in1"].GetActiveState().GetVersionInfo()).To(Equal("v1"), "in1 was not updated")
			Expect(dl["out2"].GetActiveState().GetVersionInfo()).To(Equal("v2"))
			Eventually(s.Stderr).Should(MatchRegexp(`\[warning\].*in2`), "the refusal is logged")

			// Draining everything refuses every listener, whatever its direction.
			Expect(s.Post("/drain_listeners").Body).To(Equal("OK\n"))
			Expect(accepts(out1)).To(BeFalse())
			in3, out3, any3 := freePort(), freePort(), freePort()
			replaceLDS(dir, ldsResponse("v3",
				lds("in1", "INBOUND", 0, "in1"), lds("out1", "OUTBOUND", 0, "out1"), lds("out2", "OUTBOUND", out2, "out2"),
				lds("in3", "INBOUND", in3, "in3"), lds("out3", "OUTBOUND", out3, "out3"), lds("any3", "", any3, "any3")))
			waitStat(s, "listener_manager.lds.update_success", "3")
			Expect(listenerNames(s)).To(ConsistOf("in1", "out1", "out2"))
			for _, p := range []int{in3, out3, any3} {
				Expect(accepts(addrOf(p))).To(BeFalse(), "port %d refuses", p)
			}
			Expect(statValue(s, "listener_manager.listener_added")).To(Equal("3"))
		})

		It("starts refusing with graceful only when the listeners stop, at the end of the drain time", func() {
			dir := ldsSetup(ldsResponse("v1", lds("in1", "INBOUND", 0, "in1"), lds("out1", "OUTBOUND", 0, "out1")))
			s := Start(newDir(), ldsBootstrap(dir, ldsPath), "--drain-time-s", "2")
			waitLive(s)
			in1 := listenerAddr(s, "in1")

			Expect(s.Post("/drain_listeners?graceful&inboundonly").Body).To(Equal("OK\n"))
			replaceLDS(dir, ldsResponse("v2",
				lds("in1", "INBOUND", 0, "in1"), lds("out1", "OUTBOUND", 0, "out1"), lds("in2", "INBOUND", 0, "in2")))
			waitStat(s, "listener_manager.lds.update_success", "2")
			Expect(accepts(in1)).To(BeTrue(), "premise: the update came within the drain time")
			Expect(listenerNames(s)).To(ContainElement("in2"), "an inbound listener is still added during the drain time")

			Eventually(func() bool { return accepts(in1) }, 10*time.Second, 100*time.Millisecond).Should(BeFalse(),
				"the inbound listeners stop at the end of the drain time")
			in3 := freePort()
			replaceLDS(dir, ldsResponse("v3",
				lds("in1", "INBOUND", 0, "in1"), lds("out1", "OUTBOUND", 0, "out1"), lds("in2", "INBOUND", 0, "in2"),
				lds("in3", "INBOUND", in3, "in3"), lds("out3", "OUTBOUND", 0, "out3")))
			waitStat(s, "listener_manager.lds.update_success", "3")
			Expect(listenerNames(s)).NotTo(ContainElement("in3"))
			Expect(accepts(addrOf(in3))).To(BeFalse())
			Expect(getBody(listenerAddr(s, "out3"))).To(Equal("out3"))
		})
	})

	Describe("unknown fields in the file", func() {
		withUnknown := func(version, body string) string {
			l := lds("dyn", "", 0, body)
			l.Fields = "bogus_field: 1"
			return ldsResponse(version, l)
		}

		It("are ignored by default, counted once and warned about", func() {
			dir := ldsSetup(ldsResponse("v1", lds("dyn", "", 0, "one")))
			s := Start(newDir(), ldsBootstrap(dir, ldsPath))
			waitLive(s)
			addr := listenerAddr(s, "dyn")

			replaceLDS(dir, withUnknown("v2", "two"))
			waitStat(s, "listener_manager.lds.update_success", "2")
			Expect(getBody(addr)).To(Equal("two"))
			Expect(statValue(s, "server.dynamic_unknown_fields")).To(Equal("1"))
			Eventually(s.Stderr).Should(MatchRegexp(`\[warning\].*bogus_field`))

			replaceLDS(dir, withUnknown("v3", "three"))
			waitStat(s, "listener_manager.lds.update_success", "3")
			Expect(getBody(addr)).To(Equal("three"))
			Expect(statValue(s, "server.dynamic_unknown_fields")).To(Equal("1"), "the same unknown field counts once")
		})

		It("reject the update with --reject-unknown-dynamic-fields", func() {
			dir := ldsSetup(ldsResponse("v1", lds("dyn", "", 0, "one")))
			s := Start(newDir(), ldsBootstrap(dir, ldsPath), "--reject-unknown-dynamic-fields")
			waitLive(s)
			addr := listenerAddr(s, "dyn")

			replaceLDS(dir, withUnknown("v2", "two"))
			waitStat(s, "listener_manager.lds.update_rejected", "1")
			Expect(statValue(s, "listener_manager.lds.update_success")).To(Equal("1"))
			Expect(statValue(s, "listener_manager.lds.version_text")).To(Equal(`"v1"`))
			Expect(getBody(addr)).To(Equal("one"))
		})
	})
})
