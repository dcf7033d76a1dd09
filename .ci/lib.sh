# Helpers shared by the .ci scripts that drive a running chronir-server over HTTP. Source it after
# defining `fail MESSAGE` (exits), `$work` (a temp dir) and `$base` (http://127.0.0.1:PORT).

# api STATUS METHOD PATH [BODY] [TOKEN] — sends the request (JSON body, bearer token), fails unless
# the status is STATUS, prints the response body.
api() {
    local want=$1 method=$2 path=$3 body=${4:-} token=${5:-}
    local args=(-s -o "$work/body" -w '%{http_code}' -X "$method" "$base$path")
    [ -n "$body" ] && args+=(-H 'Content-Type: application/json' --data "$body")
    [ -n "$token" ] && args+=(-H "Authorization: Bearer $token")
    local got
    got=$(curl "${args[@]}") || fail "$method $path: curl failed"
    [ "$got" = "$want" ] || fail "$method $path: status $got, want $want: $(cat "$work/body")"
    cat "$work/body"
}

# json EXPR — reads JSON on stdin and prints the Python subscript EXPR of it, e.g. json "['token']".
json() { python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }
