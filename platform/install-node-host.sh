#!/usr/bin/env bash
# Install the node worker on a GPU host (Debian/Ubuntu, as root):
#   install-node-host.sh https://bench.example.com ENROLMENT_TOKEN [ADDRESS]
# Installs the tools the probes use, a venv with benchctl, enrols the host, and starts the
# systemd unit running `benchctl worker` as the unprivileged user benchctl.
set -euo pipefail
url=${1:?platform URL}; token=${2:?enrolment token from your provider account}; address=${3:-}
apt-get update -qq
apt-get install -y -qq iperf3 fio iputils-ping iputils-tracepath iproute2 python3-venv git
id benchctl >/dev/null 2>&1 || useradd --system --home /var/lib/benchctl --create-home benchctl
install -d -o benchctl -m 0750 /etc/benchctl /var/lib/benchctl/data
src=$(cd "$(dirname "$0")/.." && pwd)
python3 -m venv /opt/benchctl/venv
/opt/benchctl/venv/bin/pip install -q -r "$src/requirements.txt"
/opt/benchctl/venv/bin/pip install -q --no-deps "$src"
sudo -u benchctl /opt/benchctl/venv/bin/benchctl --config /etc/benchctl/node.json enroll \
  --url "$url" --token "$token" ${address:+--address "$address"}
install -m 0644 "$src/platform/systemd/benchctl-worker.service" /etc/systemd/system/
systemctl daemon-reload
systemctl enable --now benchctl-worker
/opt/benchctl/venv/bin/benchctl --config /etc/benchctl/node.json doctor || true
