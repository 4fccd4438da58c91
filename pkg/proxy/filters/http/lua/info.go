package lua

import (
	"crypto/x509"
	"math"
	"sort"

	glua "github.com/yuin/gopher-lua"
	"google.golang.org/protobuf/types/known/structpb"
)

// The stream info object (handle:streamInfo()), its dynamic metadata,
// the connection object (handle:connection()) and its TLS object, and
// the route metadata object (handle:metadata()).

// newStreamInfo makes the stream info object of h.
func newStreamInfo(L *glua.LState, h *handle) *glua.LUserData {
	str := h.stringMethod
	return newObject(L, h, "stream info", map[string]glua.LGFunction{
		"protocol":                      str(func(h *handle) string { return h.s.Info().Protocol }),
		"downstreamLocalAddress":        str(func(h *handle) string { return h.s.Info().LocalAddress }),
		"downstreamRemoteAddress":       str(func(h *handle) string { return h.s.Info().RemoteAddress }),
		"downstreamDirectRemoteAddress": str(func(h *handle) string { return h.s.Info().DirectRemoteAddress }),
		"requestedServerName":           str(func(h *handle) string { return h.s.Info().RequestedServerName }),
		"routeName": str(func(h *handle) string {
			if r := h.s.Route(); r != nil {
				return r.Name
			}
			return ""
		}),
		"dynamicMetadata":         h.object(&h.dynUD),
		"downstreamSslConnection": h.sslOrNil,
	})
}

// newDynamicMetadata makes the dynamic metadata object of h: get(ns),
// set(ns, key, value) and pairs() over the request's dynamic metadata.
func newDynamicMetadata(L *glua.LState, h *handle) *glua.LUserData {
	return newObject(L, h, "dynamic metadata", map[string]glua.LGFunction{
		"get": func(L *glua.LState) int {
			h.check(L)
			ns := L.CheckString(2)
			st, ok := h.s.DynamicMetadata().GetFilterMetadata()[ns]
			if !ok {
				L.Push(glua.LNil)
				return 1
			}
			L.Push(structToLua(L, st))
			return 1
		},
		"set": func(L *glua.LState) int {
			h.check(L)
			ns := L.CheckString(2)
			key := L.CheckString(3)
			v := luaToValue(L, L.CheckAny(4), 0)
			h.s.SetDynamicMetadata(ns, &structpb.Struct{Fields: map[string]*structpb.Value{key: v}})
			return 0
		},
		"pairs": func(L *glua.LState) int {
			h.check(L)
			fm := h.s.DynamicMetadata().GetFilterMetadata()
			names := make([]string, 0, len(fm))
			for ns := range fm {
				names = append(names, ns)
			}
			sort.Strings(names)
			L.Push(iterator(L, len(names), func(i int) (glua.LValue, glua.LValue) {
				return glua.LString(names[i]), structToLua(L, fm[names[i]])
			}))
			return 1
		},
	})
}

