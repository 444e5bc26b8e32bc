# nginx_util.sh - sourced helpers: a throwaway nginx on a free loopback port.
#   nginx_start DIR          serves DIR/www on 127.0.0.1:$NGINX_PORT (sets NGINX_PID)
#   nginx_stop               stops it (only the master we started, by pid)
#   free_port                prints a free port in 15000-15999
NGINX_BIN=${NGINX_BIN:-/usr/sbin/nginx}

free_port() {
    /usr/bin/python3 - <<'PY'
import random, socket
ports = list(range(15000, 16000))
random.shuffle(ports)
for p in ports:
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        s.close()
    print(p)
    break
PY
}

nginx_start() {
    dir=$1
    workers=${NGINX_WORKERS:-1}
    mkdir -p "$dir/www" "$dir/tmp"
    chmod 755 "$dir" "$dir/www"
    for try in 1 2 3 4 5; do
        NGINX_PORT=$(free_port)
        cat > "$dir/nginx.conf" <<CONF
daemon off;
worker_processes $workers;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 100000000;
    keepalive_timeout 60s;
    client_body_temp_path $dir/tmp/body;
    proxy_temp_path $dir/tmp/proxy;
    fastcgi_temp_path $dir/tmp/fastcgi;
    uwsgi_temp_path $dir/tmp/uwsgi;
    scgi_temp_path $dir/tmp/scgi;
    server {
        listen 127.0.0.1:$NGINX_PORT;
        root $dir/www;
    }
}
CONF
        "$NGINX_BIN" -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" &
        NGINX_PID=$!
        for i in $(seq 1 50); do
            if /usr/bin/python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $NGINX_PORT), 0.2)" 2>/dev/null; then
                return 0
            fi
            kill -0 "$NGINX_PID" 2>/dev/null || break
            sleep 0.1
        done
        kill "$NGINX_PID" 2>/dev/null
        wait "$NGINX_PID" 2>/dev/null
    done
    echo "nginx did not start:" >&2
    cat "$dir/error.log" >&2
    return 1
}

nginx_stop() {
    if [ -n "${NGINX_PID:-}" ]; then
        kill -QUIT "$NGINX_PID" 2>/dev/null
        for i in $(seq 1 50); do
            kill -0 "$NGINX_PID" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$NGINX_PID" 2>/dev/null
        wait "$NGINX_PID" 2>/dev/null
        NGINX_PID=
    fi
}
