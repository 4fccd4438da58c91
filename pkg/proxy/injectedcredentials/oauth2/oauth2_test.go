package oauth2

import (
	"testing"

	oauth2v3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/injected_credentials/oauth2/v3"
)

func TestBody(t *testing.T) {
	c := &oauth2v3.OAuth2{
		Scopes:         []string{"a", "b:c"},
		EndpointParams: []*oauth2v3.OAuth2_EndpointParameter{{Name: "resource", Value: "https://x/?y=1&z"}},
	}
	for _, tc := range []struct {
		auth oauth2v3.OAuth2_AuthType
		want string
	}{
		{oauth2v3.OAuth2_BASIC_AUTH, "grant_type=client_credentials&scope=a b%3Ac&resource=https%3A%2F%2Fx%2F%3Fy%3D1%26z"},
		{oauth2v3.OAuth2_URL_ENCODED_BODY, "grant_type=client_credentials&client_id=id%3A1&client_secret=s%26%3D&scope=a b%3Ac&resource=https%3A%2F%2Fx%2F%3Fy%3D1%26z"},
		{oauth2v3.OAuth2_TLS_CLIENT_AUTH, "grant_type=client_credentials&client_id=id%3A1&scope=a b%3Ac&resource=https%3A%2F%2Fx%2F%3Fy%3D1%26z"},
	} {
		in := &injector{clientID: "id:1", authType: tc.auth, form: formTail(c)}
		if got := in.body("s&="); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.auth, got, tc.want)
		}
	}
}
