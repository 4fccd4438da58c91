package e2e

import (
	"net"
	"os/exec"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// curlStatus fetches url with curl and returns the HTTP status it got.
func curlStatus(url string) string {
	GinkgoHelper()
	out, err := exec.Command("curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5", url).Output()
	Expect(err).NotTo(HaveOccurred(), "curl %s", url)
	return string(out)
}

// adminWithLimit is a bootstrap whose admin has the given fields (flow
// style, without braces) and whose global downstream connection limit,
// from the overload manager's monitor, is 1.
func adminWithLimit(adminFields string) string {
	return "admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}" + adminFields + "}\n" +
		"overload_manager: " + connOverload(1, "") + "\n"
}

var _ = Describe("Admin listener options", func() {
	It("answers 403 outside admin.allow_paths, matching the path with its query", func() {
		s := Start(newDir(), "admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}, "+
			"allow_paths: [{prefix: /stats}, {exact: /ready}]}\n")
		base := "http://" + s.Admin
		Expect(curlStatus(base + "/stats?filter=server.live")).To(Equal("200"))
		Expect(curlStatus(base + "/stats/prometheus")).To(Equal("200"))
		Expect(curlStatus(base + "/ready")).To(Equal("200"))
		Expect(curlStatus(base+"/ready?x=1")).To(Equal("403"), "an exact matcher sees the query too")
		Expect(curlStatus(base + "/config_dump")).To(Equal("403"))
		Expect(curlStatus(base + "/no_such_endpoint")).To(Equal("403"))
		r := s.Post("/quitquitquit")
		Expect(r.Status).To(Equal(403))
		Expect(s.Running()).To(BeTrue(), "a forbidden mutation has no effect")
	})

	It("sets admin.socket_options on the admin socket, and fails start-up when one cannot be set", func() {
		// SO_RCVBUF (SOL_SOCKET 1, name 8): Linux doubles the value asked.
		s := Start(newDir(), "admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}, "+
			"socket_options: [{level: 1, name: 8, int_value: 24576}]}\n")
		_, port, err := net.SplitHostPort(s.Admin)
		Expect(err).NotTo(HaveOccurred())
		out, err := exec.Command("ss", "-ltnmH", "sport = :"+port).Output()
		Expect(err).NotTo(HaveOccurred())
		Expect(string(out)).To(ContainSubstring("rb49152"), "ss shows the admin socket's receive buffer")

		bad := Launch(newDir(), "bootstrap.yaml", "admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}, "+
			"socket_options: [{level: 1, name: 999999, int_value: 1}]}\n")
		Expect(bad.Wait(startTimeout)).NotTo(Equal(0))
		Expect(bad.Stderr()).To(ContainSubstring("setsockopt(level 1, name 999999)"))
	})

	It("counts the admin's connections in the global connection limit unless ignore_global_conn_limit", func() {
		s := Start(newDir(), adminWithLimit(""))
		held := served(s.Admin)
		Expect(closedAtOnce(s.Admin)).To(BeTrue(), "a second admin connection is past the limit of 1")
		Expect(held.c.Close()).To(Succeed())
		overflow := "^listener.admin.downstream_global_cx_overflow$"
		Eventually(func() string {
			// curl, not the spec's client: it fails while the closed
			// connection is still counted, and Eventually retries.
			out, _ := exec.Command("curl", "-s", "--max-time", "5", "http://"+s.Admin+"/stats?filter="+overflow).Output()
			return string(out)
		}).Should(Equal("listener.admin.downstream_global_cx_overflow: 1\n"))

		ignoring := Start(newDir(), adminWithLimit(", ignore_global_conn_limit: true"))
		first := served(ignoring.Admin)
		served(ignoring.Admin)
		Expect(first.c.Close()).To(Succeed())
		Expect(statValue(ignoring, "listener.admin.downstream_global_cx_overflow")).To(Equal("0"))
		Expect(statValue(ignoring, "overload.envoy.resource_monitors.global_downstream_max_connections.failed_updates")).To(Equal("0"))
	})
})
