package transport

import (
	"fmt"

	tapv3 "github.com/envoyproxy/go-control-plane/envoy/config/tap/v3"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// checkStatic refuses, by path, what of a static configuration the
// socket tap does not implement, whatever the tap core accepts for the
// HTTP filter: the rules of its match (or legacy match_config)
// that a socket tap can never evaluate: Envoy's socket tapper only starts
// its matchers on a new connection and never shows them headers,
// trailers or bodies, so only any_match and the and/or/not combinations
// of it mean anything there.
func checkStatic(tc *tapv3.TapConfig, field string) error {
	if m := tc.GetMatch(); m != nil {
		return checkRule(m.ProtoReflect(), field+".match")
	}
	//lint:ignore SA1019 Envoy still accepts the deprecated match_config
	if m := tc.GetMatchConfig(); m != nil {
		return checkRule(m.ProtoReflect(), field+".match_config")
	}
	return nil
}

// checkRule walks one MatchPredicate (either package's: their field names
// are the same).
func checkRule(m protoreflect.Message, field string) error {
	od := m.Descriptor().Oneofs().ByName("rule")
	if od == nil {
		return nil
	}
	fd := m.WhichOneof(od)
	if fd == nil {
		// The tap core reports a missing rule.
		return nil
	}
	path := field + "." + string(fd.Name())
	switch fd.Name() {
	case "any_match":
		return nil
	case "not_match":
		return checkRule(m.Get(fd).Message(), path)
	case "and_match", "or_match":
		rules := m.Get(fd).Message()
		list := rules.Get(rules.Descriptor().Fields().ByName("rules")).List()
		for i := range list.Len() {
			if err := checkRule(list.Get(i).Message(), fmt.Sprintf("%s.rules[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("%s: not supported by the tap transport socket, which sees connections, not HTTP (only any_match and and_match/or_match/not_match of it)", path)
}
