# hookjet's container image (see docs/deploy.md). Build it with `make image`,
# which stamps the version, commit and build date; on a machine that reaches
# no image registry, `make image-offline` (deploy/image/offline-builder.sh).
#
# The build stage needs only a Go toolchain and a POSIX shell; the official
# golang image is the default, any image with the same Go can stand in.
ARG GO_IMAGE=docker.io/library/golang:1.26.8-bookworm

FROM ${GO_IMAGE} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=v0.0.0-dev
ARG COMMIT=
ARG BUILD_DATE=
# An empty directory for the image's /data: the RUN below creates it as its
# working directory, so the build stage needs no shell tools but sh.
WORKDIR /out/data
# A static binary: no cgo, so it runs on an image without a C library.
RUN CGO_ENABLED=0 go build -C /src -trimpath -buildvcs=false \
      -ldflags "-s -w -X github.com/hookjet/hookjet/server.Version=${VERSION} -X github.com/hookjet/hookjet/server.Commit=${COMMIT} -X github.com/hookjet/hookjet/server.BuildDate=${BUILD_DATE}" \
      -o /out/hookjet ./cmd/hookjet

# The image: the binary, CA certificates (deliveries to https endpoints,
# tls:// NATS) and the time zone database, nothing else.
FROM scratch
ARG VERSION=v0.0.0-dev
ARG COMMIT=
ARG BUILD_DATE=
ARG SOURCE=https://github.com/hookjet/hookjet
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /usr/share/zoneinfo /usr/share/zoneinfo
COPY --from=build --chown=65532:65532 /out/data /data
COPY --from=build /out/hookjet /usr/local/bin/hookjet
# A numeric user, so that Kubernetes' runAsNonRoot can check it is not root.
USER 65532:65532
WORKDIR /data
# data_dir: the embedded NATS store, state.db and secret.key. The variable
# overrides a data_dir in the config file; mount a volume here.
ENV HOOKJET_DATA_DIR=/data
VOLUME ["/data"]
# 4222: the embedded NATS server (nats.listen); 8089: the admin API
# (admin.listen). Both listen on loopback unless the config says otherwise.
EXPOSE 4222 8089
ENTRYPOINT ["/usr/local/bin/hookjet"]
CMD ["serve"]
LABEL org.opencontainers.image.title="hookjet" \
      org.opencontainers.image.description="Webhook delivery on NATS JetStream" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}" \
      org.opencontainers.image.created="${BUILD_DATE}"
