#!/usr/bin/env bash
# Builds O-RAN SC's submgr, rtmgr, appmgr and e2mgr from their public sources, beside the
# project, for deploy/oran_platform/run.sh (docs/deploy.md, "Run on O-RAN SC's own platform
# managers, by hand"). By hand only: it needs those sources, so it is not part of `make test`.
#
#   deploy/oran_platform/build.sh
#
# Sources: bare git mirrors of github.com/o-ran-sc/<repo> in $MIRRORS/o-ran-sc+<repo>/repo
# (default /work/.mirror), or plain checkouts in $ORAN_DIR/<name> (then set MIRRORS=none):
#   ric-plt-submgr ric-plt-rtmgr ric-plt-appmgr ric-plt-e2mgr ric-plt-ric-dep (the Helm charts)
#   ric-plt-lib-rmr (only rmr.h and RIC_message_types.h, for cgo)
#   ric-plt-xapp-frame ric-plt-sdlgo ric-plt-nodeb-rnib com-golog ric-plt-alarm-go: the Go
#   modules the managers import from gerrit.o-ran-sc.org, which the Go module proxy refuses
#   (403); they are used through `replace` directives pointing at their mirrors' tags.
# Everything is written under $ORAN_DIR (default: ../oran beside the project): the sources,
# Go caches, bin/{submgr,rtmgr,appmgr,e2mgr}. Nothing is written into the project. The
# managers' cgo parts link against octoric's build/lib/librmr_si.so (`make native` first).
# Go: any recent toolchain (1.22+; built here with 1.26) and the Go module proxy; the
# go-swagger code generator v0.23.0 is built from the proxy too. Builds run at nice 19.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ORAN=${ORAN_DIR:-$(dirname "$REPO")/oran}
MIRRORS=${MIRRORS:-/work/.mirror}
mkdir -p "$ORAN"/{bin,deps,.go}
export GOPATH=$ORAN/.go/path GOMODCACHE=$ORAN/.go/mod GOCACHE=$ORAN/.go/cache
export GOFLAGS="-buildvcs=false -modcacherw" GOTOOLCHAIN=local
NICE="nice -n 19"
[[ -f $REPO/build/lib/librmr_si.so ]] || { echo "build.sh: run make native first" >&2; exit 2; }
command -v go >/dev/null || { echo "build.sh: needs go (1.22+)" >&2; exit 2; }

# ---- sources -------------------------------------------------------------------------------------
extract() {  # extract DIR REPO REF: a clean tree of REPO at REF in DIR
    local dir=$1 repo=$2 ref=$3
    [[ $MIRRORS == none ]] && { [[ -d $dir ]] || { echo "build.sh: $dir missing" >&2; exit 2; }; return; }
    rm -rf "$dir" && mkdir -p "$dir"
    git --git-dir="$MIRRORS/o-ran-sc+$repo/repo" archive "$ref" | tar -x -C "$dir"
}
echo "== sources into $ORAN"
for n in submgr rtmgr appmgr e2mgr lib-rmr ric-dep; do extract "$ORAN/$n" "ric-plt-$n" HEAD; done
D=$ORAN/deps
extract "$D/xapp-frame" ric-plt-xapp-frame v0.9.16
extract "$D/sdlgo" ric-plt-sdlgo v0.8.0
extract "$D/golog" com-golog v0.0.2
extract "$D/alarm-go" ric-plt-alarm-go f7d2cf80e85c  # v0.5.1-0.20211223104552-f7d2cf80e85c
extract "$D/nodeb-rnib-1.2.1" ric-plt-nodeb-rnib v1.2.1
extract "$D/nodeb-rnib-1.2.8" ric-plt-nodeb-rnib entities/v1.2.8
extract "$D/nodeb-rnib-1.2.9" ric-plt-nodeb-rnib common/v1.2.9
mkdir -p "$ORAN/rmr-include/rmr"
cp "$ORAN/lib-rmr/src/rmr/common/include/"{rmr.h,RIC_message_types.h} "$ORAN/rmr-include/rmr/"

# every gerrit module path (with or without ".git", each version the go.mod files name) to its tree
replace_gerrit() {
    local N=gerrit.o-ran-sc.org/r/ric-plt/nodeb-rnib.git args=() p s v
    for p in xapp-frame sdlgo; do
        args+=(-replace "gerrit.o-ran-sc.org/r/ric-plt/$p=$D/$p" -replace "gerrit.o-ran-sc.org/r/ric-plt/$p.git=$D/$p")
    done
    args+=(-replace "gerrit.o-ran-sc.org/r/com/golog=$D/golog" -replace "gerrit.o-ran-sc.org/r/com/golog.git=$D/golog")
    args+=(-replace "gerrit.o-ran-sc.org/r/ric-plt/alarm-go.git/alarm=$D/alarm-go/alarm")
    for s in common entities reader; do
        args+=(-dropreplace "$N/$s")
        for v in 1.2.1 1.2.9; do args+=(-replace "$N/$s@v$v=$D/nodeb-rnib-$v/$s"); done
    done
    args+=(-replace "$N/entities@v1.2.8=$D/nodeb-rnib-1.2.8/entities")
    go mod edit "${args[@]}"
}

