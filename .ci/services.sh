# Sourced by .ci/run (and usable by hand): starts MariaDB and Redis on 127.0.0.1 with their data
# in a temporary folder, and exports DATABASE_URL, REDIS_URL and SECRET_KEY for the tests; and a
# second MariaDB replicating the first one second behind (MASTER_DELAY), exported as
# REPLICA_SERVER_URL (the server only: it copies the databases named gh_test_*replica*, which the
# read-replica tests make; a statement on a stored procedure of another database, which the table
# filter does not hold back, fails there, as "unknown database" (CREATE) or "procedure does not
# exist" (ALTER), and is skipped: any other error stops the replica and fails the read-replica
# tests). The replica's process id is exported as REPLICA_SERVER_PID: the read-replica tests freeze
# it (SIGSTOP) to make a replica that takes connections and answers nothing. `stop_services` stops
# exactly the processes started here, by PID (a frozen replica is woken first, to hear the stop).

free_port() {
  node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

start_services() {
  SERVICES_DIR=$(mktemp -d /tmp/gatehouse-ci.XXXXXX)
  local redis_port db_port replica_port
  redis_port=$(free_port)
  db_port=$(free_port)
  replica_port=$(free_port)

  redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
    > "$SERVICES_DIR/redis.log" 2>&1 &
  REDIS_PID=$!

  mariadb-install-db --no-defaults --datadir="$SERVICES_DIR/db" --user=root \
    --auth-root-authentication-method=normal --skip-test-db > "$SERVICES_DIR/db-install.log" 2>&1
  mariadbd --no-defaults --datadir="$SERVICES_DIR/db" --socket="$SERVICES_DIR/db.sock" \
    --port="$db_port" --bind-address=127.0.0.1 --user=root --server-id=1 --log-bin="$SERVICES_DIR/db-bin" \
    --binlog-format=ROW --innodb-buffer-pool-size=256M --max-connections=500 \
    > "$SERVICES_DIR/mariadb.log" 2>&1 &
  MARIADB_PID=$!
  mariadb-install-db --no-defaults --datadir="$SERVICES_DIR/replica" --user=root \
    --auth-root-authentication-method=normal --skip-test-db > "$SERVICES_DIR/replica-install.log" 2>&1
  mariadbd --no-defaults --datadir="$SERVICES_DIR/replica" --socket="$SERVICES_DIR/replica.sock" \
    --port="$replica_port" --bind-address=127.0.0.1 --user=root --server-id=2 --skip-log-bin \
    --replicate-wild-do-table='gh_test_%replica%.%' --slave-skip-errors=1049,1305 \
    --innodb-buffer-pool-size=64M --max-connections=200 \
    > "$SERVICES_DIR/replica.log" 2>&1 &
  REPLICA_PID=$!

  for _ in $(seq 1 60); do
    if redis-cli -p "$redis_port" ping > /dev/null 2>&1 \
      && mariadb-admin --no-defaults -h 127.0.0.1 -P "$db_port" -uroot ping > /dev/null 2>&1 \
      && mariadb-admin --no-defaults -h 127.0.0.1 -P "$replica_port" -uroot ping > /dev/null 2>&1; then
      break
    fi
    sleep 0.5
  done
  # a port taken by someone else makes our server quit while the ping reaches the other one
  if ! kill -0 "$REDIS_PID" 2> /dev/null || ! kill -0 "$MARIADB_PID" 2> /dev/null || ! kill -0 "$REPLICA_PID" 2> /dev/null; then
    echo "MariaDB, its replica or Redis did not stay up; logs in $SERVICES_DIR" >&2
    tail -20 "$SERVICES_DIR/mariadb.log" "$SERVICES_DIR/replica.log" "$SERVICES_DIR/redis.log" >&2
    return 1
  fi
  mariadb --no-defaults -h 127.0.0.1 -P "$db_port" -uroot -e "CREATE DATABASE IF NOT EXISTS gatehouse_test;
    CREATE USER 'replication'@'127.0.0.1' IDENTIFIED BY 'replication'; GRANT REPLICATION SLAVE ON *.* TO 'replication'@'127.0.0.1'"
  # the replica starts from the primary's current binlog position: nothing before it is a test's
  local position
  position=$(mariadb --no-defaults -h 127.0.0.1 -P "$db_port" -uroot -N -e 'SHOW MASTER STATUS')
  mariadb --no-defaults -h 127.0.0.1 -P "$replica_port" -uroot -e "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=$db_port,
    MASTER_USER='replication', MASTER_PASSWORD='replication', MASTER_LOG_FILE='$(echo "$position" | cut -f1)',
    MASTER_LOG_POS=$(echo "$position" | cut -f2), MASTER_DELAY=1; START SLAVE"

  export DATABASE_URL="mysql://root@127.0.0.1:$db_port/gatehouse_test"
  export REDIS_URL="redis://127.0.0.1:$redis_port"
  export REPLICA_SERVER_URL="mysql://root@127.0.0.1:$replica_port/"
  export REPLICA_SERVER_PID=$REPLICA_PID
  export SECRET_KEY=${SECRET_KEY:-$(openssl rand -hex 32)}
  echo "MariaDB on 127.0.0.1:$db_port (pid $MARIADB_PID), its replica on 127.0.0.1:$replica_port (pid $REPLICA_PID), Redis on 127.0.0.1:$redis_port (pid $REDIS_PID)"
}

stop_services() {
  [ -n "${REPLICA_PID:-}" ] && { kill -CONT "$REPLICA_PID" 2> /dev/null || true; }
  for pid in ${REDIS_PID:-} ${MARIADB_PID:-} ${REPLICA_PID:-}; do
    kill "$pid" 2> /dev/null || true
  done
  for pid in ${REDIS_PID:-} ${MARIADB_PID:-} ${REPLICA_PID:-}; do
    while kill -0 "$pid" 2> /dev/null; do sleep 0.2; done
  done
  [ -n "${SERVICES_DIR:-}" ] && rm -rf "$SERVICES_DIR"
  return 0
}
