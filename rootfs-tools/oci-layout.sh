#!/bin/bash
# oci-layout.sh: write a reproducible OCI image layout from one or more layer
# directories and image config values.
#
# Usage:
#   oci-layout.sh --out DIR --tag TAG --layer DIR[=COMMENT] [--layer ...]
#                 [--env K=V]... [--cmd JSON_ARRAY] [--entrypoint JSON_ARRAY]
#                 [--workdir PATH] [--user USER[:GROUP]] [--label K=V]...
#                 [--created EPOCH]
#
# Writes DIR/oci-layout, DIR/index.json (one manifest, annotated with
# org.opencontainers.image.ref.name=TAG) and DIR/blobs/sha256/{layers,config,
# manifest} following the OCI image-spec v1.0 (image-layout.md, manifest.md,
# config.md, layer.md). DIR must not exist or be empty. Prints the manifest
# digest ("sha256:...") on stdout.
#
# Reproducibility: each layer is a tar of the directory's contents with names
# sorted bytewise, every mtime set to --created (default $SOURCE_DATE_EPOCH,
# else 1700000000), numeric owners as found on disk, pax headers without
# atime/ctime and with a PID-free name, no xattrs/ACLs, compressed with
# `gzip -n` (no name, no timestamp). JSON is written compact with sorted keys.
# Same inputs -> same bytes -> same digests.
set -euo pipefail
export LC_ALL=C
umask 022

die() { echo "oci-layout: $*" >&2; exit 1; }

out='' tag='' created=${SOURCE_DATE_EPOCH:-1700000000}
cmd='' entrypoint='' workdir='' user=''
layers=() envs=() labels=()
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --tag) tag=$2; shift 2 ;;
    --layer) layers+=("$2"); shift 2 ;;
    --env) envs+=("$2"); shift 2 ;;
    --label) labels+=("$2"); shift 2 ;;
    --cmd) cmd=$2; shift 2 ;;
    --entrypoint) entrypoint=$2; shift 2 ;;
    --workdir) workdir=$2; shift 2 ;;
    --user) user=$2; shift 2 ;;
    --created) created=$2; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[ -n "$out" ] || die "--out DIR is required"