# ---- go-swagger 0.23.0 (submgr's Dockerfile uses it; rtmgr's and appmgr's use 0.19.0, whose
# templates no longer execute under Go >= 1.22: 0.23.0 with their tags arranged as 0.19.0 did) --
SWAGGER=$ORAN/.go/bin/swagger
if [[ ! -x $SWAGGER ]]; then
    echo "== go-swagger v0.23.0"
    src=$(cd /tmp && go mod download -json github.com/go-swagger/go-swagger@v0.23.0 |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
    rm -rf "$ORAN/swagger-src" && cp -r "$src" "$ORAN/swagger-src" && chmod -R u+w "$ORAN/swagger-src"
    (cd "$ORAN/swagger-src" && $NICE go build -o "$SWAGGER" ./cmd/swagger)
fi
# swagger 0.19 put an operation with several tags into the root "operations" package, 0.23 into
# its first tag's: dropping those operations' tags gives 0.23 the layout the managers import
untag() {
    python3 - "$1" "$2" <<'EOF'
import re, sys
lines, out, i = open(sys.argv[1]).read().split("\n"), [], 0
while i < len(lines):
    if lines[i].strip() == "tags:":
        ind = len(lines[i]) - len(lines[i].lstrip())
        j = i + 1
        while j < len(lines) and re.match(r"^\s*- ", lines[j]) and len(lines[j]) - len(lines[j].lstrip()) >= ind:
            j += 1
        if j - i - 1 > 1:
            i = j
            continue
    out.append(lines[i])
    i += 1
open(sys.argv[2], "w").write("\n".join(out))
EOF
}

echo "== generated REST code (as the Dockerfiles generate it)"
untag "$ORAN/appmgr/api/appmgr_rest_api.yaml" "$ORAN/appmgr-api.yaml"
(cd "$ORAN/submgr" && cp ../rtmgr/api/routing_manager.yaml api/ &&
    $SWAGGER generate client -q -f api/routing_manager.yaml -t pkg/ -m rtmgr_models -c rtmgr_client)
(cd "$ORAN/rtmgr" && $SWAGGER generate server -q -f api/routing_manager.yaml -t pkg/ --exclude-main -r LICENSE &&
    $SWAGGER generate client -q --skip-validation -f "$ORAN/appmgr-api.yaml" -t pkg/ -m appmgr_model -c appmgr_client -r LICENSE)
# 0.23 leaves the root package's import out of the client when the other packages are tagged
f=$ORAN/rtmgr/pkg/appmgr_client/r_i_c_appmgr_client.go
grep -q 'appmgr_client/operations"' "$f" ||
    sed -i 's#\t"routing-manager/pkg/appmgr_client/health"#&\n\t"routing-manager/pkg/appmgr_client/operations"#' "$f"
(cd "$ORAN/appmgr" && $SWAGGER generate server -q --skip-validation -f "$ORAN/appmgr-api.yaml" --name AppManager -t pkg/ --exclude-main)

echo "== C libraries: submgr's E2AP (asn1c) and wrapper, e2mgr's asn1codec"
mkdir -p "$ORAN/e2ap-lib/include"
(cd "$ORAN/submgr/3rdparty/E2AP-v02.00.00" && ls ./*.c | $NICE xargs -P2 -n 20 gcc -c -DASN_DISABLE_OER_SUPPORT -I. -O1 -fPIC &&
    gcc ./*.o -shared -o "$ORAN/e2ap-lib/libe2ap.so" && cp ./*.h "$ORAN/e2ap-lib/include/")
(cd "$ORAN/submgr/e2ap/libe2ap_wrapper" && gcc -c -DASN_DISABLE_OER_SUPPORT -I"$ORAN/e2ap-lib/include" -O1 -fPIC E2AP_if.c E2AP_tests.c &&
    gcc E2AP_if.o E2AP_tests.o -shared -o "$ORAN/e2ap-lib/libe2ap_wrapper.so" -L"$ORAN/e2ap-lib" -le2ap &&
    cp ./*.h "$ORAN/e2ap-lib/include/")
(cd "$ORAN/e2mgr/E2Manager/3rdparty/asn1codec" && $NICE make -j2 >/dev/null)

echo "== Go builds"
build() {  # build NAME DIR MAIN
    local name=$1 dir=$2 main=$3
    (cd "$dir" && replace_gerrit &&
        if [[ $name != e2mgr ]]; then $NICE go mod tidy; fi &&
        $NICE go build -o "$ORAN/bin/$name" "$main") && echo "   $ORAN/bin/$name"
}
export CGO_LDFLAGS="-L$REPO/build/lib -L$ORAN/e2ap-lib"
export CGO_CFLAGS="-I$ORAN/rmr-include -I$ORAN/e2ap-lib/include -DASN_DISABLE_OER_SUPPORT"
build appmgr "$ORAN/appmgr" cmd/appmgr.go
build rtmgr "$ORAN/rtmgr" ./cmd/rtmgr.go
build submgr "$ORAN/submgr" cmd/submgr.go
CGO_CFLAGS="-I$ORAN/rmr-include" CGO_LDFLAGS="-L$REPO/build/lib" build e2mgr "$ORAN/e2mgr/E2Manager" ./app/
echo "== done: deploy/oran_platform/run.sh runs them"
