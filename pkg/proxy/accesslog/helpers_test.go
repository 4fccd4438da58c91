package accesslog

import (
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	datav3 "github.com/envoyproxy/go-control-plane/envoy/data/accesslog/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// headerMap is a HeaderGetter over a map, as a connection manager's
// header view answers.
type headerMap map[string]string

func (h headerMap) Get(name string) (string, bool) {
	v, ok := h[name]
	return v, ok
}

// fullEntry has every field set, as a proxied request has them.
func fullEntry() *Entry {
	start := time.Date(2024, 5, 1, 10, 0, 0, 123456789, time.UTC)
	return &Entry{
		StartTime: start,
		Method:    "POST",
		Path:      "/api/v1/locations?id=7",
		Authority: "locations.svc:8080",
		Scheme:    "http",
		Protocol:  "HTTP/1.1",
		RequestHeaders: headerMap{
			"x-forwarded-for": "10.0.35.28",
			"user-agent":      "nsq2http",
			"x-request-id":    "cc21d9b0-cf5c-432b-8c7e-98aeb7988cd2",
			"x-empty":         "",
			"x-quote":         `say "hi"` + "\n\x01",
		},
		ResponseHeaders: headerMap{
			"x-envoy-upstream-service-time": "100",
			"content-type":                  "application/json",
		},
		ResponseTrailers:                 headerMap{"grpc-status": "0"},
		ResponseCode:                     204,
		ResponseCodeDetails:              "via_upstream",
		ResponseFlags:                    UpstreamRequestTimeout | UpstreamRetryLimitExceeded,
		BytesReceived:                    154,
		BytesSent:                        0,
		Duration:                         226*time.Millisecond + 900*time.Microsecond,
		LastRequestByte:                  start.Add(12 * time.Millisecond),
		FirstUpstreamByte:                start.Add(110 * time.Millisecond),
		UpstreamHost:                     "10.0.2.1:80",
		UpstreamCluster:                  "locations",
		UpstreamLocalAddress:             "10.0.1.5:41234",
		UpstreamTransportFailureReason:   "",
		DownstreamRemoteAddress:          "10.0.35.28:51000",
		DownstreamLocalAddress:           "[fd00::1]:8080",
		RequestedServerName:              "locations.example.com",
		ConnectionID:                     42,
		RouteName:                        "locations-route",
		FilterChainName:                  "plain-http",
		DownstreamTransportFailureReason: "TLS_error:|268435612:SSL routines:OPENSSL_internal:HTTP_REQUEST:TLS_error_end",
		Type:                             datav3.AccessLogType_DownstreamPeriodic,
		DynamicMetadata:                  entryMetadata(),
		ClusterMetadata:                  entryMetadata(),
		UpstreamHostMetadata:             entryMetadata(),
	}
}

// entryMetadata has values that need escaping in JSON (invalid UTF-8
// included, which structpb.NewStruct refuses but the wire format can carry).
func entryMetadata() *corev3.Metadata {
	st, err := structpb.NewStruct(map[string]any{
		"n": 1.5, "list": []any{"a", map[string]any{"b": nil}},
	})
	if err != nil {
		panic(err)
	}
	st.Fields["k"] = &structpb.Value{Kind: &structpb.Value_StringValue{StringValue: "quote\" and \x01 and \xff"}}
	return &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"ns": st}}
}
