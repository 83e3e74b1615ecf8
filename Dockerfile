# One image for every subcommand: `docker run IMAGE partner ...`,
# `... run ...`, `... dispatch ...`; river-sender (cmd/river-sender, a
# webhook sender on River) is beside it as a system to drill.
#
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) -t stormdrill .
#   docker run --rm stormdrill version
#
# The build context has no .git (.dockerignore), so the version comes in
# as a build argument and is stamped with -X main.version.
#
# Static binaries (CGO_ENABLED=0: SQLite is modernc.org/sqlite, pure Go) on
# an empty base, run as a numeric non-root user.

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION} AS build
ARG VERSION=(devel)
WORKDIR /src
COPY go.mod go.sum ./
COPY cmd/river-sender/go.mod cmd/river-sender/go.sum ./cmd/river-sender/
RUN go mod download && go -C cmd/river-sender mod download
COPY . .
ENV CGO_ENABLED=0
RUN go build -trimpath -buildvcs=false -ldflags="-s -w -X main.version=${VERSION}" -o /out/stormdrill ./cmd/stormdrill \
 && go -C cmd/river-sender build -trimpath -buildvcs=false -ldflags="-s -w" -o /out/river-sender . \
 && mkdir -p /out/work \
 && find drills experiments -name '*.toml' -not -path '*/testdata/*' -exec cp --parents {} /out/ \;

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/stormdrill /out/river-sender /usr/local/bin/
# The bundled drills and experiments, as files beside the copies embedded
# in the binary (`stormdrill sweep jitter` needs none of them): to read,
# or to mount a changed one over.
COPY --from=build /out/drills /drills
COPY --from=build /out/experiments /experiments
# The working directory is the one place the user may write (run outputs,
# river-sender's SQLite file); mount a volume there to keep them.
COPY --from=build --chown=65532:65532 /out/work /work
WORKDIR /work
ENV PATH=/usr/local/bin HOME=/work
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/stormdrill"]
CMD ["--help"]
