# The xds-programmed gateway image (infra/kubernetes/gateway.yaml runs it):
#   docker build -t ghcr.io/xds-programmed/xds-gateway:0.1.0 .
# test/integration/deploy/gateway-image.test.ts checks this file without a Docker engine: it reads
# the runtime stage below, builds the bundle as the build stage does, lays the files out as the
# runtime stage COPYs them, and runs ENTRYPOINT and HEALTHCHECK on a read-only root as USER.

# Build stage: the same Node image as the runtime, so the bundle is built by the Node that runs it.
FROM node:24.20.0-trixie-slim AS build
WORKDIR /src
# Exactly what the lockfile pins. --ignore-scripts: the root package's `prepare` builds the CLI
# (not part of the image), and no dependency needs an install script to bundle (esbuild's binary
# comes from its platform package).
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
# scripts/build.mjs reads serverless.yml (the functions' target) and bundles every functions/*.ts it
# finds: none are copied, so it builds only the gateway (xds-gateway/ imports only common/).
COPY tsconfig.json serverless.yml ./
COPY scripts/build.mjs scripts/
COPY common/ common/
COPY xds-gateway/ xds-gateway/
RUN node scripts/build.mjs

# Runtime stage. node:<exact version>-trixie-slim rather than distroless: the official image has an
# exact-version tag (distroless publishes only moving nodejs24 tags, so pinning means a digest to
# track by hand), the build stage above uses the same image, and the HEALTHCHECK runs `node`, which
# both have. The shell and package manager that slim adds are never run by the gateway; npm,
# corepack and yarn are removed below, and Kubernetes runs the container as non-root with a
# read-only root filesystem and no capabilities (infra/kubernetes/gateway.yaml).
FROM node:24.20.0-trixie-slim
RUN rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack \
      /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack \
      /usr/local/bin/yarn /usr/local/bin/yarnpkg /opt/yarn-*
ENV NODE_ENV=production
WORKDIR /app
# The bundle (dist/xds-gateway/main.js and its source map) holds every dependency but
# @grpc/grpc-js-xds, which scripts/build.mjs keeps external because the gateway reads the Envoy
# .proto files it ships (deps/) at startup, finding them through its package.json
# (common/xds/protos.ts). The gateway never loads that package's JavaScript, so neither its build/
# nor its dependencies are needed: only those two paths are copied.
COPY --from=build /src/dist/xds-gateway/ /app/xds-gateway/
COPY --from=build /src/node_modules/@grpc/grpc-js-xds/package.json /app/node_modules/@grpc/grpc-js-xds/package.json
COPY --from=build /src/node_modules/@grpc/grpc-js-xds/deps/ /app/node_modules/@grpc/grpc-js-xds/deps/
# Numeric, so Kubernetes' runAsNonRoot can check it without /etc/passwd; the same uid/gid
# gateway.yaml sets (runAsUser/runAsGroup/fsGroup 65532). Every file above is root's and read-only
# to it: the gateway writes nothing to disk (logs go to stderr, ports to stdout).
USER 65532:65532
# The gateway's defaults (--listen-port, --ops-port); gateway.yaml sets XDS_LISTEN_PORT=8001.
EXPOSE 18000 9090
# For docker run/compose (Kubernetes uses gateway.yaml's probes instead): /healthz on the ops
# server, with node's own fetch (the image has no curl). It reads OPS_HOST/OPS_PORT as the gateway
# does, so set the ops address by environment, not by flag; 0.0.0.0/:: (all interfaces) and unset
# (the default, 127.0.0.1) are reached on loopback.
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "const e=process.env,o=e.OPS_HOST,h=!o||o==='0.0.0.0'||o==='::'?'127.0.0.1':o;fetch('http://'+(h.includes(':')?'['+h+']':h)+':'+(e.OPS_PORT||9090)+'/healthz',{signal:AbortSignal.timeout(4000)}).then(r=>process.exit(r.status===200?0:1),()=>process.exit(1))"]
# Configuration comes from the environment (docs/GATEWAY.md, "Configuration"); flags given as
# arguments (Kubernetes `args`) follow the script. gateway.yaml sets neither command nor args.
ENTRYPOINT ["node", "--enable-source-maps", "/app/xds-gateway/main.js"]
CMD []