// newRouteMetadata makes the route metadata object of h: the route's
// filter_metadata under the filter's configured name, else under
// envoy.filters.http.lua.
func newRouteMetadata(L *glua.LState, h *handle) *glua.LUserData {
	fields := func(h *handle) map[string]*structpb.Value {
		r := h.s.Route()
		if r == nil {
			return nil
		}
		fm := r.Metadata.GetFilterMetadata()
		if st, ok := fm[h.c.name]; ok {
			return st.GetFields()
		}
		return fm[envoyName].GetFields()
	}
	return newObject(L, h, "metadata", map[string]glua.LGFunction{
		"get": func(L *glua.LState) int {
			h.check(L)
			v, ok := fields(h)[L.CheckString(2)]
			if !ok {
				L.Push(glua.LNil)
				return 1
			}
			L.Push(valueToLua(L, v))
			return 1
		},
		"pairs": func(L *glua.LState) int {
			h.check(L)
			f := fields(h)
			keys := make([]string, 0, len(f))
			for k := range f {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			L.Push(iterator(L, len(keys), func(i int) (glua.LValue, glua.LValue) {
				return glua.LString(keys[i]), valueToLua(L, f[keys[i]])
			}))
			return 1
		},
	})
}

// newConnection makes the connection object of h: ssl() is nil on a
// plaintext connection.
func newConnection(L *glua.LState, h *handle) *glua.LUserData {
	return newObject(L, h, "connection", map[string]glua.LGFunction{
		"ssl": h.sslOrNil,
	})
}

// sslOrNil is ssl() and downstreamSslConnection(): nil on a plaintext
// connection.
func (h *handle) sslOrNil(L *glua.LState) int {
	h.check(L)
	if h.s.Info().TLS == nil {
		L.Push(glua.LNil)
		return 1
	}
	L.Push(h.fresh(L, &h.sslUD))
	return 1
}

// newSSL makes the TLS object of a connection.
func newSSL(L *glua.LState, h *handle) *glua.LUserData {
	str := h.stringMethod
	return newObject(L, h, "ssl connection", map[string]glua.LGFunction{
		"peerCertificatePresented": func(L *glua.LState) int {
			h.check(L)
			L.Push(glua.LBool(h.s.Info().TLS.PeerCertificate != nil))
			return 1
		},
		"tlsVersion":                  str(func(h *handle) string { return h.s.Info().TLS.Version }),
		"ciphersuiteString":           str(func(h *handle) string { return h.s.Info().TLS.Cipher }),
		"subjectPeerCertificate":      str(func(h *handle) string { return h.s.Info().TLS.PeerSubject() }),
		"sha256PeerCertificateDigest": str(func(h *handle) string { return h.s.Info().TLS.PeerFingerprint256() }),
		"serialNumberPeerCertificate": str(func(h *handle) string { return h.s.Info().TLS.PeerSerial() }),
		"subjectLocalCertificate":     str(func(h *handle) string { return h.s.Info().TLS.LocalSubject() }),
		"uriSanPeerCertificate": h.peerSANs(func(c *x509.Certificate) []string {
			out := make([]string, len(c.URIs))
			for i, u := range c.URIs {
				out[i] = u.String()
			}
			return out
		}),
		"dnsSansPeerCertificate": h.peerSANs(func(c *x509.Certificate) []string { return c.DNSNames }),
	})
}

// filterContextMethod is the handle's filterContext(): the route's
// LuaPerRoute.filter_context, else the filter's, as a table (empty when
// neither is set).
func (h *handle) filterContextMethod(L *glua.LState) int {
	h.check(L)
	fc := h.c.filterContext
	if rc, ok := h.s.RouteConfig(h.c.name).(*routeConfig); ok && rc.filterContext != nil {
		fc = rc.filterContext
	}
	L.Push(structToLua(L, fc))
	return 1
}

// peerSANs is a method that returns a list of names of the peer's
// certificate (empty without one).
func (h *handle) peerSANs(names func(c *x509.Certificate) []string) glua.LGFunction {
	return func(L *glua.LState) int {
		h.check(L)
		t := L.NewTable()
		if c := h.s.Info().TLS.PeerCertificate; c != nil {
			for _, n := range names(c) {
				t.Append(glua.LString(n))
			}
		}
		L.Push(t)
		return 1
	}
}

// stringMethod is a method that returns the string get reads of the
// handle's stream.
func (h *handle) stringMethod(get func(h *handle) string) glua.LGFunction {
	return func(L *glua.LState) int {
		h.check(L)
		L.Push(glua.LString(get(h)))
		return 1
	}
}

// iterator is a Lua iterator function over n key/value pairs.
func iterator(L *glua.LState, n int, at func(i int) (glua.LValue, glua.LValue)) *glua.LFunction {
	i := 0
	return L.NewFunction(func(L *glua.LState) int {
		if i >= n {
			L.Push(glua.LNil)
			return 1
		}
		k, v := at(i)
		i++
		L.Push(k)
		L.Push(v)
		return 2
	})
}

// structToLua converts a Struct to a table.
func structToLua(L *glua.LState, st *structpb.Struct) glua.LValue {
	t := L.NewTable()
	for k, v := range st.GetFields() {
		t.RawSetString(k, valueToLua(L, v))
	}
	return t
}

// valueToLua converts a protobuf Value to Lua: lists become arrays from
// index 1, structs tables, null nil.
func valueToLua(L *glua.LState, v *structpb.Value) glua.LValue {
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		return glua.LString(k.StringValue)
	case *structpb.Value_NumberValue:
		return glua.LNumber(k.NumberValue)
	case *structpb.Value_BoolValue:
		return glua.LBool(k.BoolValue)
	case *structpb.Value_StructValue:
		return structToLua(L, k.StructValue)
	case *structpb.Value_ListValue:
		t := L.NewTable()
		for _, e := range k.ListValue.GetValues() {
			t.Append(valueToLua(L, e))
		}
		return t
	}
	return glua.LNil
}

// maxDepth bounds the nesting of a table converted to metadata (a table
// may contain itself).
const maxDepth = 32

// luaToValue converts a Lua value to a protobuf Value: a table with keys
// 1..n is a list, any other a struct of string keys.
func luaToValue(L *glua.LState, v glua.LValue, depth int) *structpb.Value {
	if depth > maxDepth {
		L.RaiseError("metadata value nested too deep")
	}
	switch x := v.(type) {
	case *glua.LNilType:
		return structpb.NewNullValue()
	case glua.LBool:
		return structpb.NewBoolValue(bool(x))
	case glua.LNumber:
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			L.RaiseError("metadata value must be a finite number")
		}
		return structpb.NewNumberValue(f)
	case glua.LString:
		return structpb.NewStringValue(string(x))
	case *glua.LTable:
		if n := x.MaxN(); n > 0 {
			list := &structpb.ListValue{}
			for i := 1; i <= n; i++ {
				list.Values = append(list.Values, luaToValue(L, x.RawGetInt(i), depth+1))
			}
			return structpb.NewListValue(list)
		}
		st := &structpb.Struct{Fields: map[string]*structpb.Value{}}
		x.ForEach(func(k, e glua.LValue) {
			ks, ok := k.(glua.LString)
			if !ok {
				L.RaiseError("metadata table keys must be strings")
			}
			st.Fields[string(ks)] = luaToValue(L, e, depth+1)
		})
		return structpb.NewStructValue(st)
	}
	L.RaiseError("metadata value of type %s is not supported", v.Type().String())
	return nil
}
