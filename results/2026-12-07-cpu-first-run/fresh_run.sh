#!/bin/bash
# Times the README's first command in a fresh Debian 12 (debootstrap --variant=minbase bookworm) chroot on this 2-core
# machine: apt, pip (no cache), configure, build, the CPU run. The repository is cloned in before the clock starts.
set -u
F=/srv/fresh
rm -rf $F/root/gpubench $F/root/.cache
git clone -q /work/main $F/root/gpubench
start=$(date +%s)
chroot $F /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin TERM=dumb PIP_CERT=/etc/ssl/certs/ca-certificates.crt \
  bash -c 'cd /root/gpubench && ./scripts/gpubench run resnet50 --amp' 2>&1 | while IFS= read -r l; do echo "$(( $(date +%s) - start ))s $l"; done
echo "total $(( $(date +%s) - start )) s"
