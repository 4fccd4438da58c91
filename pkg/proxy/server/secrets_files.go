package server

import (
	"crypto/sha256"
	"os"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// filesDigest digests the contents of every file the secret's data
// sources name (certificate chains, keys, passwords, CAs, CRLs, ticket
// keys), as Envoy's SdsApi hashes them: a secret read from an SDS file is
// compiled again when the files it names change, even if the SDS file
// does not, and a watched directory (secretWatch) compiles again only
// when they did. A file that cannot be read digests as its error, so that
// it is retried (and rejected by the compile) rather than skipped.
func filesDigest(sec proto.Message) [sha256.Size]byte {
	h := sha256.New()
	for _, name := range secretFiles(sec) {
		b, err := os.ReadFile(name)
		if err != nil {
			b = []byte("error: " + err.Error())
		}
		h.Write([]byte(name))
		h.Write([]byte{0})
		sum := sha256.Sum256(b)
		h.Write(sum[:])
	}
	var out [sha256.Size]byte
	copy(out[:], h.Sum(nil))
	return out
}

// secretFiles lists the file names of the secret's data sources, in
// field order.
func secretFiles(sec proto.Message) []string {
	var (
		out  []string
		walk func(m protoreflect.Message)
	)
	walk = func(m protoreflect.Message) {
		if ds, ok := m.Interface().(*corev3.DataSource); ok {
			if name := ds.GetFilename(); name != "" {
				out = append(out, name)
			}
			return
		}
		m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			switch {
			case fd.Message() == nil:
			case fd.IsList():
				for i := range v.List().Len() {
					walk(v.List().Get(i).Message())
				}
			case fd.IsMap():
				if fd.MapValue().Message() != nil {
					v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
						walk(mv.Message())
						return true
					})
				}
			default:
				walk(v.Message())
			}
			return true
		})
	}
	walk(sec.ProtoReflect())
	return out
}
