package runtime

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// maxDiskDepth bounds the directory walk of a disk layer, as Envoy does, so a
// symlink loop cannot make loading run forever.
const maxDiskDepth = 16

// flattenStruct turns a static layer into dotted keys: {a: {b: 1}} gives
// "a.b" = "1"; an object with a numerator or a denominator, or none of
// any field, is a FractionalPercent value (see fraction_value.go). Lists
// and nulls have no runtime meaning and are refused.
func flattenStruct(s *structpb.Struct) (map[string]string, error) {
	out := map[string]string{}
	var walk func(prefix string, s *structpb.Struct) error
	walk = func(prefix string, s *structpb.Struct) error {
		for k, v := range s.GetFields() {
			key := k
			if prefix != "" {
				key = prefix + "." + k
			}
			switch kind := v.GetKind().(type) {
			case *structpb.Value_StructValue:
				if isFractionStruct(kind.StructValue) {
					out[key] = fractionText(kind.StructValue)
					continue
				}
				if err := walk(key, kind.StructValue); err != nil {
					return err
				}
			case *structpb.Value_StringValue:
				out[key] = kind.StringValue
			case *structpb.Value_BoolValue:
				out[key] = strconv.FormatBool(kind.BoolValue)
			case *structpb.Value_NumberValue:
				out[key] = strconv.FormatFloat(kind.NumberValue, 'f', -1, 64)
			default:
				return fmt.Errorf("%s: a runtime value must be a string, number, boolean or object", key)
			}
		}
		return nil
	}
	if err := walk("", s); err != nil {
		return nil, err
	}
	return out, nil
}

// loadDiskLayer reads every file below the layer's directory: the path
// relative to it, with "/" turned into ".", is the key, and the file's text
// (trailing white space removed) the value. A missing directory is an empty
// layer, as in Envoy, so a runtime directory can appear later.
func loadDiskLayer(d *bootstrapv3.RuntimeLayer_DiskLayer, serviceCluster string) (map[string]string, error) {
	root := d.GetSymlinkRoot()
	if root == "" {
		return nil, errors.New("symlink_root: must be set")
	}
	dir := filepath.Join(root, d.GetSubdirectory())
	if d.GetAppendServiceCluster() {
		if serviceCluster == "" {
			return nil, errors.New("append_service_cluster needs --service-cluster or node.cluster")
		}
		dir = filepath.Join(dir, serviceCluster)
	}
	out := map[string]string{}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	err := walkDisk(dir, "", 0, out)
	return out, err
}

func walkDisk(dir, prefix string, depth int, out map[string]string) error {
	if depth > maxDiskDepth {
		return fmt.Errorf("%s: walk depth exceeds %d", dir, maxDiskDepth)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("reading runtime directory: %w", err)
	}
	for _, e := range entries {
		full := filepath.Join(dir, e.Name())
		key := e.Name()
		if prefix != "" {
			key = prefix + "." + e.Name()
		}
		// Stat follows symlinks: runtime trees are usually swapped atomically
		// through a symlink, which is what symlink_root refers to.
		info, err := os.Stat(full)
		if err != nil {
			return fmt.Errorf("reading runtime entry: %w", err)
		}
		if info.IsDir() {
			if err := walkDisk(full, key, depth+1, out); err != nil {
				return err
			}
			continue
		}
		data, err := os.ReadFile(full)
		if err != nil {
			return fmt.Errorf("reading runtime entry: %w", err)
		}
		text := strings.TrimRight(string(data), " \t\r\n")
		// A file starting with # is a placeholder comment, not a value.
		if strings.HasPrefix(text, "#") {
			continue
		}
		out[key] = text
	}
	return nil
}
