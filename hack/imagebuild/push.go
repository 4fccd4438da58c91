package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// push pushes each built layout's image index as <registry>/<name>:<tag>,
// with the credentials of the Docker config (~/.docker/config.json, as
// `docker login` or `crane auth login` write it).
func push(ctx context.Context, o options, bs []built, stdout, log io.Writer) error {
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}
	if o.insecure {
		// name.Insecure (in o.reference) falls back to plain HTTP.
		t := http.DefaultTransport.(*http.Transport).Clone()
		// Asked for with -insecure (INSECURE=1): a registry with a
		// self-signed certificate, like crane --insecure.
		t.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
		opts = append(opts, remote.WithTransport(t))
	}
	for _, b := range bs {
		c, _ := findComponent(b.name)
		ref, err := o.reference(c)
		if err != nil {
			return err
		}
		// Pushed from the layout on disk, so what is pushed is what
		// `make image` leaves there.
		idx, err := layout.ImageIndexFromPath(b.layout)
		if err != nil {
			return err
		}
		inner, err := idx.ImageIndex(b.digest)
		if err != nil {
			return fmt.Errorf("%s: %v", b.layout, err)
		}
		fmt.Fprintf(log, "imagebuild: pushing %s\n", ref)
		if err := remote.WriteIndex(ref, inner, opts...); err != nil {
			return fmt.Errorf("push %s: %v", ref, err)
		}
		fmt.Fprintf(stdout, "pushed %s@%s\n", ref, b.digest)
	}
	return nil
}
