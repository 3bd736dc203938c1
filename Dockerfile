# agentmemory: one static binary (serve, worker, migrate, space ...) on a distroless base.
# Untested here (no Docker engine on the development machines); see docs/production.md.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
# The Go SDK is its own module, required through `replace ... => ./sdk`: its go.mod must be
# there before the download.
COPY sdk/go.mod sdk/
RUN go mod download
COPY . .
# Pure Go (SQLite through modernc), so the binary is static and runs without libc.
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags="-s -w" -o /out/agentmemory ./cmd/agentmemory \
 && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/agentmemory /usr/local/bin/agentmemory
# /data holds the subject key store (and SQLite when DATABASE_URL is unset); owned by nonroot.
COPY --from=build --chown=65532:65532 /out/data /data
ENV AGENTMEMORY_ADDR=0.0.0.0:8080 \
    AGENTMEMORY_DATA_DIR=/data \
    AGENTMEMORY_LOG_FORMAT=json
USER 65532:65532
EXPOSE 8080 9090
ENTRYPOINT ["/usr/local/bin/agentmemory"]
CMD ["serve"]
