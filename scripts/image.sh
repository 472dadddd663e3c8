#!/usr/bin/env bash
# Builds the container image with buildah from a binary built here (no
# registry needed: the Containerfile's build stage is replaced by a local
# folder through --build-context), and with --check verifies the result:
# entrypoint, command, user, exposed port, environment, and that the binary
# in the image is static and reads its configuration from the image's
# environment. Running containers is not needed (nor possible everywhere):
# the check mounts the image and runs the binary from its root filesystem.
#
#   scripts/image.sh [--check] [--install] [--tag IMAGE]
#
#   --install   apt-get install buildah when it is missing (Debian/Ubuntu, as root)
#   --check     inspect the built image and fail on any mismatch; also build
#               deploy/library.Containerfile on top of it with examples/skills
#               and their prebuilt index, and check that image too
#
# Environment: BUILDAH (default "buildah --storage-driver vfs"), GOARCH.
set -euo pipefail
cd "$(dirname "$0")/.."

tag=localhost/skillrouter:dev
check=0
install=0
while [ $# -gt 0 ]; do
	case "$1" in
	--check) check=1 ;;
	--install) install=1 ;;
	--tag) tag="$2"; shift ;;
	*) echo "usage: $0 [--check] [--install] [--tag IMAGE]" >&2; exit 2 ;;
	esac
	shift
done

if ! command -v buildah >/dev/null; then
	if [ "$install" = 1 ]; then
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		apt-get install -y -qq buildah >/dev/null
	else
		echo "buildah not found: install it (Debian: apt-get install buildah) or pass --install" >&2
		exit 1
	fi
fi
read -r -a buildah <<<"${BUILDAH:-buildah --storage-driver vfs}"

arch="${GOARCH:-$(go env GOARCH)}"
ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"' EXIT
rootfs="$ctx/out/rootfs"
mkdir -p "$rootfs/usr/local/bin" "$rootfs/etc/ssl/certs" "$rootfs/tmp" "$rootfs/skills" "$ctx/out/cache"
chmod 1777 "$rootfs/tmp"
version="$(git describe --always --dirty 2>/dev/null || echo dev)"
CGO_ENABLED=0 GOOS=linux GOARCH="$arch" go build -trimpath -ldflags="-s -w -X main.version=$version" -o "$rootfs/usr/local/bin/router" ./cmd/router
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
	cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/"
else
	echo "warning: no /etc/ssl/certs/ca-certificates.crt here; the image cannot verify HTTPS upstreams" >&2
	: >"$rootfs/etc/ssl/certs/ca-certificates.crt"
fi
echo 'skillrouter:x:65532:65532:skillrouter:/nonexistent:/sbin/nologin' >"$rootfs/etc/passwd"
echo 'skillrouter:x:65532:' >"$rootfs/etc/group"
mkdir -p "$rootfs/usr/share/skillrouter" "$ctx/out/exec"
cp deploy/image/defaults.yaml "$rootfs/usr/share/skillrouter/defaults.yaml"
cp deploy/image/defaults-exec.yaml "$ctx/out/exec/defaults.yaml"

# An empty folder as the build context: the runtime stage copies only from
# the build stage, which --build-context points at the folder made above.
empty="$ctx/context"
mkdir -p "$empty"
"${buildah[@]}" bud --quiet --layers=false --platform "linux/$arch" \
	--build-context "build=$ctx" -f Containerfile -t "$tag" "$empty" >/dev/null
echo "built $tag (linux/$arch)"

[ "$check" = 1 ] || exit 0

fail=0
expect() { # name, got, want
	if [ "$2" != "$3" ]; then
		echo "FAIL $1: got '$2', want '$3'" >&2
		fail=1
	else
		echo "ok   $1: $2"
	fi
}
inspect() { "${buildah[@]}" inspect --type image --format "$1" "$tag"; }
expect entrypoint "$(inspect '{{range .OCIv1.Config.Entrypoint}}[{{.}}]{{end}}')" '[/usr/local/bin/router]'
expect cmd "$(inspect '{{range .OCIv1.Config.Cmd}}[{{.}}]{{end}}')" '[serve]'
expect user "$(inspect '{{.OCIv1.Config.User}}')" '65532:65532'
expect ports "$(inspect '{{range $p, $v := .OCIv1.Config.ExposedPorts}}[{{$p}}]{{end}}')" '[8080/tcp]'
env="$(inspect '{{range .OCIv1.Config.Env}}{{println .}}{{end}}')"
expect defaults-env "$(grep '^SKILLROUTER_DEFAULTS=' <<<"$env")" 'SKILLROUTER_DEFAULTS=/usr/share/skillrouter/defaults.yaml'
expect no-override-env "$(grep -c '^SKILLROUTER_\(LISTEN\|SKILLS\|EXEC_ENABLED\)=' <<<"$env")" '0'

