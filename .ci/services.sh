# Sourced by .ci/run (and usable by hand): starts MariaDB and Redis on 127.0.0.1 with their data
# in a temporary folder, and exports DATABASE_URL, REDIS_URL and SECRET_KEY for the tests.
# `stop_services` stops exactly the processes started here, by PID.

free_port() {
  node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

start_services() {
  SERVICES_DIR=$(mktemp -d /tmp/gatehouse-ci.XXXXXX)
  local redis_port db_port
  redis_port=$(free_port)
  db_port=$(free_port)

  redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
    > "$SERVICES_DIR/redis.log" 2>&1 &
  REDIS_PID=$!

  mariadb-install-db --no-defaults --datadir="$SERVICES_DIR/db" --user=root \
    --auth-root-authentication-method=normal --skip-test-db > "$SERVICES_DIR/db-install.log" 2>&1
  mariadbd --no-defaults --datadir="$SERVICES_DIR/db" --socket="$SERVICES_DIR/db.sock" \
    --port="$db_port" --bind-address=127.0.0.1 --user=root --skip-log-bin \
    --innodb-buffer-pool-size=256M --max-connections=500 \
    > "$SERVICES_DIR/mariadb.log" 2>&1 &
  MARIADB_PID=$!

  for _ in $(seq 1 60); do
    if redis-cli -p "$redis_port" ping > /dev/null 2>&1 \
      && mariadb-admin --no-defaults -h 127.0.0.1 -P "$db_port" -uroot ping > /dev/null 2>&1; then
      break
    fi
    sleep 0.5
  done
  # a port taken by someone else makes our server quit while the ping reaches the other one
  if ! kill -0 "$REDIS_PID" 2> /dev/null || ! kill -0 "$MARIADB_PID" 2> /dev/null; then
    echo "MariaDB or Redis did not stay up; logs in $SERVICES_DIR" >&2
    tail -20 "$SERVICES_DIR/mariadb.log" "$SERVICES_DIR/redis.log" >&2
    return 1
  fi
  mariadb --no-defaults -h 127.0.0.1 -P "$db_port" -uroot -e 'CREATE DATABASE IF NOT EXISTS gatehouse_test'

  export DATABASE_URL="mysql://root@127.0.0.1:$db_port/gatehouse_test"
  export REDIS_URL="redis://127.0.0.1:$redis_port"
  export SECRET_KEY=${SECRET_KEY:-$(openssl rand -hex 32)}
  echo "MariaDB on 127.0.0.1:$db_port (pid $MARIADB_PID), Redis on 127.0.0.1:$redis_port (pid $REDIS_PID)"
}

stop_services() {
  for pid in ${REDIS_PID:-} ${MARIADB_PID:-}; do
    kill "$pid" 2> /dev/null || true
  done
  for pid in ${REDIS_PID:-} ${MARIADB_PID:-}; do
    while kill -0 "$pid" 2> /dev/null; do sleep 0.2; done
  done
  [ -n "${SERVICES_DIR:-}" ] && rm -rf "$SERVICES_DIR"
  return 0
}
