# The one way a script runs nginx in front of chronir-server (sourced, not run; bash): Debian's
# nginx, unprivileged, not daemonized, in a temporary prefix, around a site file the script made
# from deploy/nginx/ (only ports, upstreams and certificates replaced). .ci/proxy.sh and
# Reliability/three-instances.sh use it; each waits for its own listener (HTTP or HTTPS) itself.
#
#   nginx_binary
#       Prints nginx's path: the one on PATH, else /usr/sbin/nginx (not on a non-root PATH on Debian).
#   nginx_start PREFIX SITE WORKER_CONNECTIONS
#       Writes PREFIX/nginx.conf: one worker with WORKER_CONNECTIONS connections, pid file, error log
#       (level notice), access log and temp paths all under PREFIX (temp paths in PREFIX/tmp, made
#       here), `daemon off`, and an http block that includes SITE (a file under PREFIX, so it is
#       readable after the chown below). As root, hands PREFIX to nobody:nogroup and runs nginx as
#       nobody (setpriv): never the proxy as root. Checks the configuration with `nginx -t` (returns 1,
#       its output on stderr, when it fails), then starts nginx in the background in PREFIX and sets
#       nginx_pid; the caller stops it (kill) and waits until it serves.

nginx_binary() {
    command -v nginx || echo /usr/sbin/nginx
}

nginx_start() {
    local prefix=$1 site=$2 connections=$3 binary checked
    binary=$(nginx_binary)
    mkdir -p "$prefix/tmp" || return 1
    cat >"$prefix/nginx.conf" <<EOF || return 1
worker_processes 1;
pid $prefix/nginx.pid;
error_log $prefix/error.log notice;
daemon off;
events { worker_connections $connections; }
http {
    access_log $prefix/access.log;
    client_body_temp_path $prefix/tmp/body;
    proxy_temp_path $prefix/tmp/proxy;
    fastcgi_temp_path $prefix/tmp/fastcgi;
    uwsgi_temp_path $prefix/tmp/uwsgi;
    scgi_temp_path $prefix/tmp/scgi;
    include $site;
}
EOF
    local as_nginx=()
    if [ "$(id -u)" = 0 ]; then
        chown -R nobody:nogroup "$prefix" || return 1
        as_nginx=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
    fi
    checked=$("${as_nginx[@]}" "$binary" -t -p "$prefix" -c "$prefix/nginx.conf" -e "$prefix/error.log" 2>&1) ||
        { echo "$checked" >&2; return 1; }
    "${as_nginx[@]}" "$binary" -p "$prefix" -c "$prefix/nginx.conf" -e "$prefix/error.log" &
    nginx_pid=$!
}
