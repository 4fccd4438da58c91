# The sidecar and controller images for people who build with Docker (or any
# BuildKit builder). `make image` builds the same images without a container
# engine (hack/imagebuild, see docs/chart.md "Images"); this file is kept
# equivalent: static binaries at /usr/local/bin/<name>, user 65532:65532,
# working directory /, the same OCI labels.
#
#   docker buildx build --platform linux/amd64,linux/arm64 --target sidecar \
#     --build-arg REVISION=$(git rev-parse HEAD) \
#     --build-arg CREATED=$(git log -1 --format=%cI) \
#     -t ghcr.io/you/sidecar:0.1.0 --push .
#   (the same with --target controller and .../controller)

ARG GO_VERSION=1.26.8

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
ARG TARGETOS
ARG TARGETARCH
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
# The context includes .git so that -buildvcs stamps the revision that
# --version reports, as `make build` does.
COPY . .
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -buildvcs=auto -ldflags="-s -w" -o /out/ ./cmd/sidecar ./cmd/controller

# distroless static, nonroot: /etc/passwd with nonroot (65532), CA
# certificates, /tmp; no shell.
FROM gcr.io/distroless/static-debian12:nonroot AS base
ARG VERSION=0.1.0-dev
ARG REVISION=""
ARG CREATED=""
LABEL org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="https://github.com/outrigger-dev/outrigger"
USER 65532:65532
WORKDIR /

FROM base AS controller
LABEL org.opencontainers.image.title="outrigger-controller" \
      org.opencontainers.image.description="Outrigger controller: sidecar injection and admin operations on the proxies"
COPY --from=build /out/controller /usr/local/bin/controller
ENTRYPOINT ["/usr/local/bin/controller"]

# The last stage is the default target.
FROM base AS sidecar
LABEL org.opencontainers.image.title="outrigger-sidecar" \
      org.opencontainers.image.description="Outrigger sidecar proxy, configured like Envoy"
COPY --from=build /out/sidecar /usr/local/bin/sidecar
ENTRYPOINT ["/usr/local/bin/sidecar"]
