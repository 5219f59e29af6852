#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
cd "$(dirname "$0")/gb"
for f in ../../tests/data/*; do ln -sfn $f .; done
export LD_LIBRARY_PATH=$PWD WHARF_TEST_DATA=$PWD
bash gpu-run.sh . quick > $OUT/quick.txt 2>&1; rc=$?
tail -15 $OUT/quick.txt
cd $OUT && tar czf all.tgz *.log *.txt 2>/dev/null
exit $rc
