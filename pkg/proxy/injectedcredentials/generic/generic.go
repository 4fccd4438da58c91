// Package generic is the generic injected credential
// (envoy.http.injected_credentials.generic): a generic secret, static or
// from SDS, injected as it is (after header_value_prefix) in a header,
// Authorization by default.
package generic

import (
	"errors"
	"fmt"
	"strings"

	genericv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/injected_credentials/generic/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/genericsecret"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/injectedcredentials"
)

// Name is the extension's name in the proxy. spelling.
const Name = "proxy.http.injected_credentials.generic"

// Factory compiles a Generic credential.
type Factory struct{}

var _ injectedcredentials.Factory = Factory{}

// CompileInjector implements injectedcredentials.Factory.
func (Factory) CompileInjector(config proto.Message, ctx httpfilter.Context) (injectedcredentials.Injector, error) {
	c, ok := config.(*genericv3.Generic)
	if !ok {
		return nil, errors.New("not a Generic configuration")
	}
	if c.GetCredential() == nil {
		return nil, errors.New("credential: required")
	}
	v, err := genericsecret.Resolve(ctx.Services, c.GetCredential(), "credential")
	if err != nil {
		return nil, fmt.Errorf("credential%w", err)
	}
	header := strings.ToLower(c.GetHeader())
	if header == "" {
		header = "authorization"
	}
	return &injector{secret: v, header: header, prefix: c.GetHeaderValuePrefix()}, nil
}

// injector is a compiled Generic.
type injector struct {
	secret         *genericsecret.Value
	header, prefix string
}

// Header implements injectedcredentials.Injector.
func (i *injector) Header() string { return i.header }

// Credential implements injectedcredentials.Injector: the secret without
// its trailing newlines and carriage returns (a secret file's last line
// ends with one, and a header value cannot carry it), after the prefix;
// "" when nothing is left.
func (i *injector) Credential() string {
	v := strings.TrimRight(string(i.secret.Bytes()), "\r\n")
	if v == "" {
		return ""
	}
	return i.prefix + v
}
