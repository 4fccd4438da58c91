// Package injectedcredentials is the interface between the credential
// injector HTTP filter and the credential extensions, Envoy's
// envoy.http.injected_credentials category: an extension package (generic,
// oauth2) registers a Factory, which compiles its configuration into an
// Injector that says which header carries the credential and what its
// current value is.
package injectedcredentials

import (
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// Category is Envoy's extension category of the injected credentials.
const Category = "envoy.http.injected_credentials"

// Factory compiles a credential's configuration.
type Factory interface {
	// CompileInjector checks and compiles the typed_config of the
	// filter's credential; ctx is the filter's, its StatPrefix the
	// filter's stat scope ("http.<stat_prefix>.credential_injector.").
	// Errors name the field path below typed_config.
	CompileInjector(config proto.Message, ctx httpfilter.Context) (Injector, error)
}

// Injector is a compiled credential. One value serves every request at
// once. One that holds resources (a token fetcher) also implements
// io.Closer, which the filter's configuration calls when it is closed.
type Injector interface {
	// Header is the lower-case name of the header the credential goes in.
	Header() string
	// Credential is the header's value, "" while there is none (the
	// secret has not arrived, no token was fetched yet).
	Credential() string
}
