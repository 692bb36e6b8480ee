# Sourced by .ci/run (and usable by hand): starts a 3-node MariaDB Galera cluster and a 3-master
# Redis Cluster on 127.0.0.1, with their data in a temporary folder, and exports:
#   GALERA_URLS         the three nodes' URLs, comma-separated (each a writer: multi-master)
#   DATABASE_URL        the first node (the contract suite's database server)
#   REDIS_CLUSTER_URL   redis+cluster://… naming the three masters
#   CLUSTER_DIR         galeraN/ and redisN/: each node's data, log, pid file and start.sh (to start it again)
#   GALERA_PIDS, REDIS_CLUSTER_PIDS
# `stop_cluster` stops exactly the processes started here, by PID. Needs Debian's galera-4 and
# rsync (the state transfer a joining node gets) besides mariadb-server and redis-server.

free_port() {
  node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

# start_galera_node N FIRST(yes|no): node N with its own SQL, group (gcomm), IST and SST ports
start_galera_node() {
  local n=$1 first=$2
  local dir="$CLUSTER_DIR/galera$n"
  mkdir -p "$dir"
  # mysql, not root: the joiner's rsync daemon of a state transfer writes as the server's user,
  # and a daemon started by root writes as nobody
  chown "$GALERA_USER" "$dir"
  mariadb-install-db --no-defaults --datadir="$dir/data" --user="$GALERA_USER" \
    --auth-root-authentication-method=normal --skip-test-db > "$dir/install.log" 2>&1
  local args=(
    --no-defaults --datadir="$dir/data" --socket="$dir/db.sock" --pid-file="$dir/db.pid"
    --port="${GALERA_SQL[$n]}" --bind-address=127.0.0.1 --user="$GALERA_USER"
    --innodb-buffer-pool-size=64M --max-connections=300 --skip-log-bin
    --binlog-format=ROW --default-storage-engine=InnoDB --innodb-autoinc-lock-mode=2
    # a local transaction queued behind one that a replicated write aborted can wait out the whole
    # lock wait timeout (50 s by default) before it runs again: 15 s keeps a race test bounded
    --innodb-lock-wait-timeout=15
    --wsrep-on=ON --wsrep-provider=/usr/lib/galera/libgalera_smm.so
    --wsrep-cluster-name=gatehouse-ci --wsrep-node-name="node$n"
    --wsrep-cluster-address="gcomm://127.0.0.1:${GALERA_GCOMM[1]},127.0.0.1:${GALERA_GCOMM[2]},127.0.0.1:${GALERA_GCOMM[3]}"
    --wsrep-node-address="127.0.0.1:${GALERA_GCOMM[$n]}"
    --wsrep-provider-options="gmcast.listen_addr=tcp://127.0.0.1:${GALERA_GCOMM[$n]};ist.recv_addr=127.0.0.1:${GALERA_IST[$n]};gcache.size=64M"
    --wsrep-sst-method=rsync --wsrep-sst-receive-address="127.0.0.1:${GALERA_SST[$n]}"
  )
  # the command is kept in the node's folder: a test that kills the node starts it again with it
  # (it joins the others; only the first start of the first node bootstraps the cluster)
  printf 'exec mariadbd %s "$@" >> %q 2>&1\n' "$(printf '%q ' "${args[@]}")" "$dir/mariadb.log" > "$dir/start.sh"
  if [ "$first" = yes ]; then
    bash "$dir/start.sh" --wsrep-new-cluster &
  else
    bash "$dir/start.sh" &
  fi
  GALERA_PIDS="${GALERA_PIDS:-} $!"
}

# waits until node N says it is synced with the cluster (wsrep_local_state_comment = Synced)
wait_synced() {
  local n=$1
  for _ in $(seq 1 120); do
    if mariadb --no-defaults -h 127.0.0.1 -P "${GALERA_SQL[$n]}" -uroot -N -e "SHOW STATUS LIKE 'wsrep_local_state_comment'" 2> /dev/null | grep -q Synced; then
      return 0
    fi
    sleep 0.5
  done
  echo "Galera node $n did not sync; its log:" >&2
  tail -30 "$CLUSTER_DIR/galera$n/mariadb.log" >&2
  return 1
}

start_galera() {
  declare -gA GALERA_SQL GALERA_GCOMM GALERA_IST GALERA_SST
  for n in 1 2 3; do
    GALERA_SQL[$n]=$(free_port); GALERA_GCOMM[$n]=$(free_port); GALERA_IST[$n]=$(free_port); GALERA_SST[$n]=$(free_port)
  done
  start_galera_node 1 yes
  wait_synced 1 || return 1
  # one joiner at a time: each takes a full state transfer from a synced node
  start_galera_node 2 no
  wait_synced 2 || return 1
  start_galera_node 3 no
  wait_synced 3 || return 1
  local size
  size=$(mariadb --no-defaults -h 127.0.0.1 -P "${GALERA_SQL[1]}" -uroot -N -e "SHOW STATUS LIKE 'wsrep_cluster_size'" | awk '{print $2}')
  if [ "$size" != 3 ]; then
    echo "the Galera cluster has $size nodes, not 3" >&2
    return 1
  fi
  mariadb --no-defaults -h 127.0.0.1 -P "${GALERA_SQL[1]}" -uroot -e 'CREATE DATABASE IF NOT EXISTS gatehouse_test'
  GALERA_URLS="mysql://root@127.0.0.1:${GALERA_SQL[1]}/gatehouse_test,mysql://root@127.0.0.1:${GALERA_SQL[2]}/gatehouse_test,mysql://root@127.0.0.1:${GALERA_SQL[3]}/gatehouse_test"
  export GALERA_URLS
  export DATABASE_URL="mysql://root@127.0.0.1:${GALERA_SQL[1]}/gatehouse_test"
}

start_redis_cluster() {
  local ports=() nodes=()
  for n in 1 2 3; do
    local port bus
    port=$(free_port); bus=$(free_port)
    mkdir -p "$CLUSTER_DIR/redis$n"
    local args=(
      --port "$port" --cluster-port "$bus" --bind 127.0.0.1 --cluster-enabled yes
      --cluster-config-file "$CLUSTER_DIR/redis$n/nodes.conf" --cluster-node-timeout 2000
      --dir "$CLUSTER_DIR/redis$n" --save '' --appendonly no --daemonize no --pidfile "$CLUSTER_DIR/redis$n/redis.pid"
    )
    # kept for a test that stops this master and starts it again (its nodes.conf keeps its slots;
    # its pid file says which process to stop, then and in stop_cluster)
    printf 'exec redis-server %s >> %q 2>&1\n' "$(printf '%q ' "${args[@]}")" "$CLUSTER_DIR/redis$n/redis.log" > "$CLUSTER_DIR/redis$n/start.sh"
    echo "$port" > "$CLUSTER_DIR/redis$n/port"
    bash "$CLUSTER_DIR/redis$n/start.sh" &
    REDIS_CLUSTER_PIDS="${REDIS_CLUSTER_PIDS:-} $!"
    ports+=("$port"); nodes+=("127.0.0.1:$port")
  done
  for port in "${ports[@]}"; do
    for _ in $(seq 1 60); do redis-cli -p "$port" ping > /dev/null 2>&1 && break; sleep 0.2; done
  done
  redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes > "$CLUSTER_DIR/redis-create.log" 2>&1 || {
    cat "$CLUSTER_DIR/redis-create.log" >&2
    return 1
  }
  for _ in $(seq 1 100); do
    redis-cli -p "${ports[0]}" cluster info | grep -q cluster_state:ok && break
    sleep 0.2
  done
  export REDIS_CLUSTER_URL="redis+cluster://$(IFS=,; echo "${nodes[*]}")"
}

start_cluster() {
  CLUSTER_DIR=$(mktemp -d /tmp/gatehouse-cluster.XXXXXX)
  chmod 755 "$CLUSTER_DIR"
  GALERA_USER=$(id -u mysql > /dev/null 2>&1 && echo mysql || id -un)
  start_galera || return 1
  start_redis_cluster || return 1
  for pid in ${GALERA_PIDS} ${REDIS_CLUSTER_PIDS}; do
    if ! kill -0 "$pid" 2> /dev/null; then
      echo "a cluster process ($pid) did not stay up (a taken port?); logs in $CLUSTER_DIR" >&2
      return 1
    fi
  done
  export SECRET_KEY=${SECRET_KEY:-$(openssl rand -hex 32)} CLUSTER_DIR
  echo "Galera on 127.0.0.1:${GALERA_SQL[1]},${GALERA_SQL[2]},${GALERA_SQL[3]} (pids$GALERA_PIDS); Redis Cluster $REDIS_CLUSTER_URL (pids$REDIS_CLUSTER_PIDS)"
}

stop_cluster() {
  # a node a test killed and started again has a new pid: its pid file says which
  local pids="${GALERA_PIDS:-} ${REDIS_CLUSTER_PIDS:-}"
  if [ -n "${CLUSTER_DIR:-}" ]; then
    for file in "$CLUSTER_DIR"/galera*/db.pid "$CLUSTER_DIR"/redis*/redis.pid; do
      [ -f "$file" ] && pids="$pids $(cat "$file")"
    done
  fi
  for pid in $pids; do
    kill "$pid" 2> /dev/null || true
  done
  for pid in $pids; do
    while kill -0 "$pid" 2> /dev/null; do sleep 0.2; done
  done
  [ -n "${CLUSTER_DIR:-}" ] && rm -rf "$CLUSTER_DIR"
  return 0
}
