#!/usr/bin/env bash
# Every CPU results file in bench/results/, re-made one benchmark after another on a quiet machine (about 100 minutes
# on 2 cores). Each file records its command, machine, versions and the load before and after (bench/bench_env.py).
# Then: python .ci/bench_tables.py && python .ci/readme.py.
#   bash bench/rerun_cpu.sh            # all
#   bash bench/rerun_cpu.sh peers      # the peers' comparisons only (their venvs are made on first use)
#   bash bench/rerun_cpu.sh own        # the rest
# Order: the training-step and memory benchmarks, then the peers, then the long data and report benchmarks.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
R=bench/results
part=${1:-all}
step() { local t0=$SECONDS; echo "== $* ($(date -u +%H:%M:%S))"; "$@"; echo "   $((SECONDS - t0)) s"; }
if [[ $part == all || $part == own ]]; then
  step $PY bench/explorer_latency.py
  step $PY bench/metric_memory.py --out $R/metric_memory_cpu.txt --json $R/metric_memory_cpu.json
  step $PY bench/model_speed.py --out $R/model_speed_cpu.txt --json $R/model_speed_cpu.json
  step $PY bench/train_throughput.py --out $R/train_throughput_cpu.txt --json $R/train_throughput_cpu.json
  step $PY bench/peers_train.py --out $R/peers_train_cpu.txt --json $R/peers_train_cpu.json
  step $PY bench/peers_train.py --profile 14M --profile-rows 15 --out $R/peers_train_profile_cpu.txt
fi
if [[ $part == all || $part == peers ]]; then
  step $PY bench/peers_measure.py --out --json /tmp/pm_full.json
  step $PY bench/peers_kv.py --native --out $R/peers_kv_cpu.txt
  step $PY bench/peers_explorer.py --model tiny smollm2 --out $R/peers_explorer_cpu.txt --json /tmp/pe_final.json
fi
if [[ $part == all || $part == own ]]; then
  step $PY bench/chart_cost.py --repeat 5 --out $R/charts_cpu.txt
  step $PY bench/demo_time.py --steps 600 --out $R/demo_time_cpu.txt
  step $PY bench/measure_speed.py --repeat 2 --json $R/measure_speed_cpu.json
  step $PY bench/long_context.py --T 2048 4096 8192 --json /tmp/lc_smollm2.json
  step $PY bench/measure_vs_reference.py --out $R/measure_vs_reference_cpu.txt
  step $PY bench/measure_vs_reference.py --model smollm2 --T 64 --out $R/measure_vs_reference_cpu.txt --append
  step $PY bench/report_time.py --repeats 2 --out $R/report_time_cpu.txt
  rm -rf /tmp/e2e1g
  step $PY bench/prepare_train_e2e.py --mb 1000 --workdir /tmp/e2e1g --out $R/prepare_train_e2e_cpu.txt
  rm -rf /tmp/e2e1g /tmp/benchwork && mkdir -p /tmp/benchwork
  step $PY bench/data_prepare.py --sizes-mb 50 200 1000 --workdir /tmp/benchwork --out $R/data_prepare_cpu.txt
  step $PY bench/data_prepare.py --sizes-mb 50 --engines threads processes datasets-map --workdir /tmp/benchwork \
    --out $R/data_prepare_cpu.txt --append
  rm -rf /tmp/benchwork
  step $PY bench/seed_batch.py all --out $R/seed_batch_cpu.txt --json $R/seed_batch_cpu.json
fi
