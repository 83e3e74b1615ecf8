# The release image, built by goreleaser (.goreleaser.yaml, dockers) from
# the release's own binaries: the same layout as the Dockerfile at the
# root, which builds from source. goreleaser's context holds the binaries
# (stormdrill, river-sender) and the extra files (drills, experiments).
FROM debian:bookworm-slim AS base
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates \
 && mkdir -p /out/work && chown 65532:65532 /out/work

FROM scratch
COPY --from=base /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY stormdrill river-sender /usr/local/bin/
COPY drills /drills
COPY experiments /experiments
COPY --from=base --chown=65532:65532 /out/work /work
WORKDIR /work
ENV PATH=/usr/local/bin HOME=/work
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/stormdrill"]
CMD ["--help"]
