# The one image docker-compose.yml runs as api, worker, dashboard, migrate and init.
FROM node:24.21.0-bookworm-slim AS build
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY src src
COPY workers workers
COPY migrations migrations
COPY bench bench
COPY bin bin
RUN npm ci --no-audit --no-fund && npm prune --omit=dev

FROM node:24.21.0-bookworm-slim
WORKDIR /app
# the app's files belong to root and stay read-only; the embedded default keeps its data (SQLite,
# generated key, emails as files) in /data, a volume the non-root user owns:
#   docker run -p 3000:3000 IMAGE      (the embedded default, in one command)
ENV NODE_ENV=production HOST=0.0.0.0 DATA_DIR=/data
RUN mkdir /data && chown node:node /data && chmod 700 /data
VOLUME /data
COPY --from=build /app/node_modules node_modules
COPY --from=build /app/dist dist
COPY package.json ./
COPY bin bin
COPY flows flows
COPY templates templates
USER node
EXPOSE 3000
# the api's readiness (the worker and dashboard override it in docker-compose.yml)
HEALTHCHECK --interval=10s --timeout=5s --retries=5 CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
CMD ["node", "dist/src/server.js"]
