# syntax=docker/dockerfile:1

# Build stage: a release binary. Migrations (sqlx::migrate!), assets/docs.html and the password
# list are compiled into it, so the runtime image needs nothing else.
FROM rust:1-bookworm AS build
WORKDIR /src

# The manifests, the sources, and the manifest of the test-only path dependency
# (tests/model/protocol), without which cargo cannot read Cargo.toml.
COPY Cargo.toml Cargo.lock ./
COPY tests/model/protocol ./tests/model/protocol
COPY src ./src
COPY migrations ./migrations
COPY assets ./assets
# The registry, the git checkouts and target/ are cache mounts: they persist across builds but
# are never part of a layer. A rebuild compiles only what changed (after a source change none of
# the dependencies, after a Cargo.lock change only the changed crates), so no dependencies-first
# layer is needed and the build stage's layers stay small. The crate itself is always compiled
# afresh (its fingerprints are removed first): cargo notices changed sources by their
# timestamps, which a copy into the build context need not advance, and it does not track the
# migrations compiled into the binary (sqlx::migrate!) at all. `sharing=locked`: one build at a
# time uses target/.
# The release profile keeps line tables (debug = "line-tables-only"): 206 MB of the binary's
# 254 MB. Compressed (zlib), they take 43 MB, and backtraces still name files and lines.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/usr/local/cargo/git \
    --mount=type=cache,target=/src/target,sharing=locked \
    rm -rf target/release/.fingerprint/jobboard-* \
    && cargo build --release --locked --bin jobboard \
    && install -D -m 0755 target/release/jobboard /out/jobboard \
    && objcopy --compress-debug-sections=zlib /out/jobboard

# Runtime stage: glibc and CA certificates, no shell, no package manager, uid 65532.
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/jobboard /usr/local/bin/jobboard
# Writable by nonroot: the default SQLite database (data/jobboard.db) lands here when
# DATABASE_URL is unset.
WORKDIR /home/nonroot
ENV BIND_ADDR=0.0.0.0:8000 \
    WORKER_HTTP_ADDR=0.0.0.0:9000
# Numeric, so the kubelet can verify runAsNonRoot: 65532 is distroless's nonroot user.
USER 65532:65532
# 8000: the API (and /metrics unless METRICS_ADDR is set); 9000: the worker's /healthz, /readyz, /metrics.
EXPOSE 8000 9000
ENTRYPOINT ["/usr/local/bin/jobboard"]
CMD ["serve"]
