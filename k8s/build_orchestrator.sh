#!/usr/bin/env bash
# Build, push and deploy the Jervis Orchestrator (spec §19.4).
#
#   CONTAINER_REGISTRY=registry.example.com/jervis k8s/build_orchestrator.sh [--tag v42]
#   k8s/build_orchestrator.sh --registry registry.example.com/jervis --dry-run > rendered.yaml
#
# Steps: render k8s/ (a temporary copy with the new image and CONTAINER_REGISTRY in the ConfigMap;
# the repository is never modified) → docker build --platform → docker push
# <registry>/jervis-orchestrator:<tag> → kubectl apply -k <the copy> → kubectl rollout status.
# The kustomize `images:` entry replaces the spec's separate `kubectl set image`: one apply.
# The Secrets are not applied (k8s/secret.example.yaml explains how to create them once).
set -euo pipefail

IMAGE_NAME=jervis-orchestrator
NAMESPACE=jervis
DEPLOYMENT=jervis-orchestrator
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
K8S_DIR="$REPO_ROOT/k8s"

usage() {
    cat <<EOF
Usage: $(basename "$0") [options]

Build and push the orchestrator image, then deploy k8s/ with it.

Options (each also settable by the environment variable in brackets):
  -r, --registry REGISTRY   registry and path to push to, without the image name, e.g.
                            registry.example.com/jervis [CONTAINER_REGISTRY] (required)
  -t, --tag TAG             image tag [TAG] (default: v<UTC timestamp>, e.g. v20260101120000)
  -p, --platform PLATFORM   docker build platform [PLATFORM] (default: linux/amd64)
      --timeout DURATION    how long to wait for the rollout (default: 300s)
  -n, --dry-run             print the docker / kubectl commands and the rendered manifests
                            (stdout) without building, pushing or applying anything
  -h, --help                this help

Needs docker (with BuildKit / buildx for --platform) and kubectl with access to the cluster;
--dry-run needs only kubectl (its offline 'kubectl kustomize').
EOF
}

die() {
    echo "error: $*" >&2
    exit 2
}

REGISTRY=${CONTAINER_REGISTRY:-}
TAG=${TAG:-}
PLATFORM=${PLATFORM:-linux/amd64}
ROLLOUT_TIMEOUT=300s
DRY_RUN=0

while [[ $# -gt 0 ]]; do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        -n|--dry-run) DRY_RUN=1; shift ;;
        -r|--registry) [[ $# -ge 2 ]] || die "$1 needs a value"; REGISTRY=$2; shift 2 ;;
        -t|--tag) [[ $# -ge 2 ]] || die "$1 needs a value"; TAG=$2; shift 2 ;;
        -p|--platform) [[ $# -ge 2 ]] || die "$1 needs a value"; PLATFORM=$2; shift 2 ;;
        --timeout) [[ $# -ge 2 ]] || die "$1 needs a value"; ROLLOUT_TIMEOUT=$2; shift 2 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
done

[[ -n "$REGISTRY" ]] || die "CONTAINER_REGISTRY is not set: give the registry to push to, e.g.
  CONTAINER_REGISTRY=registry.example.com/jervis $0   (or --registry …; see --help)"
REGISTRY=${REGISTRY%/}
# A registry host[:port] and lower-case path: also keeps the sed edits below safe.
[[ "$REGISTRY" =~ ^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)*$ ]] \
    || die "CONTAINER_REGISTRY '$REGISTRY' is not a registry path like registry.example.com/jervis"
TAG=${TAG:-v$(date -u +%Y%m%d%H%M%S)}
[[ "$TAG" =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] || die "TAG '$TAG' is not a valid image tag"
[[ "$PLATFORM" =~ ^[a-z0-9]+/[a-z0-9]+(/[a-z0-9]+)?$ ]] || die "PLATFORM '$PLATFORM' is not like linux/amd64"

IMAGE="$REGISTRY/$IMAGE_NAME:$TAG"
REVISION=$(git -C "$REPO_ROOT" rev-parse HEAD 2>/dev/null || echo unknown)

# Prints a command (shell-quoted) to stderr; runs it unless this is a dry run.
step() {
    local quoted
    printf -v quoted '%q ' "$@"
    if [[ $DRY_RUN -eq 1 ]]; then
        echo "would run: ${quoted% }" >&2
    else
        echo "+ ${quoted% }" >&2
        "$@"
    fi
}

command -v kubectl >/dev/null 2>&1 || die "kubectl is not on PATH"
if [[ $DRY_RUN -eq 0 ]]; then
    command -v docker >/dev/null 2>&1 || die "docker is not on PATH"
fi

# Render a temporary copy of k8s/ with the new image (and the same registry for the agent images)
# first: a manifest that does not render stops the script before anything is pushed.
WORK=$(mktemp -d "${TMPDIR:-/tmp}/jervis-k8s.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cp "$K8S_DIR"/*.yaml "$WORK/"
[[ $(grep -c '^ *newName:' "$WORK/kustomization.yaml") -eq 1 \
    && $(grep -c '^ *newTag:' "$WORK/kustomization.yaml") -eq 1 ]] \
    || die "k8s/kustomization.yaml must have exactly one images entry (newName/newTag)"
[[ $(grep -c '^ *CONTAINER_REGISTRY:' "$WORK/configmap.yaml") -eq 1 ]] \
    || die "k8s/configmap.yaml must set CONTAINER_REGISTRY once"
sed -i.bak -e "s|^\( *newName:\).*|\1 $REGISTRY/$IMAGE_NAME|" -e "s|^\( *newTag:\).*|\1 \"$TAG\"|" \
    "$WORK/kustomization.yaml"
sed -i.bak -e "s|^\( *CONTAINER_REGISTRY:\).*|\1 \"$REGISTRY\"|" "$WORK/configmap.yaml"
rm -f "$WORK"/*.bak
kubectl kustomize "$WORK" > "$WORK/rendered.yaml.out"
grep -qF "image: $IMAGE" "$WORK/rendered.yaml.out" || die "the rendered Deployment does not use $IMAGE"

step docker build --platform "$PLATFORM" \
    --build-arg "VERSION=$TAG" --build-arg "REVISION=$REVISION" \
    -t "$IMAGE" -f "$REPO_ROOT/Dockerfile" "$REPO_ROOT"
step docker push "$IMAGE"

if [[ $DRY_RUN -eq 1 ]]; then
    echo "would run: kubectl apply -k <k8s/ with image $IMAGE>" >&2
    echo "would run: kubectl -n $NAMESPACE rollout status deployment/$DEPLOYMENT --timeout=$ROLLOUT_TIMEOUT" >&2
    cat "$WORK/rendered.yaml.out"
    exit 0
fi

step kubectl apply -k "$WORK"
step kubectl -n "$NAMESPACE" rollout status "deployment/$DEPLOYMENT" --timeout="$ROLLOUT_TIMEOUT"
echo "deployed $IMAGE" >&2
