# syntax=docker/dockerfile:1

# Build stage: a release binary. Migrations (sqlx::migrate!), assets/docs.html and the password
# list are compiled into it, so the runtime image needs nothing else.
FROM rust:1-bookworm AS build
WORKDIR /src

# Dependencies first: with only the manifests and an empty main, this layer is rebuilt only when
# Cargo.toml or Cargo.lock change. The registry and git caches persist across builds. The dummy
# crate's own artefacts are removed so that the real sources are always compiled afresh.
COPY Cargo.toml Cargo.lock ./
# The tests' path dependency: cargo reads its manifest to load Cargo.toml, even for a build
# that does not compile it.
COPY tests/model/protocol ./tests/model/protocol
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/usr/local/cargo/git \
    mkdir -p src \
    && echo 'fn main() {}' > src/main.rs \
    && touch src/lib.rs \
    && cargo build --release --locked --bin jobboard \
    && rm -rf src target/release/jobboard* target/release/deps/jobboard-* target/release/deps/libjobboard-* \
       target/release/.fingerprint/jobboard-*

COPY src ./src
COPY migrations ./migrations
COPY assets ./assets
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/usr/local/cargo/git \
    cargo build --release --locked --bin jobboard \
    && install -D -m 0755 target/release/jobboard /out/jobboard

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
