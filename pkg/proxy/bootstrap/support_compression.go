package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedCompression lists the fields of the compressor and
// decompressor filters and of the compression libraries that Outrigger
// implements (see supportedCore). The libraries refuse, in their Compile,
// the values of zlib, brotli and zstd tuning fields that Go's encoders
// have no equivalent for; the strategies are refused here.
var supportedCompression = map[protoreflect.FullName]fieldSupport{
	// envoy.filters.http.compressor. The deprecated top-level fields are
	// read as Envoy reads them without response_direction_config.
	"envoy.extensions.filters.http.compressor.v3.Compressor.content_length":                                        {},
	"envoy.extensions.filters.http.compressor.v3.Compressor.content_type":                                          {},
	"envoy.extensions.filters.http.compressor.v3.Compressor.disable_on_etag_header":                                {},
	"envoy.extensions.filters.http.compressor.v3.Compressor.remove_accept_encoding_header":                         {},
	"envoy.extensions.filters.http.compressor.v3.Compressor.runtime_enabled":                                       {},
	"envoy.extensions.filters.http.compressor.v3.Compressor.compressor_library":                                    {},
	"envoy.extensions.filters.http.compressor.v3.Compressor.request_direction_config":                              {},
	"envoy.extensions.filters.http.compressor.v3.Compressor.response_direction_config":                             {},
	"envoy.extensions.filters.http.compressor.v3.Compressor.choose_first":                                          {},
	"envoy.extensions.filters.http.compressor.v3.Compressor.CommonDirectionConfig.enabled":                         {},
	"envoy.extensions.filters.http.compressor.v3.Compressor.CommonDirectionConfig.min_content_length":              {},
	"envoy.extensions.filters.http.compressor.v3.Compressor.CommonDirectionConfig.content_type":                    {},
	"envoy.extensions.filters.http.compressor.v3.Compressor.CommonDirectionConfig.content_type_matcher":            {},
	"envoy.extensions.filters.http.compressor.v3.Compressor.RequestDirectionConfig.common_config":                  {},
	"envoy.extensions.filters.http.compressor.v3.Compressor.ResponseDirectionConfig.common_config":                 {},
	"envoy.extensions.filters.http.compressor.v3.Compressor.ResponseDirectionConfig.disable_on_etag_header":        {},
	"envoy.extensions.filters.http.compressor.v3.Compressor.ResponseDirectionConfig.weaken_etag_on_compress":       {},
	"envoy.extensions.filters.http.compressor.v3.Compressor.ResponseDirectionConfig.remove_accept_encoding_header": {},
	"envoy.extensions.filters.http.compressor.v3.Compressor.ResponseDirectionConfig.uncompressible_response_codes": {},
	"envoy.extensions.filters.http.compressor.v3.Compressor.ResponseDirectionConfig.status_header_enabled":         {},
	"envoy.extensions.filters.http.compressor.v3.CompressorPerRoute.disabled":                                      {},
	"envoy.extensions.filters.http.compressor.v3.CompressorPerRoute.overrides":                                     {},
	"envoy.extensions.filters.http.compressor.v3.CompressorOverrides.response_direction_config":                    {},
	"envoy.extensions.filters.http.compressor.v3.CompressorOverrides.compressor_library":                           {},
	"envoy.extensions.filters.http.compressor.v3.ResponseDirectionOverrides.remove_accept_encoding_header":         {},
	"envoy.config.core.v3.RuntimeFeatureFlag.default_value":                                                        {},
	"envoy.config.core.v3.RuntimeFeatureFlag.runtime_key":                                                          {},

	// envoy.filters.http.decompressor.
	"envoy.extensions.filters.http.decompressor.v3.Decompressor.decompressor_library":                             {},
	"envoy.extensions.filters.http.decompressor.v3.Decompressor.request_direction_config":                         {},
	"envoy.extensions.filters.http.decompressor.v3.Decompressor.response_direction_config":                        {},
	"envoy.extensions.filters.http.decompressor.v3.Decompressor.CommonDirectionConfig.enabled":                    {},
	"envoy.extensions.filters.http.decompressor.v3.Decompressor.CommonDirectionConfig.ignore_no_transform_header": {},
	"envoy.extensions.filters.http.decompressor.v3.Decompressor.RequestDirectionConfig.common_config":             {},
	"envoy.extensions.filters.http.decompressor.v3.Decompressor.RequestDirectionConfig.advertise_accept_encoding": {},
	"envoy.extensions.filters.http.decompressor.v3.Decompressor.ResponseDirectionConfig.common_config":            {},
	// The decompressor libraries: gzip's window_bits other than 15 and
	// brotli's disable_ring_buffer_reallocation are refused by Compile;
	// zstd's dictionaries are zstd-format ones (compression/zstd).
	"envoy.extensions.compression.gzip.decompressor.v3.Gzip.window_bits":                          {},
	"envoy.extensions.compression.gzip.decompressor.v3.Gzip.chunk_size":                           {},
	"envoy.extensions.compression.gzip.decompressor.v3.Gzip.max_inflate_ratio":                    {},
	"envoy.extensions.compression.brotli.decompressor.v3.Brotli.disable_ring_buffer_reallocation": {},
	"envoy.extensions.compression.brotli.decompressor.v3.Brotli.chunk_size":                       {},
	"envoy.extensions.compression.zstd.decompressor.v3.Zstd.chunk_size":                           {},
	"envoy.extensions.compression.zstd.decompressor.v3.Zstd.dictionaries":                         {},

	// envoy.compression.gzip.compressor: every field, with zlib's
	// meaning (pkg/proxy/compression/deflate).
	"envoy.extensions.compression.gzip.compressor.v3.Gzip.memory_level":         {},
	"envoy.extensions.compression.gzip.compressor.v3.Gzip.compression_level":    {},
	"envoy.extensions.compression.gzip.compressor.v3.Gzip.compression_strategy": {},
	"envoy.extensions.compression.gzip.compressor.v3.Gzip.window_bits":          {},
	"envoy.extensions.compression.gzip.compressor.v3.Gzip.chunk_size":           {},
	// envoy.compression.brotli.compressor: input_block_bits other than 24
	// and disable_literal_context_modeling are refused by Compile.
	"envoy.extensions.compression.brotli.compressor.v3.Brotli.quality":                          {},
	"envoy.extensions.compression.brotli.compressor.v3.Brotli.encoder_mode":                     {values: []string{"DEFAULT"}},
	"envoy.extensions.compression.brotli.compressor.v3.Brotli.window_bits":                      {},
	"envoy.extensions.compression.brotli.compressor.v3.Brotli.input_block_bits":                 {},
	"envoy.extensions.compression.brotli.compressor.v3.Brotli.chunk_size":                       {},
	"envoy.extensions.compression.brotli.compressor.v3.Brotli.disable_literal_context_modeling": {},
	// envoy.compression.zstd.compressor: a zstd-format dictionary.
	"envoy.extensions.compression.zstd.compressor.v3.Zstd.dictionary":        {},
	"envoy.extensions.compression.zstd.compressor.v3.Zstd.compression_level": {},
	"envoy.extensions.compression.zstd.compressor.v3.Zstd.enable_checksum":   {},
	"envoy.extensions.compression.zstd.compressor.v3.Zstd.strategy":          {values: []string{"DEFAULT"}},
	"envoy.extensions.compression.zstd.compressor.v3.Zstd.chunk_size":        {},
}