# The root filesystem: mount the image and look (no container runs).
ctr="$("${buildah[@]}" from --quiet "$tag")"
cleanup() { "${buildah[@]}" rm "$ctr" >/dev/null 2>&1 || true; rm -rf "$ctx"; }
trap cleanup EXIT
mnt="$("${buildah[@]}" mount "$ctr")"
bin="$mnt/usr/local/bin/router"
expect cgo "$(go version -m "$bin" | awk '$2 ~ /^CGO_ENABLED=/ {print $2}')" 'CGO_ENABLED=0'
expect tmp-mode "$(stat -c %a "$mnt/tmp")" '1777'
expect cache-owner "$(stat -c %u:%g "$mnt/var/cache/skillrouter")" '65532:65532'
expect files "$(cd "$mnt" && find . -type f | sort | tr '\n' ' ')" './etc/group ./etc/passwd ./etc/ssl/certs/ca-certificates.crt ./usr/local/bin/router ./usr/share/skillrouter/defaults.yaml '
# The binary, with the image's environment only (its defaults file read
# from the mounted image), reads the configuration a container would:
# listening on every interface, skills from /skills; and a config file
# still decides over those defaults.
envargs=()
while IFS= read -r line; do [ -n "$line" ] && envargs+=("${line/=\/usr\/share\//=$mnt/usr/share/}"); done <<<"$env"
printed="$(env -i "${envargs[@]}" "$bin" serve --print-config)"
expect print-config-listen "$(grep '^listen:' <<<"$printed")" 'listen: 0.0.0.0:8080'
expect print-config-skills "$(grep -A1 '^skills:' <<<"$printed" | tail -1 | tr -d ' ')" '-/skills'
printf 'listen: 0.0.0.0:9000\n' >"$ctx/config.yaml"
printed="$(env -i "${envargs[@]}" "$bin" serve --config "$ctx/config.yaml" --print-config)"
expect print-config-file-listen "$(grep '^listen:' <<<"$printed")" 'listen: 0.0.0.0:9000'
"${buildah[@]}" umount "$ctr" >/dev/null
"${buildah[@]}" rm "$ctr" >/dev/null

# A library image: skills and their prebuilt index in a layer on top.
lib="$ctx/library"
mkdir -p "$lib"
cp -r examples/skills "$lib/skills"
"$rootfs/usr/local/bin/router" index build --skills "$lib/skills" --out "$lib/index" >/dev/null 2>&1
"${buildah[@]}" bud --quiet --layers=false --build-arg "BASE=$tag" -f deploy/library.Containerfile -t "$tag-library" "$lib" >/dev/null
ctr="$("${buildah[@]}" from --quiet "$tag-library")"
mnt="$("${buildah[@]}" mount "$ctr")"
# The image carries the index as built (its file names hold the embedder's
# key and a generation digest, which the manifest names), a manifest included.
expect library-index "$(cd "$mnt" && ls index | tr '\n' ' ')" "$(ls "$lib/index" | tr '\n' ' ')"
expect library-manifest "$(cd "$mnt" && ls index | grep -c '^prebuilt-builtin-.*\.json$')" 1
expect library-skills "$(cd "$mnt" && ls skills/*/SKILL.md | wc -l)" "$(ls examples/skills/*/SKILL.md | wc -l)"
libenv="$("${buildah[@]}" inspect --type image --format '{{range .OCIv1.Config.Env}}{{println .}}{{end}}' "$tag-library")"
expect library-env "$(grep '^SKILLROUTER_ROUTING_PREBUILT_INDEX=' <<<"$libenv")" 'SKILLROUTER_ROUTING_PREBUILT_INDEX=/index'
expect library-user "$("${buildah[@]}" inspect --type image --format '{{.OCIv1.Config.User}}' "$tag-library")" '65532:65532'
"${buildah[@]}" umount "$ctr" >/dev/null
[ "$fail" = 0 ] && echo "image check passed: $tag" || { echo "image check FAILED" >&2; exit 1; }
