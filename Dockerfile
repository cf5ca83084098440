# infermeter: metering reverse proxy + collectors for LLM inference servers.
#
#   docker build -t infermeter .
#   docker run --rm -p 8080:8080 -p 9464:9464 infermeter --upstream http://vllm:8000
#   docker run --rm --gpus all ... infermeter ...   # nvidia-smi comes from the NVIDIA runtime
#
# Ports (infermeter's defaults, src/config.ts):
#   8080  proxy: point OpenAI clients here (--listen)
#   9464  /metrics, /healthz, /readyz (--metrics-listen)
# The healthcheck follows INFERMETER_METRICS_LISTEN when the metrics port is moved with it.

# Node.js 24 LTS, the runtime line (package.json engines: 22, 24 and 26 are supported).
ARG NODE_IMAGE=node:24-bookworm-slim

# ---- build: dev dependencies and the TypeScript compiler --------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY . .
# bin/ (the fake nvidia-smi) may be absent from a build context; keep the COPY below valid.
RUN npm run build && mkdir -p bin

# ---- runtime: production dependencies and the compiled JavaScript only -------
FROM ${NODE_IMAGE} AS runtime
# With the NVIDIA container runtime (--gpus / deploy.resources.reservations.devices),
# "utility" mounts nvidia-smi and NVML into the container; no CUDA libraries are needed.
ENV NODE_ENV=production \
    NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=utility
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund --ignore-scripts \
    && npm cache clean --force
COPY --from=build /src/dist/src ./dist/src
COPY --from=build /src/bin ./bin
# --state-dir: the tenant salt made on first start (--tenant-from api-key) is kept here; mount a
# volume on it to keep it across containers, or set --tenant-salt from a secret.
ENV INFERMETER_STATE_DIR=/var/lib/infermeter
RUN mkdir -p /var/lib/infermeter && chown node:node /var/lib/infermeter
# The node image's unprivileged user (uid 1000); nothing here needs root.
USER node
EXPOSE 8080 9464
HEALTHCHECK --interval=15s --timeout=5s --start-period=10s --retries=3 \
    CMD ["node", "-e", "const l=process.env.INFERMETER_METRICS_LISTEN||'9464';fetch('http://127.0.0.1:'+l.split(':').pop()+'/healthz',{signal:AbortSignal.timeout(4000)}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["node", "/app/dist/src/cli.js"]
