package e2e

import (
	"fmt"
	"io"
	"net/http"
	"time"

	celgo "github.com/google/cel-go/cel"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protojson"
)

// celExprJSON is the google.api.expr.v1alpha1.Expr of an expression, in
// JSON (valid YAML flow): what a control plane puts in an RBAC policy's
// condition.
func celExprJSON(text string) string {
	GinkgoHelper()
	env, err := celgo.NewEnv()
	Expect(err).NotTo(HaveOccurred())
	ast, iss := env.Parse(text)
	Expect(iss.Err()).NotTo(HaveOccurred())
	pe, err := celgo.AstToParsedExpr(ast)
	Expect(err).NotTo(HaveOccurred())
	js, err := protojson.Marshal(pe.GetExpr())
	Expect(err).NotTo(HaveOccurred())
	return string(js)
}

var _ = Describe("RBAC policies with CEL conditions", func() {
	It("match in the HTTP filter only when permissions, principals and the condition all match; an evaluation error does not match", func() {
		port := freePort()
		config := proxySpec{
			Port: port,
			HCM:  `{stat_prefix: edge, access_log: [` + stdoutLog("CELRBAC %REQ(:PATH)% %RESPONSE_CODE% %RESPONSE_CODE_DETAILS%\n") + `]}`,
			Filters: `[` + httpFilter("envoy.filters.http.rbac", httpRBACType, `{rules: {action: ALLOW, policies: {
				blue-get: {permissions: [{url_path: {path: {prefix: /team}}}], principals: [{any: true}],
					condition: `+celExprJSON(`request.headers['x-team'] == 'blue' && request.method == 'GET'`)+`},
				loopback: {permissions: [{url_path: {path: {prefix: /local}}}], principals: [{any: true}],
					condition: `+celExprJSON(`source.address.startsWith('127.0.0.1:') && destination.port == `+fmt.Sprint(port))+`},
				far: {permissions: [{url_path: {path: {prefix: /far}}}], principals: [{any: true}],
					condition: `+celExprJSON(`source.address.startsWith('10.')`)+`},
				checked: {permissions: [{url_path: {path: {prefix: /checked}}}], principals: [{any: true}],
					checked_condition: {expr: `+celExprJSON(`request.headers['x-key'] == 'k'`)+`}}}}}`) + `]`,
			Clusters: []proxyCluster{{Name: "up", Port: portNum(echoHeadersUpstream())}},
		}.YAML()
		s := Start(newDir(), config, "--file-flush-interval-msec", "50")
		client := &http.Client{Timeout: 10 * time.Second}
		do := func(method, path string, h http.Header) int {
			GinkgoHelper()
			return httpDo(client, method, listenerURL(port, path), nil, h).Status
		}

		Expect(do("GET", "/team", http.Header{"X-Team": {"blue"}})).To(Equal(200))
		Expect(do("POST", "/team", http.Header{"X-Team": {"blue"}})).To(Equal(403), "the condition also reads the method")
		Expect(do("GET", "/team", http.Header{"X-Team": {"red"}})).To(Equal(403))
		Expect(do("GET", "/team", nil)).To(Equal(403), "a missing header is an evaluation error: no match")
		Expect(do("GET", "/local", nil)).To(Equal(200), "source and destination addresses")
		Expect(do("GET", "/far", nil)).To(Equal(403))
		Expect(do("GET", "/checked", http.Header{"X-Key": {"k"}})).To(Equal(200), "checked_condition")
		Expect(do("GET", "/checked", nil)).To(Equal(403))
		Expect(statValue(s, "http.edge.rbac.allowed")).To(Equal("3"))
		Expect(statValue(s, "http.edge.rbac.denied")).To(Equal("5"))
		Eventually(s.Stdout).Should(ContainSubstring("CELRBAC /far 403 rbac_access_denied_matched_policy[none]"))
	})

	It("have Envoy's CEL defaults, and the features cel_config turns on", func() {
		port := freePort()
		config := proxySpec{
			Port: port,
			HCM:  `{stat_prefix: cfg}`,
			Filters: `[` + httpFilter("envoy.filters.http.rbac", httpRBACType, `{rules: {action: ALLOW, policies: {
				concat-off: {permissions: [{url_path: {path: {prefix: /off}}}], principals: [{any: true}],
					condition: `+celExprJSON(`request.method + '!' == 'GET!'`)+`},
				concat-on: {permissions: [{url_path: {path: {prefix: /concat}}}], principals: [{any: true}], cel_config: {enable_string_concat: true},
					condition: `+celExprJSON(`request.method + '!' == 'GET!'`)+`},
				conversion: {permissions: [{url_path: {path: {prefix: /string}}}], principals: [{any: true}], cel_config: {enable_string_conversion: true},
					condition: `+celExprJSON(`string(destination.port) == '`+fmt.Sprint(port)+`'`)+`},
				functions: {permissions: [{url_path: {path: {prefix: /functions}}}], principals: [{any: true}], cel_config: {enable_string_functions: true},
					condition: `+celExprJSON(`request.headers['x-role'].lowerAscii() == 'admin'`)+`}}}}`) + `]`,
			Clusters: []proxyCluster{{Name: "up", Port: portNum(echoHeadersUpstream())}},
		}.YAML()
		Start(newDir(), config)
		client := &http.Client{Timeout: 10 * time.Second}
		do := func(path string, h http.Header) int {
			GinkgoHelper()
			return httpDo(client, "GET", listenerURL(port, path), nil, h).Status
		}
		Expect(do("/off", nil)).To(Equal(403), "+ on strings is an evaluation error by default")
		Expect(do("/concat", nil)).To(Equal(200))
		Expect(do("/string", nil)).To(Equal(200))
		Expect(do("/functions", http.Header{"X-Role": {"ADMIN"}})).To(Equal(200))
		Expect(do("/functions", http.Header{"X-Role": {"guest"}})).To(Equal(403))
	})

	It("match in the network filter on the connection's addresses", func() {
		up := startTCPServer(echo)
		allowPort, denyPort := freePort(), freePort()
		policy := func(cond string) string {
			return `{stat_prefix: cel, rules: {action: ALLOW, policies: {p: {permissions: [{any: true}], principals: [{any: true}], condition: ` + celExprJSON(cond) + `}}}}`
		}
		config := rbacTCPBootstrap(up,
			allowPort, policy(fmt.Sprintf(`destination.port == %d && source.address.startsWith('127.') && source.port > 0 && !connection.mtls`, allowPort)),
			denyPort, policy(`source.port == 0`))
		s := Start(newDir(), config)

		c := dialTCP(allowPort)
		_, err := c.Write([]byte("hello"))
		Expect(err).NotTo(HaveOccurred())
		Expect(c.CloseWrite()).To(Succeed())
		got, err := io.ReadAll(c)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(got)).To(Equal("hello"))

		d := dialTCP(denyPort)
		_, _ = d.Write([]byte("hello"))
		got, _ = io.ReadAll(d)
		Expect(got).To(BeEmpty(), "closed by the proxy")
		Expect(statValue(s, "cel.rbac.allowed")).To(Equal("1"))
		Expect(statValue(s, "cel.rbac.denied")).To(Equal("1"))
	})
})