[ -n "$tag" ] || die "--tag TAG is required"
[ ${#layers[@]} -gt 0 ] || die "at least one --layer DIR is required"
[[ $created =~ ^[0-9]+$ ]] || die "--created '$created' is not a Unix time in seconds"
for j in "$cmd" "$entrypoint"; do
  [ -z "$j" ] || jq -e 'type == "array" and all(type == "string")' <<<"$j" >/dev/null 2>&1 ||
    die "--cmd/--entrypoint '$j' is not a JSON array of strings"
done
for spec in "${layers[@]}"; do
  [ -d "${spec%%=*}" ] || die "layer directory '${spec%%=*}' does not exist"
done
for kv in "${envs[@]}" "${labels[@]}"; do
  [[ $kv == ?*=* ]] || die "'$kv' is not KEY=VALUE"
done
if [ -e "$out" ] && [ -n "$(ls -A "$out")" ]; then die "output $out exists and is not empty"; fi

created_iso=$(date -u -d "@$created" +%Y-%m-%dT%H:%M:%SZ)
# On any failure remove what this run wrote: no half-written layout remains.
if [ -e "$out" ]; then trap 'rm -rf "${out:?}"/blobs "$out/index.json" "$out/oci-layout"' ERR EXIT
else trap 'rm -rf "${out:?}"' ERR EXIT; fi
mkdir -p "$out/blobs/sha256"
blobs=$out/blobs/sha256

# put_blob FILE -> moves FILE into blobs/sha256/<digest>, prints "digest size"
put_blob() {
  local sum size
  sum=$(sha256sum "$1" | cut -d' ' -f1)
  size=$(stat -c %s "$1")
  mv -f "$1" "$blobs/$sum"
  echo "sha256:$sum $size"
}

# layer_tar DIR FILE: deterministic tar of DIR's contents (names without "./").
layer_tar() {
  local dir=$1 file=$2
  [ -d "$dir" ] || die "layer directory $dir does not exist"
  (cd "$dir" && find . -mindepth 1 -maxdepth 1 -printf '%P\0' | sort -z |
    tar --null -T - --sort=name --format=posix \
      --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
      --mtime="@$created" --numeric-owner --no-acls --no-xattrs --no-selinux \
      -cf -) > "$file" ||
    die "tar of layer $dir failed"
}

layer_descs=() diff_ids=() history=()
i=0
for spec in "${layers[@]}"; do
  dir=${spec%%=*}
  comment="layer $i"
  [[ $spec == *=* ]] && comment=${spec#*=}
  tmp_tar=$blobs/.layer$i.tar
  layer_tar "$dir" "$tmp_tar"
  diff_ids+=("sha256:$(sha256sum "$tmp_tar" | cut -d' ' -f1)")
  gzip -n -c "$tmp_tar" > "$tmp_tar.gz"
  rm -f "$tmp_tar"
  read -r digest size < <(put_blob "$tmp_tar.gz")
  layer_descs+=("$(jq -cn --arg d "$digest" --argjson s "$size" \
    '{mediaType: "application/vnd.oci.image.layer.v1.tar+gzip", digest: $d, size: $s}')")
  history+=("$(jq -cn --arg c "$created_iso" --arg b "agentnest rootfs-tools: $comment" \
    '{created: $c, created_by: $b}')")
  i=$((i + 1))
done

json_array() { jq -cn '$ARGS.positional' --args "$@"; }
env_json=$(json_array "${envs[@]}")
label_json=$(jq -cn '[$ARGS.positional[] | capture("^(?<k>[^=]+)=(?<v>.*)$"; "s") | {(.k): .v}] | add // {}' --args "${labels[@]}")

# Image config (image-spec config.md). Empty optional fields are omitted.
jq -cSjn \
  --arg created "$created_iso" --argjson env "$env_json" --argjson labels "$label_json" \
  --arg cmd "$cmd" --arg entrypoint "$entrypoint" --arg workdir "$workdir" --arg user "$user" \
  --argjson diff_ids "$(json_array "${diff_ids[@]}")" \
  --argjson history "$(printf '%s\n' "${history[@]}" | jq -cs .)" '
  {created: $created, architecture: "amd64", os: "linux",
   config: ({Env: $env}
     + (if $cmd != "" then {Cmd: ($cmd | fromjson)} else {} end)
     + (if $entrypoint != "" then {Entrypoint: ($entrypoint | fromjson)} else {} end)
     + (if $workdir != "" then {WorkingDir: $workdir} else {} end)
     + (if $user != "" then {User: $user} else {} end)
     + (if ($labels | length) > 0 then {Labels: $labels} else {} end)),
   rootfs: {type: "layers", diff_ids: $diff_ids},
   history: $history}' > "$blobs/.config.json"
read -r config_digest config_size < <(put_blob "$blobs/.config.json")

jq -cSjn --arg cd "$config_digest" --argjson cs "$config_size" \
  --argjson layers "$(printf '%s\n' "${layer_descs[@]}" | jq -cs .)" '
  {schemaVersion: 2, mediaType: "application/vnd.oci.image.manifest.v1+json",
   config: {mediaType: "application/vnd.oci.image.config.v1+json", digest: $cd, size: $cs},
   layers: $layers}' > "$blobs/.manifest.json"
read -r manifest_digest manifest_size < <(put_blob "$blobs/.manifest.json")

jq -cSjn --arg md "$manifest_digest" --argjson ms "$manifest_size" --arg tag "$tag" '
  {schemaVersion: 2, mediaType: "application/vnd.oci.image.index.v1+json",
   manifests: [{mediaType: "application/vnd.oci.image.manifest.v1+json",
                digest: $md, size: $ms,
                platform: {architecture: "amd64", os: "linux"},
                annotations: {"org.opencontainers.image.ref.name": $tag}}]}' > "$out/index.json"
printf '{"imageLayoutVersion":"1.0.0"}' > "$out/oci-layout"
trap - ERR EXIT
echo "$manifest_digest"
