package zstd

import (
	"errors"
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	kzstd "github.com/klauspost/compress/zstd"

	"github.com/outrigger-dev/outrigger/pkg/proxy/datasource"
)

// Dictionaries are zstd-format dictionaries ("zstd --train"), read when
// the configuration loads: the compressor's dictionary primes every frame
// and its id goes in the frame header; the decompressor picks, by the
// frame's id, one of its dictionaries. Envoy asserts (and stops) on a
// dictionary whose id is 0 or that is not in zstd's format; here it is a
// configuration error.

// readDictionary reads ds and checks it is a zstd dictionary with an id;
// errors name the field below the DataSource's.
func readDictionary(ds *corev3.DataSource) ([]byte, uint32, error) {
	b, err := datasource.Read(ds)
	if err != nil {
		return nil, 0, err
	}
	if len(b) == 0 {
		return nil, 0, errors.New("the dictionary is empty")
	}
	// The library refuses an id of 0 as Envoy does.
	d, err := kzstd.InspectDictionary(b)
	if err != nil {
		return nil, 0, fmt.Errorf("not a zstd dictionary: %w", err)
	}
	return b, d.ID(), nil
}
