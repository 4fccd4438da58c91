package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// bookstoreProto is the test service's file: a bookstore with HTTP
// rules of every shape (path variables, a body field, body "*", a server
// stream, an HttpBody response, additional bindings).
func bookstoreProto() *descriptorpb.FileDescriptorProto {
	s := proto.String
	field := func(name string, n int32, t descriptorpb.FieldDescriptorProto_Type, typeName string, repeated bool) *descriptorpb.FieldDescriptorProto {
		label := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL
		if repeated {
			label = descriptorpb.FieldDescriptorProto_LABEL_REPEATED
		}
		f := &descriptorpb.FieldDescriptorProto{Name: s(name), Number: proto.Int32(n), Type: t.Enum(), Label: label.Enum()}
		if typeName != "" {
			f.TypeName = s(typeName)
		}
		return f
	}
	const (
		tInt64  = descriptorpb.FieldDescriptorProto_TYPE_INT64
		tInt32  = descriptorpb.FieldDescriptorProto_TYPE_INT32
		tString = descriptorpb.FieldDescriptorProto_TYPE_STRING
		tEnum   = descriptorpb.FieldDescriptorProto_TYPE_ENUM
		tMsg    = descriptorpb.FieldDescriptorProto_TYPE_MESSAGE
	)
	msg := func(name string, fields ...*descriptorpb.FieldDescriptorProto) *descriptorpb.DescriptorProto {
		return &descriptorpb.DescriptorProto{Name: s(name), Field: fields}
	}
	rpc := func(name, in, out string, stream bool, rule *annotations.HttpRule) *descriptorpb.MethodDescriptorProto {
		opts := &descriptorpb.MethodOptions{}
		proto.SetExtension(opts, annotations.E_Http, rule)
		m := &descriptorpb.MethodDescriptorProto{Name: s(name), InputType: s(in), OutputType: s(out), Options: opts}
		if stream {
			m.ServerStreaming = proto.Bool(true)
		}
		return m
	}
	shelfFields := []*descriptorpb.FieldDescriptorProto{
		field("id", 1, tInt64, "", false),
		field("theme", 2, tString, "", false),
		field("genre", 3, tEnum, ".bookstore.Genre", false),
		field("tags", 4, tString, "", true),
		field("shelf_name", 5, tString, "", false),
	}
	return &descriptorpb.FileDescriptorProto{
		Name:       s("bookstore.proto"),
		Package:    s("bookstore"),
		Syntax:     s("proto3"),
		Dependency: []string{"google/api/httpbody.proto"},
		EnumType: []*descriptorpb.EnumDescriptorProto{{Name: s("Genre"), Value: []*descriptorpb.EnumValueDescriptorProto{
			{Name: s("GENRE_UNSPECIFIED"), Number: proto.Int32(0)},
			{Name: s("FICTION"), Number: proto.Int32(1)},
			{Name: s("SCIENCE"), Number: proto.Int32(2)},
		}}},
		MessageType: []*descriptorpb.DescriptorProto{
			msg("Shelf", shelfFields...),
			msg("GetShelfRequest", field("shelf", 1, tInt64, "", false), field("view", 2, tString, "", false),
				field("genre", 3, tEnum, ".bookstore.Genre", false), field("tags", 4, tString, "", true)),
			msg("CreateShelfRequest", field("shelf", 1, tMsg, ".bookstore.Shelf", false), field("user", 2, tString, "", false)),
			msg("ListBooksRequest", field("shelf", 1, tInt64, "", false), field("count", 2, tInt32, "", false)),
			msg("Book", field("title", 1, tString, "", false), field("n", 2, tInt32, "", false)),
		},
		Service: []*descriptorpb.ServiceDescriptorProto{{
			Name: s("Bookstore"),
			Method: []*descriptorpb.MethodDescriptorProto{
				rpc("GetShelf", ".bookstore.GetShelfRequest", ".bookstore.Shelf", false, &annotations.HttpRule{
					Pattern: &annotations.HttpRule_Get{Get: "/v1/shelves/{shelf}"},
					AdditionalBindings: []*annotations.HttpRule{
						{Pattern: &annotations.HttpRule_Get{Get: "/v2/shelves/{shelf}"}},
					},
				}),
				rpc("CreateShelf", ".bookstore.CreateShelfRequest", ".bookstore.Shelf", false, &annotations.HttpRule{
					Pattern: &annotations.HttpRule_Post{Post: "/v1/shelves"}, Body: "shelf",
				}),
				rpc("UpdateShelf", ".bookstore.Shelf", ".bookstore.Shelf", false, &annotations.HttpRule{
					Pattern: &annotations.HttpRule_Put{Put: "/v1/shelves/{id}"}, Body: "*",
				}),
				rpc("DeleteShelf", ".bookstore.GetShelfRequest", ".bookstore.Shelf", false, &annotations.HttpRule{
					Pattern: &annotations.HttpRule_Delete{Delete: "/v1/shelves/{shelf}"},
				}),
				rpc("ListBooks", ".bookstore.ListBooksRequest", ".bookstore.Book", true, &annotations.HttpRule{
					Pattern: &annotations.HttpRule_Get{Get: "/v1/shelves/{shelf}/books"},
				}),
				rpc("Download", ".bookstore.GetShelfRequest", ".google.api.HttpBody", false, &annotations.HttpRule{
					Pattern: &annotations.HttpRule_Get{Get: "/v1/shelves/{shelf}:download"},
				}),
			},
		}},
	}
}

