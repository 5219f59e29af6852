#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Issue 26's serving-while-updating figure at 1B, rerun on the new staging path: a 1B-shaped
# bf16 package, serve_update_bench --graphs --mode big, session 8's libwharf (oldlib/) and
# this one alternating twice.
cd "$(dirname "$0")/gb"
for f in ../../tests/data/*; do ln -sfn $f .; done
export LD_LIBRARY_PATH=$PWD WHARF_TEST_DATA=$PWD
if [ ! -e /usr/local/cuda/lib64/libcublasLt.so.13 ]; then
  export WHARF_CUBLASLT_LIBRARY=$(python3 -c 'import nvidia.cu13 as m; print(list(m.__path__)[0] + "/lib/libcublasLt.so.13")' 2>/dev/null)
fi
O=$OUT; mkdir -p $O/su
T0=$(date +%s)
bash real_models/run.sh $O/su 1b export > $O/su/export_run.log 2>&1; echo "export rc=$? at $(( $(date +%s) - T0 ))s (cached on a warm machine)"
pkg=/tmp/wharf-real-models/1b.wharf
for i in 1 2; do
  LD_LIBRARY_PATH=$PWD/oldlib:$PWD timeout 100 ./serve_update_bench --package $pkg --graphs --mode big --idle-s 4 --serve-s 8 > $O/su/old_$i.txt 2>&1; echo "old $i rc=$? at $(( $(date +%s) - T0 ))s"
  timeout 100 ./serve_update_bench --package $pkg --graphs --mode big --idle-s 4 --serve-s 8 > $O/su/new_$i.txt 2>&1; echo "new $i rc=$? at $(( $(date +%s) - T0 ))s"
done
cd $O && tar czf su.tgz su
for f in old_1 new_1 old_2 new_2; do echo "== $f"; head -2 su/$f.txt | grep -i unsupp; sed -n "/steps .*p50/,/goal:/p" su/$f.txt; grep update_ su/$f.txt | grep -o "gbs_median[^,]*"; done
