package e2e

import (
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

const (
	credentialInjectorType = "type.googleapis.com/envoy.extensions.filters.http.credential_injector.v3.CredentialInjector"
	injectedGenericType    = "type.googleapis.com/envoy.extensions.http.injected_credentials.generic.v3.Generic"
	injectedOAuth2Type     = "type.googleapis.com/envoy.extensions.http.injected_credentials.oauth2.v3.OAuth2"
)

// credentialInjector is a credential_injector filter entry with the
// filter's fields and its credential (name, typed_config type and
// fields).
func credentialInjector(fields, credName, credType, credFields string) string {
	GinkgoHelper()
	return `{name: envoy.filters.http.credential_injector, typed_config: ` + withType(credentialInjectorType,
		`{`+fields+`credential: {name: `+credName+`, typed_config: `+withType(credType, credFields)+`}}`) + `}`
}

// tokenRequest is what the token server received.
type tokenRequest struct {
	contentType, authorization string
	form                       url.Values
	rawBody                    string
}

var _ = Describe("The credential_injector filter", func() {
	plain := &http.Client{Timeout: 5 * time.Second}

	It("injects a generic secret, keeps a request's own credential unless overwrite, and answers 401 without one", func() {
		dir := newDir()
		sdsFile := filepath.Join(dir, "cred.yaml")
		writeFile(sdsFile, `resources:
- "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret
  name: file-token
  generic_secret: {secret: {inline_string: "xyz123\n"}}
`)
		keep, overwrite, missing := freePort(), freePort(), freePort()
		up := proxyCluster{Name: "up", Port: portNum(echoHeadersUpstream())}
		sc := Start(dir, proxySpec{
			Port: keep,
			HCM:  `{stat_prefix: keep}`,
			Filters: "[" + credentialInjector(``, "envoy.http.injected_credentials.generic", injectedGenericType,
				`{credential: {name: basic}}`) + "]",
			Clusters: []proxyCluster{up},
			Top: `{static_resources: {secrets: [{name: basic, generic_secret: {secret: {inline_string: "Basic dXNlcjpwYXNz"}}},
				{name: blank, generic_secret: {secret: {inline_string: "\r\n"}}}]}}`,
			More: []proxySpec{{
				Port: overwrite, Listener: `{name: overwrite}`, HCM: `{stat_prefix: over}`,
				Filters: "[" + credentialInjector(`overwrite: true, `, "envoy.http.injected_credentials.generic", injectedGenericType,
					`{header: X-Token, header_value_prefix: "Bearer ", credential: {name: file-token, sds_config: {path_config_source: {path: `+sdsFile+`}}}}`) + "]",
				Routes: `[{match: {prefix: /}, route: {cluster: up}}]`,
			}, {
				Port: missing, Listener: `{name: missing}`, HCM: `{stat_prefix: miss}`,
				Filters: "[" + credentialInjector(``, "envoy.http.injected_credentials.generic", injectedGenericType,
					`{credential: {name: blank}}`) + "]",
				Routes: `[{match: {prefix: /}, route: {cluster: up}}]`,
			}},
		}.YAML())

		seen := tailSeen(httpDo(plain, "GET", listenerURL(keep, "/"), nil, nil))
		Expect(seen).To(HaveKeyWithValue("Authorization", "Basic dXNlcjpwYXNz"))
		seen = tailSeen(httpDo(plain, "GET", listenerURL(keep, "/"), nil, http.Header{"Authorization": {"Bearer mine"}}))
		Expect(seen).To(HaveKeyWithValue("Authorization", "Bearer mine"))

		// The file's secret, its newline dropped, after the prefix, in
		// place of the request's own.
		seen = tailSeen(httpDo(plain, "GET", listenerURL(overwrite, "/"), nil, http.Header{"X-Token": {"old"}}))
		Expect(seen).To(HaveKeyWithValue("X-Token", "Bearer xyz123"))

		r := httpDo(plain, "GET", listenerURL(missing, "/"), nil, nil)
		Expect(r.Status).To(Equal(401))
		Expect(r.Body).To(Equal("Failed to inject credential."))

		Expect(httpStat(sc, "http.keep.credential_injector.injected")).To(Equal("1"))
		Expect(httpStat(sc, "http.keep.credential_injector.already_exists")).To(Equal("1"))
		Expect(httpStat(sc, "http.over.credential_injector.injected")).To(Equal("1"))
		Expect(httpStat(sc, "http.miss.credential_injector.failed")).To(Equal("1"))
	})

	It("fetches an OAuth2 client credentials token from a real token server and injects it as a Bearer token", func() {
		var (
			mu       sync.Mutex
			requests []tokenRequest
		)
		tokens := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			raw, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(strings.NewReader(string(raw)))
			_ = r.ParseForm()
			mu.Lock()
			requests = append(requests, tokenRequest{r.Header.Get("Content-Type"), r.Header.Get("Authorization"), r.PostForm, string(raw)})
			mu.Unlock()
			if r.URL.Path != "/oauth/token" || r.Method != http.MethodPost {
				http.Error(w, "wrong endpoint", http.StatusNotFound)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			if r.PostForm.Get("client_id") == "body-app" {
				_, _ = io.WriteString(w, `{"access_token": "body-token", "token_type": "bearer", "expires_in": "3600"}`)
				return
			}
			_, _ = io.WriteString(w, `{"access_token": "basic-token", "token_type": "bearer", "expires_in": 3600}`)
		}), false)
		basic, body := freePort(), freePort()
		up := proxyCluster{Name: "up", Port: portNum(echoHeadersUpstream())}
		sc := Start(newDir(), proxySpec{
			Port: basic,
			HCM:  `{stat_prefix: basic}`,
			Filters: "[" + credentialInjector(``, "envoy.http.injected_credentials.oauth2", injectedOAuth2Type,
				`{token_endpoint: {cluster: idp, uri: "http://idp.example/oauth/token", timeout: 2s}, scopes: [read, write],
				  client_credentials: {client_id: "app:1", client_secret: {name: client}}}`) + "]",
			Clusters: []proxyCluster{up, {Name: "idp", Port: portNum(tokens)}},
			Top:      `{static_resources: {secrets: [{name: client, generic_secret: {secret: {inline_string: "s3cr&t"}}}]}}`,
			More: []proxySpec{{
				Port: body, Listener: `{name: body}`, HCM: `{stat_prefix: body}`,
				Filters: "[" + credentialInjector(``, "envoy.http.injected_credentials.oauth2", injectedOAuth2Type,
					`{token_endpoint: {cluster: idp, uri: "http://idp.example/oauth/token", timeout: 2s},
					  endpoint_params: [{name: audience, value: "https://api.example/"}],
					  client_credentials: {client_id: body-app, client_secret: {name: client}, auth_type: URL_ENCODED_BODY}}`) + "]",
				Routes: `[{match: {prefix: /}, route: {cluster: up}}]`,
			}},
		}.YAML())

		// The first token is fetched when the configuration loads.
		Eventually(func() string { return httpStat(sc, "http.basic.credential_injector.oauth2.token_fetched") }).Should(Equal("1"))
		Eventually(func() string { return httpStat(sc, "http.body.credential_injector.oauth2.token_fetched") }).Should(Equal("1"))
		seen := tailSeen(httpDo(plain, "GET", listenerURL(basic, "/"), nil, nil))
		Expect(seen).To(HaveKeyWithValue("Authorization", "Bearer basic-token"))
		seen = tailSeen(httpDo(plain, "GET", listenerURL(body, "/"), nil, nil))
		Expect(seen).To(HaveKeyWithValue("Authorization", "Bearer body-token"))

		mu.Lock()
		defer mu.Unlock()
		Expect(requests).To(HaveLen(2))
		for _, req := range requests {
			Expect(req.contentType).To(Equal("application/x-www-form-urlencoded"))
			Expect(req.form["grant_type"]).To(Equal([]string{"client_credentials"}))
			if req.form.Get("client_id") == "body-app" {
				// URL_ENCODED_BODY: the credentials in the form.
				Expect(req.authorization).To(BeEmpty())
				Expect(req.rawBody).To(Equal("grant_type=client_credentials&client_id=body-app&client_secret=s3cr%26t&audience=https%3A%2F%2Fapi.example%2F"))
				continue
			}
			// BASIC_AUTH, the default: the credentials in the header.
			Expect(req.authorization).To(Equal("Basic YXBwOjE6czNjciZ0")) // base64("app:1:s3cr&t")
			Expect(req.rawBody).To(Equal("grant_type=client_credentials&scope=read write"))
		}
		Expect(httpStat(sc, "http.basic.credential_injector.oauth2.token_requested")).To(Equal("1"))
		Expect(httpStat(sc, "http.basic.credential_injector.injected")).To(Equal("1"))
	})

	It("injects its credential on every upstream attempt as an upstream filter", func() {
		rec := &attemptRecorder{failFirst: 1}
		port := freePort()
		sc := Start(newDir(), proxySpec{
			Port:   port,
			HCM:    `{stat_prefix: web}`,
			Routes: `[{match: {prefix: /}, route: {cluster: up, retry_policy: {retry_on: 5xx, num_retries: 1, retry_back_off: {base_interval: 0.001s}}}}]`,
			Router: `{upstream_http_filters: [` + credentialInjector(`overwrite: true, `, "envoy.http.injected_credentials.generic", injectedGenericType,
				`{credential: {name: up-token}}`) + `, ` + upstreamCodec + `]}`,
			Clusters: []proxyCluster{{Name: "up", Port: portNum(httpTestUpstream(rec, false))}},
			Top:      `{static_resources: {secrets: [{name: up-token, generic_secret: {secret: {inline_string: "Bearer upstream"}}}]}}`,
		}.YAML())
		r := httpDo(plain, "GET", listenerURL(port, "/"), nil, http.Header{"Authorization": {"Bearer client"}})
		Expect(r.Status).To(Equal(200))
		seen := rec.attempts()
		Expect(seen).To(HaveLen(2))
		for i, h := range seen {
			Expect(h.Values("Authorization")).To(Equal([]string{"Bearer upstream"}), "attempt %d", i+1)
		}
		// The router's upstream filters keep their stats under the
		// server's scope.
		Expect(httpStat(sc, "credential_injector.injected")).To(Equal("2"))
	})

	It("refuses an OAuth2 credential without a client secret, with the field path", func() {
		r, _ := validate("o.yaml", tailLogSpec(freePort(), "["+credentialInjector(``, "envoy.http.injected_credentials.oauth2", injectedOAuth2Type,
			`{token_endpoint: {cluster: up, uri: "http://idp/token", timeout: 1s}, client_credentials: {client_id: app}}`)+"]", "x"))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("http_filters[0].typed_config.credential.typed_config.client_credentials.client_secret: required unless auth_type is TLS_CLIENT_AUTH"))
	})
})