// writeBookstoreDescriptor writes the descriptor set (the bookstore and
// google/api/httpbody.proto, not its own imports: the filter finds those
// itself) into dir and returns its path.
func writeBookstoreDescriptor(dir string) string {
	GinkgoHelper()
	set := &descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{
		protodesc.ToFileDescriptorProto(httpbody.File_google_api_httpbody_proto),
		bookstoreProto(),
	}}
	b, err := proto.Marshal(set)
	Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(dir, "bookstore.pb")
	Expect(os.WriteFile(path, b, 0o600)).To(Succeed())
	return path
}

// startBookstore serves the bookstore with grpc-go over h2c, its
// messages dynamic. GetShelf and UpdateShelf echo what they were given;
// CreateShelf gives the shelf id 100 and the user's name after its
// theme; DeleteShelf fails NOT_FOUND; ListBooks streams count books;
// Download answers a CSV HttpBody.
func startBookstore() string {
	GinkgoHelper()
	fd, err := protodesc.NewFile(bookstoreProto(), protoregistry.GlobalFiles)
	Expect(err).NotTo(HaveOccurred())
	msgs := fd.Messages()
	md := func(name string) protoreflect.MessageDescriptor { return msgs.ByName(protoreflect.Name(name)) }
	get := func(m protoreflect.Message, name string) protoreflect.Value {
		return m.Get(m.Descriptor().Fields().ByName(protoreflect.Name(name)))
	}
	set := func(m protoreflect.Message, name string, v protoreflect.Value) {
		m.Set(m.Descriptor().Fields().ByName(protoreflect.Name(name)), v)
	}
	unary := func(name, in string, fn func(req protoreflect.Message) (proto.Message, error)) grpc.MethodDesc {
		return grpc.MethodDesc{MethodName: name, Handler: func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			req := dynamicpb.NewMessage(md(in))
			if err := dec(req); err != nil {
				return nil, err
			}
			return fn(req)
		}}
	}
	shelfFrom := func(req protoreflect.Message) *dynamicpb.Message {
		out := dynamicpb.NewMessage(md("Shelf")).ProtoReflect()
		set(out, "id", get(req, "shelf"))
		set(out, "theme", get(req, "view"))
		set(out, "genre", get(req, "genre"))
		tags := out.Mutable(out.Descriptor().Fields().ByName("tags")).List()
		in := get(req, "tags").List()
		for i := range in.Len() {
			tags.Append(in.Get(i))
		}
		return out.Interface().(*dynamicpb.Message)
	}
	desc := grpc.ServiceDesc{
		ServiceName: "bookstore.Bookstore",
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{
			unary("GetShelf", "GetShelfRequest", func(req protoreflect.Message) (proto.Message, error) {
				return shelfFrom(req), nil
			}),
			unary("CreateShelf", "CreateShelfRequest", func(req protoreflect.Message) (proto.Message, error) {
				shelf := proto.Clone(get(req, "shelf").Message().Interface()).ProtoReflect()
				if !shelf.IsValid() {
					shelf = dynamicpb.NewMessage(md("Shelf"))
				}
				set(shelf, "id", protoreflect.ValueOfInt64(100))
				set(shelf, "theme", protoreflect.ValueOfString(get(shelf, "theme").String()+"/"+get(req, "user").String()))
				return shelf.Interface(), nil
			}),
			unary("UpdateShelf", "Shelf", func(req protoreflect.Message) (proto.Message, error) {
				return req.Interface(), nil
			}),
			unary("DeleteShelf", "GetShelfRequest", func(req protoreflect.Message) (proto.Message, error) {
				return nil, status.Errorf(codes.NotFound, "shelf %d is gone", get(req, "shelf").Int())
			}),
			unary("Download", "GetShelfRequest", func(req protoreflect.Message) (proto.Message, error) {
				return &httpbody.HttpBody{ContentType: "text/csv", Data: fmt.Appendf(nil, "id,%d\n", get(req, "shelf").Int())}, nil
			}),
		},
		Streams: []grpc.StreamDesc{{StreamName: "ListBooks", ServerStreams: true, Handler: func(_ any, stream grpc.ServerStream) error {
			req := dynamicpb.NewMessage(md("ListBooksRequest"))
			if err := stream.RecvMsg(req); err != nil {
				return err
			}
			r := req.ProtoReflect()
			for i := range get(r, "count").Int() {
				book := dynamicpb.NewMessage(md("Book")).ProtoReflect()
				set(book, "title", protoreflect.ValueOfString(fmt.Sprintf("book-%d-%d", get(r, "shelf").Int(), i)))
				set(book, "n", protoreflect.ValueOfInt32(int32(i)))
				if err := stream.SendMsg(book.Interface()); err != nil {
					return err
				}
			}
			return nil
		}}},
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	srv := grpc.NewServer()
	srv.RegisterService(&desc, struct{}{})
	go func() { _ = srv.Serve(lis) }()
	DeferCleanup(srv.Stop)
	return lis.Addr().String()
}

