package e2e

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"

	"github.com/klauspost/compress/zstd"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// zstdDictionary trains a zstd dictionary with id on JSON records like
// the ones the spec sends, as "zstd --train" would.
func zstdDictionary(id uint32) []byte {
	GinkgoHelper()
	var samples [][]byte
	for i := range 40 {
		samples = append(samples, zstdRecord(i))
	}
	d, err := zstd.BuildDict(zstd.BuildDictOptions{ID: id, Contents: samples, History: bytes.Join(samples[:10], nil), Offsets: [3]int{1, 4, 8}})
	Expect(err).NotTo(HaveOccurred())
	return d
}

func zstdRecord(i int) []byte {
	return fmt.Appendf(nil, `{"user": "user-%d", "status": "active", "roles": ["reader", "writer"], "region": "eu-west-%d"}`, i, i%3)
}

var _ = Describe("zstd dictionaries", func() {
	It("compress responses with the compressor's dictionary and decompress requests with the decompressor's, by the frame's id", func() {
		dir := newDir()
		dict, other := zstdDictionary(5150), zstdDictionary(6160)
		dictPath, otherPath := filepath.Join(dir, "records.dict"), filepath.Join(dir, "other.dict")
		Expect(os.WriteFile(dictPath, dict, 0o600)).To(Succeed())
		Expect(os.WriteFile(otherPath, other, 0o600)).To(Succeed())
		var body []byte
		for i := range 30 {
			body = append(body, zstdRecord(1000+i)...)
		}
		received := make(chan []byte, 4)
		up := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				b, _ := io.ReadAll(r.Body)
				received <- b
				return
			}
			w.Header().Set("content-type", "application/json")
			_, _ = w.Write(body)
		}), false)
		port := freePort()
		s := Start(dir, proxySpec{
			Port: port,
			HCM:  "{stat_prefix: zd}",
			Filters: "[" + httpFilter("envoy.filters.http.compressor", "type.googleapis.com/envoy.extensions.filters.http.compressor.v3.Compressor",
				`{response_direction_config: {common_config: {min_content_length: 100, content_type: [application/json]}},
				compressor_library: {name: records, typed_config: `+withType("type.googleapis.com/envoy.extensions.compression.zstd.compressor.v3.Zstd",
					`{dictionary: {filename: "`+dictPath+`"}}`)+`}}`) + ", " +
				httpFilter("envoy.filters.http.decompressor", "type.googleapis.com/envoy.extensions.filters.http.decompressor.v3.Decompressor",
					`{response_direction_config: {common_config: {enabled: {default_value: false, runtime_key: zd_off}}},
					decompressor_library: {name: upload, typed_config: `+withType("type.googleapis.com/envoy.extensions.compression.zstd.decompressor.v3.Zstd",
						`{dictionaries: [{filename: "`+otherPath+`"}, {inline_bytes: "`+base64.StdEncoding.EncodeToString(dict)+`"}]}`)+`}}`) + "]",
			Clusters: []proxyCluster{{Name: "up", Port: portNum(up)}},
		}.YAML())

		By("a response, which a client with the dictionary reads")
		r := httpDo(http.DefaultClient, http.MethodGet, listenerURL(port, "/records"), nil, http.Header{"Accept-Encoding": {"zstd"}})
		Expect(r.Status).To(Equal(http.StatusOK))
		Expect(r.Header.Get("content-encoding")).To(Equal("zstd"))
		var h zstd.Header
		Expect(h.Decode([]byte(r.Body))).To(Succeed())
		Expect(h.DictionaryID).To(Equal(uint32(5150)))
		withDict, err := zstd.NewReader(nil, zstd.WithDecoderDicts(dict))
		Expect(err).NotTo(HaveOccurred())
		defer withDict.Close()
		out, err := withDict.DecodeAll([]byte(r.Body), nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(Equal(body))
		plain, err := zstd.NewReader(nil)
		Expect(err).NotTo(HaveOccurred())
		defer plain.Close()
		_, err = plain.DecodeAll([]byte(r.Body), nil)
		Expect(err).To(HaveOccurred(), "the body decoded without the dictionary")

		By("a request compressed with one of the decompressor's dictionaries, and one with none")
		for _, d := range [][]byte{dict, other, nil} {
			opts := []zstd.EOption{}
			if d != nil {
				opts = append(opts, zstd.WithEncoderDict(d))
			}
			enc, err := zstd.NewWriter(nil, opts...)
			Expect(err).NotTo(HaveOccurred())
			z := enc.EncodeAll(body, nil)
			r = httpDo(http.DefaultClient, http.MethodPost, listenerURL(port, "/upload"), bytes.NewReader(z), http.Header{"Content-Encoding": {"zstd"}})
			Expect(r.Status).To(Equal(http.StatusOK))
			Expect(received).To(Receive(Equal(body)))
		}
		Expect(httpStat(s, "http.zd.decompressor.upload.zstd.decompressor_library.zstd_dictionary_error")).To(Equal("0"))

		By("a request whose dictionary the decompressor lacks: counted")
		third := zstdDictionary(7170)
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderDict(third))
		Expect(err).NotTo(HaveOccurred())
		req, err := http.NewRequest(http.MethodPost, listenerURL(port, "/upload"), bytes.NewReader(enc.EncodeAll(body, nil)))
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Content-Encoding", "zstd")
		// The body breaks off upstream: the exchange may fail.
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
		Eventually(func() string {
			return httpStat(s, "http.zd.decompressor.upload.zstd.decompressor_library.zstd_dictionary_error")
		}).Should(Equal("1"))
		Consistently(received, "200ms").ShouldNot(Receive(Equal(body)))
	})

	It("refuses a dictionary that is not in zstd's format, with its path", func() {
		dir := newDir()
		raw := filepath.Join(dir, "raw.dict")
		Expect(os.WriteFile(raw, []byte("some raw content that is not a trained dictionary"), 0o600)).To(Succeed())
		res, _ := validate("z.yaml", proxySpec{
			Port: freePort(),
			Filters: "[" + httpFilter("envoy.filters.http.decompressor", "type.googleapis.com/envoy.extensions.filters.http.decompressor.v3.Decompressor",
				`{decompressor_library: {name: upload, typed_config: `+withType("type.googleapis.com/envoy.extensions.compression.zstd.decompressor.v3.Zstd",
					`{dictionaries: [{filename: "`+raw+`"}]}`)+`}}`) + "]",
			Clusters: []proxyCluster{{Name: "up", Port: freePort()}},
		}.YAML())
		Expect(res.ExitCode).To(Equal(1))
		Expect(res.Stderr).To(ContainSubstring("dictionaries[0]: not a zstd dictionary"))
	})
})
