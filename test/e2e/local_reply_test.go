package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// localReplyBootstrap is a listener on port whose local replies are
// rewritten by local_reply_config: a 503 (the cluster has no endpoints)
// becomes a 401 with a header, a 404 from a direct response gets its own
// text format, and every body is JSON otherwise. The specs answer the 401
// with "not allowed" and put %LOCAL_REPLY_BODY% in the JSON's message;
// mappedBody (the 401's body, a YAML flow mapping) and message let a
// refusal spec change them.
func localReplyBootstrap(port int, mappedBody, message string) string {
	GinkgoHelper()
	return proxySpec{
		Port: port,
		Top:  "{layered_runtime: {layers: [{name: admin, admin_layer: {}}]}}",
		HCM: `{stat_prefix: replies,
			access_log: [` + stdoutLog("LOGGED %REQ(:PATH)% %RESPONSE_CODE% %RESPONSE_FLAGS%\n") + `],
			local_reply_config: {
				mappers: [
					{filter: {status_code_filter: {comparison: {op: EQ, value: {default_value: 503, runtime_key: replies.mapped}}}},
					 status_code: 401, body: ` + mappedBody + `,
					 headers_to_add: [{header: {key: x-mapped, value: "yes"}, append_action: OVERWRITE_IF_EXISTS_OR_ADD}]},
					{filter: {and_filter: {filters: [
						{status_code_filter: {comparison: {op: EQ, value: {default_value: 404, runtime_key: replies.gone}}}},
						{header_filter: {header: {name: x-plain, present_match: true}}}]}},
					 body_format_override: {text_format_source: {inline_string: "%LOCAL_REPLY_BODY% [%RESPONSE_CODE%]"}, content_type: text/x-plain}}],
				body_format: {json_format: {status: "%RESPONSE_CODE%", message: "` + message + `", path: "%REQ(:PATH)%"}}}}`,
		Routes: `[{match: {prefix: /down}, route: {cluster: empty}},
			{match: {prefix: /gone}, direct_response: {status: 404, body: {inline_string: gone}}}]`,
		Clusters: []proxyCluster{{Name: "empty", Extra: "{load_assignment: {endpoints: []}}"}},
	}.YAML()
}

var _ = Describe("Local replies (local_reply_config)", func() {
	It("maps statuses, bodies and headers, and formats bodies, for HTTP and gRPC clients", func() {
		port := freePort()
		s := Start(newDir(), localReplyBootstrap(port, `{inline_string: "not allowed"}`, "%LOCAL_REPLY_BODY%"), "--file-flush-interval-msec", "50")
		client := &http.Client{Timeout: 5 * time.Second}

		By("mapping the 503 of a cluster without hosts to a 401")
		r := httpDo(client, "GET", listenerURL(port, "/down"), nil, nil)
		Expect(r.Status).To(Equal(401))
		Expect(r.Header.Get("X-Mapped")).To(Equal("yes"))
		Expect(r.Header.Get("Content-Type")).To(Equal("application/json"))
		var body map[string]any
		Expect(json.Unmarshal([]byte(r.Body), &body)).To(Succeed(), r.Body)
		Expect(body).To(Equal(map[string]any{"status": 401.0, "message": "not allowed", "path": "/down"}))
		Eventually(s.Stdout).Should(ContainSubstring("LOGGED /down 401 UH\n"))

		By("formatting an unmapped reply with body_format")
		r = httpDo(client, "GET", listenerURL(port, "/gone"), nil, nil)
		Expect(r.Status).To(Equal(404))
		Expect(json.Unmarshal([]byte(r.Body), &body)).To(Succeed(), r.Body)
		Expect(body).To(Equal(map[string]any{"status": 404.0, "message": "gone", "path": "/gone"}))

		By("using a mapper's own format")
		r = httpDo(client, "GET", listenerURL(port, "/gone"), nil, http.Header{"X-Plain": {"1"}})
		Expect(r.Status).To(Equal(404))
		Expect(r.Body).To(Equal("gone [404]"))
		Expect(r.Header.Get("Content-Type")).To(Equal("text/x-plain"))

		By("following the mapper's runtime key")
		Expect(s.Post("/runtime_modify?replies.mapped=502").Status).To(Equal(200))
		r = httpDo(client, "GET", listenerURL(port, "/down"), nil, nil)
		Expect(r.Status).To(Equal(503))
		Expect(r.Header.Get("X-Mapped")).To(BeEmpty())
		Expect(r.Body).To(ContainSubstring(`"message":"no healthy upstream"`))
		Expect(s.Post("/runtime_modify?replies.mapped=503").Status).To(Equal(200))

		By("answering a gRPC client in gRPC's form, with the mapped status")
		r = httpDo(client, "POST", listenerURL(port, "/down"), strings.NewReader(""), http.Header{"Content-Type": {"application/grpc"}})
		Expect(r.Status).To(Equal(200))
		Expect(r.Header.Get("Grpc-Status")).To(Equal("16"), "401 is UNAUTHENTICATED")
		Expect(r.Header.Get("Grpc-Message")).To(HavePrefix("{"))
		Expect(r.Header.Get("Grpc-Message")).NotTo(HaveSuffix("%0A"))
	})

	It("refuses what it cannot build, with the field path", func() {
		cfg := localReplyBootstrap(freePort(), "{filename: /etc/hostname}", "%LOCAL_REPLY_BODY%")
		r, _ := validate("b.yaml", cfg)
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("local_reply_config.mappers[0].body.filename: not supported by Outrigger"))

		cfg = localReplyBootstrap(freePort(), `{inline_string: "not allowed"}`, "%NO_SUCH_THING%")
		r, _ = validate("b.yaml", cfg)
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("local_reply_config.body_format.json_format"))
	})
})
