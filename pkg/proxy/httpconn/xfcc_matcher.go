package httpconn

import (
	"fmt"

	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	xdsmatcherv3 "github.com/cncf/xds/go/xds/type/matcher/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpmatch"
)

// xfccChoice is a forward_client_cert_matcher action (a
// ForwardClientCertConfig): the mode and the details of the requests it
// matches.
type xfccChoice struct {
	mode    hcmv3.HttpConnectionManager_ForwardClientCertDetails
	details []xfccDetail
}

// readXFCCMatcher compiles forward_client_cert_matcher; errors name the
// field below it.
func readXFCCMatcher(m *xdsmatcherv3.Matcher) (*httpmatch.Matcher[*xfccChoice], error) {
	return httpmatch.Compile(m, compileXFCCAction)
}

// compileXFCCAction compiles an action, which must be a
// ForwardClientCertConfig.
func compileXFCCAction(tc *xdscorev3.TypedExtensionConfig, path string) (*xfccChoice, error) {
	msg, err := httpmatch.TypedConfig(tc, path, "an action")
	if err != nil {
		return nil, err
	}
	c, ok := msg.(*hcmv3.HttpConnectionManager_ForwardClientCertConfig)
	if !ok {
		return nil, fmt.Errorf("%s.typed_config: action %s is not a forward client cert action (%s)", path, proto.MessageName(msg), proto.MessageName(&hcmv3.HttpConnectionManager_ForwardClientCertConfig{}))
	}
	return &xfccChoice{mode: c.GetForwardClientCertDetails(), details: readXFCCDetails(c.GetSetCurrentClientCertDetails())}, nil
}

// xfccMode is the request's forward_client_cert_details and
// set_current_client_cert_details: those of the forward_client_cert_matcher
// action it matches, else the connection manager's, as Envoy falls back
// on them. The matcher reads the request's headers as they arrived, before
// the header is changed.
func (s *stream) xfccMode() (hcmv3.HttpConnectionManager_ForwardClientCertDetails, []xfccDetail) {
	cfg := &s.m.cfg // not a copy of the settings: ~140 instructions per request
	if cfg.xfccMatcher != nil {
		if c, ok := cfg.xfccMatcher.Match(httpmatch.RequestData{R: &s.rreq}); ok {
			return c.mode, c.details
		}
	}
	return cfg.xfcc, cfg.xfccDetails
}