// transcoderFilter is the transcoder's http_filters entry with the
// fields (YAML flow mapping content) after the descriptor and service.
func transcoderFilter(descriptor, fields string) string {
	return httpFilter("envoy.filters.http.grpc_json_transcoder", transcoderType, transcoderFields(descriptor, fields))
}

const transcoderType = "type.googleapis.com/envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder"

// transcoderFields is a GrpcJsonTranscoder's fields for the bookstore.
func transcoderFields(descriptor, fields string) string {
	f := "{proto_descriptor: " + descriptor + ", services: [bookstore.Bookstore]"
	if fields != "" {
		f += ", " + fields
	}
	return f + "}"
}

// jsonOf decodes a JSON response body.
func jsonOf(body string) any {
	GinkgoHelper()
	var v any
	Expect(json.Unmarshal([]byte(body), &v)).To(Succeed(), "not JSON: %q", body)
	return v
}

var _ = Describe("The gRPC-JSON transcoder filter", func() {
	var port, strict int

	BeforeEach(func() {
		dir := newDir()
		descriptor := writeBookstoreDescriptor(dir)
		grpcUp := startBookstore()
		web := echoUpstream()
		port, strict = freePort(), freePort()
		clusters := []proxyCluster{{Name: "grpc", Port: portNum(grpcUp), Extra: h2cOptions()}, {Name: "web", Port: portNum(web)}}
		perRoute := withType(transcoderType, transcoderFields(descriptor, "print_options: {always_print_enums_as_ints: true}"))
		Start(dir, proxySpec{
			Port:    port,
			Filters: "[" + transcoderFilter(descriptor, "") + "]",
			Routes: `[{match: {prefix: /plain/}, route: {cluster: web}},
				{match: {prefix: /v2/}, route: {cluster: grpc}, typed_per_filter_config: {envoy.filters.http.grpc_json_transcoder: ` + perRoute + `}},
				{match: {prefix: /}, route: {cluster: grpc}}]`,
			Clusters: clusters,
			More: []proxySpec{{
				Port:     strict,
				Listener: "{name: strict}",
				Filters: "[" + transcoderFilter(descriptor, `convert_grpc_status: true, max_request_body_size: 64, match_incoming_request_route: true,
					print_options: {add_whitespace: true, preserve_proto_field_names: true, always_print_primitive_fields: true, stream_newline_delimited: true},
					request_validation_options: {reject_unknown_method: true, reject_unknown_query_parameters: true}`) + "]",
				// No route matches the gRPC path: the route the incoming
				// path matched is kept (match_incoming_request_route).
				Routes: `[{match: {prefix: /plain/}, route: {cluster: web}}, {match: {prefix: /v1/}, route: {cluster: grpc}}]`,
			}},
		}.YAML())
	})

	for name, c := range rawClients() {
		It("transcodes a unary GET with path variables and query parameters, over "+name, func() {
			r := httpDo(c, http.MethodGet, listenerURL(port, "/v1/shelves/7?view=wide&genre=FICTION&tags=a&tags=b%20c"), nil, nil)
			Expect(r.Status).To(Equal(http.StatusOK), r.Body)
			Expect(r.Header.Get("Content-Type")).To(Equal("application/json"))
			Expect(r.Header.Get("Grpc-Status")).To(Equal("0"))
			Expect(jsonOf(r.Body)).To(Equal(map[string]any{"id": "7", "theme": "wide", "genre": "FICTION", "tags": []any{"a", "b c"}}))
			Expect(r.Body).To(Equal(`{"id":"7","theme":"wide","genre":"FICTION","tags":["a","b c"]}`), "compact, in field order, without add_whitespace")
		})

		It("transcodes a POST whose body is a field, and a PUT whose body is the message, over "+name, func() {
			r := httpDo(c, http.MethodPost, listenerURL(port, "/v1/shelves?user=ann"), strings.NewReader(`{"theme": "poetry", "genre": "SCIENCE", "shelfName": "top"}`),
				http.Header{"Content-Type": {"application/json"}})
			Expect(r.Status).To(Equal(http.StatusOK), r.Body)
			Expect(jsonOf(r.Body)).To(Equal(map[string]any{"id": "100", "theme": "poetry/ann", "genre": "SCIENCE", "shelfName": "top"}))

			r = httpDo(c, http.MethodPut, listenerURL(port, "/v1/shelves/9"), strings.NewReader(`{"theme": "x", "tags": ["t"]}`), nil)
			Expect(r.Status).To(Equal(http.StatusOK), r.Body)
			Expect(jsonOf(r.Body)).To(Equal(map[string]any{"id": "9", "theme": "x", "tags": []any{"t"}}))
		})
	}

	It("answers a body that is not the message's JSON with 400, and passes gRPC calls and requests no rule matches", func() {
		c := rawClients()["HTTP/1.1"]
		for _, body := range []string{`{"theme": `, `{"bogus": 1}`, `{"genre": "NOVEL"}`, `[1]`} {
			r := httpDo(c, http.MethodPost, listenerURL(port, "/v1/shelves"), strings.NewReader(body), nil)
			Expect(r.Status).To(Equal(http.StatusBadRequest), "body %s: %s", body, r.Body)
		}
		r := httpDo(c, http.MethodGet, listenerURL(port, "/plain/x?y=1"), nil, nil)
		Expect(r.Status).To(Equal(http.StatusOK))
		Expect(r.Body).To(HavePrefix("path=/plain/x?y=1\n"), "untouched, to the route it matches")

		// A gRPC call passes untouched.
		conn, err := grpc.NewClient(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), grpc.WithTransportCredentials(insecure.NewCredentials()))
		Expect(err).NotTo(HaveOccurred())
		defer conn.Close()
		fd, err := protodesc.NewFile(bookstoreProto(), protoregistry.GlobalFiles)
		Expect(err).NotTo(HaveOccurred())
		req := dynamicpb.NewMessage(fd.Messages().ByName("GetShelfRequest"))
		req.Set(req.Descriptor().Fields().ByName("shelf"), protoreflect.ValueOfInt64(11))
		resp := dynamicpb.NewMessage(fd.Messages().ByName("Shelf"))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		Expect(conn.Invoke(ctx, "/bookstore.Bookstore/GetShelf", req, resp)).To(Succeed())
		Expect(resp.Get(resp.Descriptor().Fields().ByName("id")).Int()).To(Equal(int64(11)))

		// A query parameter the message lacks: the request is not
		// transcoded (Envoy passes it), and the gRPC server refuses
		// the plain GET.
		r = httpDo(c, http.MethodGet, listenerURL(port, "/v1/shelves/7?nope=1"), nil, nil)
		Expect(r.Status).NotTo(Equal(http.StatusOK))
		Expect(r.Header.Get("Content-Type")).NotTo(Equal("application/json"))
	})

	It("streams a server-streaming method's messages as a JSON array", func() {
		for name, c := range rawClients() {
			r := httpDo(c, http.MethodGet, listenerURL(port, "/v1/shelves/3/books?count=3"), nil, nil)
			Expect(r.Status).To(Equal(http.StatusOK), name)
			Expect(r.Header.Get("Content-Type")).To(Equal("application/json"))
			Expect(jsonOf(r.Body)).To(Equal([]any{
				map[string]any{"title": "book-3-0"},
				map[string]any{"title": "book-3-1", "n": float64(1)},
				map[string]any{"title": "book-3-2", "n": float64(2)},
			}), name)

			r = httpDo(c, http.MethodGet, listenerURL(port, "/v1/shelves/3/books"), nil, nil)
			Expect(r.Status).To(Equal(http.StatusOK), name)
			Expect(r.Body).To(Equal("[]"), name)
		}
	})

	It("maps a gRPC error to its HTTP status with grpc-status and grpc-message", func() {
		r := httpDo(rawClients()["HTTP/2"], http.MethodDelete, listenerURL(port, "/v1/shelves/7"), nil, nil)
		Expect(r.Status).To(Equal(http.StatusNotFound))
		Expect(r.Header.Get("Grpc-Status")).To(Equal("5"))
		Expect(r.Header.Get("Grpc-Message")).To(Equal("shelf 7 is gone"))
		Expect(r.Body).To(BeEmpty())
	})

	It("answers an HttpBody response with its content type and data", func() {
		r := httpDo(rawClients()["HTTP/1.1"], http.MethodGet, listenerURL(port, "/v1/shelves/5:download"), nil, nil)
		Expect(r.Status).To(Equal(http.StatusOK))
		Expect(r.Header.Get("Content-Type")).To(Equal("text/csv"))
		Expect(r.Body).To(Equal("id,5\n"))
	})

	It("takes a route's own configuration, matched on the incoming path", func() {
		r := httpDo(rawClients()["HTTP/1.1"], http.MethodGet, listenerURL(port, "/v2/shelves/4?genre=SCIENCE"), nil, nil)
		Expect(r.Status).To(Equal(http.StatusOK), r.Body)
		Expect(jsonOf(r.Body)).To(Equal(map[string]any{"id": "4", "genre": float64(2)}), "always_print_enums_as_ints on the route")
	})

	It("keeps the incoming route, converts the status to JSON, rejects unknown methods, parameters and big bodies, and prints as configured", func() {
		c := rawClients()["HTTP/1.1"]
		r := httpDo(c, http.MethodDelete, listenerURL(strict, "/v1/shelves/7"), nil, nil)
		Expect(r.Status).To(Equal(http.StatusNotFound))
		Expect(r.Header.Get("Content-Type")).To(Equal("application/json"))
		Expect(r.Header.Get("Grpc-Status")).To(BeEmpty(), "the status is in the body")
		Expect(jsonOf(r.Body)).To(Equal(map[string]any{"code": float64(5), "message": "shelf 7 is gone", "details": []any{}}))

		r = httpDo(c, http.MethodGet, listenerURL(strict, "/plain/x"), nil, nil)
		Expect(r.Status).To(Equal(http.StatusNotFound))
		Expect(r.Body).To(Equal("Could not resolve /plain/x to a method."))

		r = httpDo(c, http.MethodGet, listenerURL(strict, "/v1/shelves/7?nope=1"), nil, nil)
		Expect(r.Status).To(Equal(http.StatusBadRequest))

		r = httpDo(c, http.MethodPost, listenerURL(strict, "/v1/shelves"), strings.NewReader(`{"theme": "`+strings.Repeat("x", 100)+`"}`), nil)
		Expect(r.Status).To(Equal(http.StatusRequestEntityTooLarge))

		r = httpDo(c, http.MethodGet, listenerURL(strict, "/v1/shelves/0"), nil, nil)
		Expect(r.Status).To(Equal(http.StatusOK))
		Expect(r.Body).To(ContainSubstring("\n  \"id\": \"0\""), "add_whitespace")
		Expect(jsonOf(r.Body)).To(Equal(map[string]any{"id": "0", "theme": "", "genre": "GENRE_UNSPECIFIED", "tags": []any{}, "shelf_name": ""}))

		resp, err := c.Get(listenerURL(strict, "/v1/shelves/1/books?count=2"))
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		var lines []any
		scanner := bufio.NewScanner(io.LimitReader(resp.Body, 1<<16))
		var cur strings.Builder
		for scanner.Scan() {
			// add_whitespace spreads each message over lines: a
			// message ends with a line that is "}".
			cur.WriteString(scanner.Text())
			if scanner.Text() == "}" {
				lines = append(lines, jsonOf(cur.String()))
				cur.Reset()
			}
		}
		Expect(lines).To(Equal([]any{
			map[string]any{"title": "book-1-0", "n": float64(0)},
			map[string]any{"title": "book-1-1", "n": float64(1)},
		}), "newline-delimited")
	})
})
