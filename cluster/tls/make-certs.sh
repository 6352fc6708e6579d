#!/usr/bin/env bash
# Make a private CA and one certificate per role (scheduler, worker, client) for Dask TLS.
#   cluster/tls/make-certs.sh OUTDIR [EXTRA_HOSTNAME ...]
# OUTDIR gets ca.pem (give it to everyone), ca-key.pem (keep it offline), and ROLE.pem /
# ROLE-key.pem for each role. Certificates name localhost, 127.0.0.1, the compose and
# Kubernetes scheduler hostnames and any EXTRA_HOSTNAME. A client needs client.pem and
# client-key.pem: without them the scheduler refuses the connection (mutual TLS).
set -euo pipefail
out=${1:?usage: make-certs.sh OUTDIR [EXTRA_HOSTNAME ...]}
shift
days=${DAYS:-365}
mkdir -p "$out"
cd "$out"
umask 077

san="DNS:localhost,IP:127.0.0.1,DNS:scheduler,DNS:dask-ssl-scheduler"
for host in "$@"; do san="$san,DNS:$host"; done

openssl req -x509 -newkey rsa:2048 -nodes -days "$days" -subj "/CN=dask-ssl CA" \
  -keyout ca-key.pem -out ca.pem 2>/dev/null

for role in scheduler worker client; do
  openssl req -newkey rsa:2048 -nodes -subj "/CN=dask-ssl $role" \
    -keyout "$role-key.pem" -out "$role.csr" 2>/dev/null
  printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$san" > "$role.ext"
  openssl x509 -req -in "$role.csr" -CA ca.pem -CAkey ca-key.pem -CAcreateserial \
    -days "$days" -extfile "$role.ext" -out "$role.pem" 2>/dev/null
  rm -f "$role.csr" "$role.ext"
done
rm -f ca.srl
chmod 644 ca.pem scheduler.pem worker.pem client.pem
echo "certificates in $out: ca.pem, scheduler.pem, worker.pem, client.pem (+ keys)"
