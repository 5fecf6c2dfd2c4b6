#!/usr/bin/env bash
# One visit to the GPU machine for the diagnosis corpus (tests/corpus/*: programs that each plant
# one bottleneck; docs/corpus.md). Binaries built on the development machine are carried in
# .device/bin (warpline-record, libwarpline-inject.so, threads built from tests/corpus/threads.cu).
#   SET=single: every one-GPU program, recorded with `warpline-record -- ...`, the untraced
#               python_between_launches.py timed, and a torch.profiler trace of the CNN.
#   SET=blind:  batch 2 of the held-out programs (tests/corpus/blind_*.py); SET=blind3 and
#               SET=blind3-ddp (two GPUs) batch 3; SET=blind4 batch 4; SET=blind5 batch 5;
#               SET=blind6 batch 6.
#   SET=blind7: batch 7 (tests/corpus/blind7_*.py; expectations in tests/corpus/BLIND7_EXPECTED.md).
#   SET=blind8: batch 8 (tests/corpus/blind8_*.py; expectations in tests/corpus/BLIND8_EXPECTED.md).
#   SET=blind9: batch 9's six one-GPU programs (tests/corpus/blind9_*.py; expectations in
#               tests/corpus/BLIND9_EXPECTED.md); SET=blind9-ddp its two DDP programs (torchrun
#               --nproc_per_node=2), one trace per rank.
#   SET=blind10: batch 10's seven one-GPU programs (tests/corpus/blind10_*.py; expectations in
#               tests/corpus/BLIND10_EXPECTED.md).
#   SET=blind11: batch 11's seven one-GPU programs: six in Python (tests/corpus/blind11_*.py) and
#               one in CUDA C++ (tests/corpus/blind11_md_host_neighbor_list.cu, built here with
#               nvcc into the output folder); expectations in tests/corpus/BLIND11_EXPECTED.md.
#   SET=blind12: batch 12's six one-GPU programs: five in Python (tests/corpus/blind12_*.py) and
#               one in CUDA C++ (tests/corpus/blind12_heat_sweep_value_temporaries.cu, built here
#               with nvcc into the output folder); expectations in tests/corpus/BLIND12_EXPECTED.md.
#   SET=blind13: batch 13's six one-GPU programs: five in Python (tests/corpus/blind13_*.py) and
#               one in CUDA C++ (tests/corpus/blind13_beamformer_pageable_streams.cu, built here
#               with nvcc into the output folder); SET=blind13-ddp its two DDP programs (torchrun
#               --nproc_per_node=2), one trace per rank; expectations in
#               tests/corpus/BLIND13_EXPECTED.md.
#   SET=blind14: batch 14's seven one-GPU programs: six in Python (tests/corpus/blind14_*.py) and
#               one in CUDA C++ with CUB (tests/corpus/blind14_lidar_voxel_cub_temp.cu, built here
#               with nvcc into the output folder); SET=blind14-ddp its DDP program (torchrun
#               --nproc_per_node=2), one trace per rank; expectations in
#               tests/corpus/BLIND14_EXPECTED.md.
#   SET=blind15: batch 15's seven one-GPU programs: six in Python (tests/corpus/blind15_*.py) and
#               one in CUDA C++ with cuBLAS (tests/corpus/blind15_var_scenario_sync_d2h.cu, built
#               here with nvcc into the output folder); SET=blind15-ddp its DDP program (torchrun
#               --nproc_per_node=2), one trace per rank; expectations in
#               tests/corpus/BLIND15_EXPECTED.md.
#   SET=blind16: batch 16's eight one-GPU programs: seven in Python (tests/corpus/blind16_*.py)
#               and one in CUDA C++ with cuBLAS and NVTX
#               (tests/corpus/blind16_fx_correlator_pinned_per_block.cu, built here with nvcc into
#               the output folder); expectations in tests/corpus/BLIND16_EXPECTED.md.
#   SET=blind17: batch 17's eight one-GPU programs: seven in Python (tests/corpus/blind17_*.py)
#               and one in CUDA C++ with cuBLAS and NVTX, four host threads
#               (tests/corpus/blind17_fem_assembly_thread_workspaces.cu, built here with nvcc into
#               the output folder); expectations in tests/corpus/BLIND17_EXPECTED.md.
#   SET=blind18: batch 18's eight one-GPU programs: seven in Python (tests/corpus/blind18_*.py)
#               and one in CUDA C++ with NVTX, cudaMalloc/cudaFree per bounce
#               (tests/corpus/blind18_pathtracer_bounce_malloc.cu, built here with nvcc into the
#               output folder); expectations in tests/corpus/BLIND18_EXPECTED.md.
#   SET=blind19: batch 19's eight one-GPU programs: seven in Python (tests/corpus/blind19_*.py)
#               and one in CUDA C++ with cuBLAS and NVTX, four host threads
#               (tests/corpus/blind19_pic_host_collisions.cu, built here with nvcc into the output
#               folder); expectations in tests/corpus/BLIND19_EXPECTED.md.
#   SET=blind20: batch 20's eight one-GPU programs: seven in Python (tests/corpus/blind20_*.py)
#               and one in CUDA C++ with cuBLAS and NVTX, a checkpoint-writer thread
#               (tests/corpus/blind20_tightbinding_scf_purification.cu, built here with nvcc into
#               the output folder); expectations in tests/corpus/BLIND20_EXPECTED.md.
#   SET=blind21: batch 21's eight one-GPU programs: seven in Python (tests/corpus/blind21_*.py)
#               and one in CUDA C++ with cuFFT and NVTX, cudaMalloc/cudaFree per channel per CPI
#               (tests/corpus/blind21_pulse_doppler_cpi_buffers.cu, built here with nvcc into the
#               output folder); expectations in tests/corpus/BLIND21_EXPECTED.md.
#   SET=blind22: batch 22's eight one-GPU programs: seven in Python (tests/corpus/blind22_*.py)
#               and one in CUDA C++, two receiver threads with a stream each, pageable uploads
#               (tests/corpus/blind22_sfx_hitfinder_pageable_frames.cu, built here with nvcc into
#               the output folder); expectations in tests/corpus/BLIND22_EXPECTED.md.
#   SET=blind23: batch 23's eight one-GPU programs: seven in Python (tests/corpus/blind23_*.py)
#               and one in CUDA C++, a cudaDeviceSynchronize after every launch in a multigrid
#               solver (tests/corpus/blind23_darcy_multigrid_check_sync.cu, built here with nvcc
#               into the output folder); expectations in tests/corpus/BLIND23_EXPECTED.md.
#   SET=blind24: batch 24's eight one-GPU programs: seven in Python (tests/corpus/blind24_*.py)
#               and one in CUDA C++ with NVTX, four host threads launching tiny kernels into four
#               streams (tests/corpus/blind24_cloth_pbd_tiny_kernels.cu, built here with nvcc into
#               the output folder); expectations in tests/corpus/BLIND24_EXPECTED.md.
#   SET=sampled: the programs whose verdict turns on what the CPU did outside CUDA calls, recorded
#               with CPU sampling (on by default since it came), as NAME-sampled.
#   SET=ddp:    the two-GPU DDP programs (torchrun --nproc_per_node=2), one trace per rank.
#   ONLY="name ...": only those recordings of the set (programs changed since the last visit).
#   XZ_EACH=1: each trace comes back as NAME.warpline.xz instead of one corpus-$SET.tgz (in
#               15 MiB parts NAME.warpline.xz.aa, .ab ... when larger: cat them together);
#               more than seven files come back as one tar in parts, traces.tar.aa, .ab ...
#               Each trace is compressed as soon as it is recorded, so a visit cut off at its
#               time limit keeps the traces it finished.
#   With warpline-stats in $BIN (it needs no Qt; its libsimdjson and libsqlite3 in $BIN/../lib),
#   each trace's insights and steps are read there into $OUT/reports.txt: traces too large to
#   come back (the machine returns 64 MiB a call) are still read.
# Every recording's exit status is checked, and each trace is checked with python3's sqlite3 (the
# machine has no Qt): complete, kernels present, every kernel joined to its launch. Results under
# $OUT: corpus.log and corpus-$SET.tgz. Exit status: the number of failed recordings or checks.
set -u
BIN=${BIN:-.device/bin}
OUT=${OUT:-/tmp/warpline-out}
SET=${SET:-single}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
C=tests/corpus
t="$OUT/corpus"
mkdir -p "$t"
failures=0
check() {
    python3 - "$@" <<'PY'
import sqlite3, sys
bad = 0
for path in sys.argv[1:]:
    db = sqlite3.connect(path)
    q = lambda s: db.execute(s).fetchone()[0]
    kernels = q("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")
    # Each launch's earliest call in a temporary, indexed table (nothing is written to the file): a
    # correlated subquery over the unindexed runtime table is quadratic (minutes at 70k kernels).
    db.execute("CREATE TEMP TABLE launch (c INTEGER PRIMARY KEY, s INTEGER)")
    db.execute("INSERT INTO temp.launch SELECT correlationId, MIN(start) FROM "
               "CUPTI_ACTIVITY_KIND_RUNTIME GROUP BY correlationId")
    joined = q("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN temp.launch l "
               "ON l.c = k.correlationId AND l.s <= k.start")
    status = q("SELECT value FROM WARPLINE_META WHERE key='status'")
    print("  ", path.rsplit("/", 1)[-1], "kernels", kernels, "joined", joined, "status", status,
          "span ms %.0f" % (q("SELECT (MAX(end) - MIN(start)) / 1e6 FROM CUPTI_ACTIVITY_KIND_RUNTIME") or 0))
    if kernels == 0 or joined != kernels or status != "complete":
        print("   CHECK FAILED", path)
        bad += 1
sys.exit(bad)
PY
}
# record NAME [warpline-record options] -- PROGRAM...   (NAME may hold %q{RANK}: one file per rank)
record() {
    local name=$1
    shift
    # ONLY="name ...": record just those (a program changed since the last visit).
    if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]]; then return; fi
    local start=$SECONDS
    timeout -k 10 "${TIMEOUT:-300}" "$BIN/warpline-record" -o "$t/$name.warpline" --force "$@" > "$t/${name%%%*}.out" 2>&1
    local rc=$?
    echo "== $name: exit $rc, $((SECONDS - start)) s: $*"
    tail -3 "$t/${name%%%*}.out"
    # The program's own last lines (a blind program prints its planted part's seconds).
    grep -v '^warpline-record' "$t/${name%%%*}.out" | tail -2 | sed 's/^/   program: /'
    if [ "$rc" != 0 ]; then failures=$((failures + 1)); return; fi
    check "$t/${name%%%*}"*.warpline || failures=$((failures + 1))
    after_recording "$t/${name%%%*}"*.warpline
}
# after_recording TRACE...: their reports into $OUT/reports.txt (when warpline-stats is here),
# then, with XZ_EACH, each compressed at once (NAME.warpline.xz, in parts over 15 MiB).
after_recording() {
    stats() { LD_LIBRARY_PATH="$BIN/../lib:$LD_LIBRARY_PATH" "$BIN/warpline-stats" "$@"; }
    if [ -x "$BIN/warpline-stats" ]; then
        for f in "$@"; do
            {
                echo "=== $(basename "$f") $(stat -c %s "$f") bytes"
                stats "$f" --report insights 2>&1 | head -60
                stats "$f" --report steps --format csv 2>&1 | sed -n '1,4p;$p' | cut -c1-240
            } >> "$OUT/reports.txt"
        done
    fi
    [ -n "${XZ_EACH:-}" ] || return 0
    for f in "$@"; do
        z="$OUT/$(basename "$f").xz"
        xz -T8 -6 -c "$f" > "$z" && rm -f "$f"
        if [ "$(stat -c %s "$z")" -gt $((15 * 1024 * 1024)) ]; then
            split -b 15M "$z" "$z." && rm "$z"
        fi
    done
}
# record_cu NAME SOURCE.cu: builds a CUDA C++ program here (nvcc from PATH, else the toolkit's,
# with cuBLAS), then records it; a failed build counts as a failure and is not recorded.
record_cu() {
    local name=$1 source=$2
    if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]]; then return; fi
    local nvcc libs
    nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
    # The libraries the program's own "// build:" line names (cuBLAS when it has none).
    libs=$(sed -n '1,5s|^// build:.*nvcc||p' "$source" | grep -o -- '-l[A-Za-z0-9_]*' | tr '\n' ' ')
    libs=${libs:--lcublas}
    echo "== $name: $nvcc -O2 -o $t/$name $source $libs"
    # shellcheck disable=SC2086 # one word per library
    if "$nvcc" -O2 -o "$t/$name" "$source" $libs; then
        record "$name" -- "$t/$name"
    else
        echo "== $name: nvcc failed, not recorded"
        failures=$((failures + 1))
    fi
}
{
    echo "== machine"; date -u; uname -r
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
    if [ "$SET" = single ]; then
        S=--python-stacks
        record loop-logging-eval -- python3 $C/loop_logging_eval.py
        record grad-accum $S -- python3 $C/grad_accum.py
        record input-slow-loader $S -- python3 $C/input_slow_loader.py
        record input-main-process $S -- python3 $C/input_main_process.py
        record python-between-launches $S -- python3 $C/python_between_launches.py
        record launch-bound -- python3 $C/launch_bound.py
        record gemm-steps -- python3 $C/gemm_steps.py
        record memory-bound -- python3 $C/memory_bound.py
        record pageable-copy $S -- python3 $C/pageable_copy.py
        record empty-cache $S -- python3 $C/empty_cache.py
        record no-caching-allocator -- python3 $C/no_caching_allocator.py
        record gradscaler-amp $S -- python3 $C/gradscaler_amp.py
        record bool-mask $S -- python3 $C/bool_mask.py
        record cpu-metric $S -- python3 $C/cpu_metric.py
        record compile-recompile $S -- python3 $C/compile_recompile.py
        record compile-graph-break $S -- python3 $C/compile_graph_break.py
        record cuda-graph-step -- python3 $C/cuda_graph_step.py
        record inference-batches $S -- python3 $C/inference_batches.py
        record threads -- "$BIN/threads"
        # Held out: written after the analysis was tuned (docs/corpus.md).
        record heldout-transformer -- python3 $C/heldout_transformer.py
        record heldout-rl-env $S -- python3 $C/heldout_rl_env.py
        record heldout-lstm -- python3 $C/heldout_lstm.py
        record heldout-debug-syncs $S -- python3 $C/heldout_debug_syncs.py
        record heldout-big-d2h $S -- python3 $C/heldout_big_d2h.py
        record heldout-loader-workers -- python3 $C/heldout_loader_workers.py
        if [ -z "${ONLY:-}" ]; then
            echo "== untraced: python_between_launches.py"
            /usr/bin/time -f "%e s wall" python3 $C/python_between_launches.py
            echo "== torch.profiler trace of the CNN"
            python3 $C/profiler_cnn.py "$t/profiler-cnn.pt.trace.json.gz" ||
                failures=$((failures + 1))
        fi
    elif [ "$SET" = blind ]; then
        # Batch 2 of the held-out programs (tests/corpus/blind_*.py): each one's expected verdict is
        # written in its docstring, committed before its first recording.
        S=--python-stacks
        python3 -c 'import transformers, torchvision, cupy, jax; print("transformers", transformers.__version__, "torchvision", torchvision.__version__, "cupy", cupy.__version__, "jax", jax.__version__, jax.devices())'
        record blind-hf-gpt2 -- python3 $C/blind_hf_gpt2.py
        record blind-lightning $S -- python3 $C/blind_lightning.py
        record blind-vision-transforms $S -- python3 $C/blind_vision_transforms.py
        record blind-triton-softmax -- python3 $C/blind_triton_softmax.py
        record blind-manual-sgd -- python3 $C/blind_manual_sgd.py
        record blind-greedy-decode -- python3 $C/blind_greedy_decode.py
        record blind-checkpoint $S -- python3 $C/blind_checkpoint.py
        record blind-jax-mlp -- python3 $C/blind_jax_mlp.py
        record blind-cupy-small -- python3 $C/blind_cupy_small.py
        record blind-moe-routing $S -- python3 $C/blind_moe_routing.py
    elif [ "$SET" = blind3 ]; then
        # Batch 3 of the held-out programs, expected verdicts committed before recording; and the
        # two held-out traces of batch 1 that were not kept (the tree is smaller now).
        S=--python-stacks
        record blind-sparse-gpu-sim $S -- python3 $C/blind_sparse_gpu_sim.py
        record blind-cpu-loss $S -- python3 $C/blind_cpu_loss.py
        record blind-sdpa-long -- python3 $C/blind_sdpa_long.py
        record blind-compiled-small-inference $S -- python3 $C/blind_compiled_small_inference.py
        record heldout-transformer -- python3 $C/heldout_transformer.py
        record heldout-lstm -- python3 $C/heldout_lstm.py
        # The recorder's name for a program whose helper process initialises CUDA first.
        record blind-lightning $S -- python3 $C/blind_lightning.py
    elif [ "$SET" = blind4 ]; then
        # Batch 4 of the held-out programs, read with the analysis as it stands after batch 3.
        S=--python-stacks
        record blind-eval-every-epoch -- python3 $C/blind_eval_every_epoch.py
        record blind-loader-pageable $S -- python3 $C/blind_loader_pageable.py
        record blind-cpu-offload-optimizer $S -- python3 $C/blind_cpu_offload_optimizer.py
        record blind-grad-checkpoint -- python3 $C/blind_grad_checkpoint.py
        record blind-dict-collate $S -- python3 $C/blind_dict_collate.py
    elif [ "$SET" = blind5 ]; then
        # Batch 5 of the held-out programs, expected verdicts written before their first recording.
        S=--python-stacks
        record blind-cudnn-multiscale $S -- python3 $C/blind_cudnn_multiscale.py
        record blind-prefetch-stream -- python3 $C/blind_prefetch_stream.py
        record blind-thread-server $S -- python3 $C/blind_thread_server.py
        record blind-token-budget-accum -- python3 $C/blind_token_budget_accum.py
        record blind-spawn-loader-epochs $S -- python3 $C/blind_spawn_loader_epochs.py
        record blind-gpu-augment-loop $S -- python3 $C/blind_gpu_augment_loop.py
        record blind-seqlen-warmup-capped $S -- python3 $C/blind_seqlen_warmup_capped.py
    elif [ "$SET" = blind6 ]; then
        # Batch 6 of the held-out programs, expected verdicts written before their first recording.
        S=--python-stacks
        record blind-activation-offload $S -- python3 $C/blind_activation_offload.py
        record blind-triton-autotune-key $S -- python3 $C/blind_triton_autotune_key.py
        record blind-snapshot-device-sync $S -- python3 $C/blind_snapshot_device_sync.py
        record blind-anomaly-mode $S -- python3 $C/blind_anomaly_mode.py
        record blind-camera-paced $S -- python3 $C/blind_camera_paced.py
        record blind-malloc-async -- python3 $C/blind_malloc_async.py
    elif [ "$SET" = blind7 ]; then
        # Batch 7 of the held-out programs, expected verdicts in tests/corpus/BLIND7_EXPECTED.md,
        # written before their first recording.
        S=--python-stacks
        record blind7-loader-augment $S -- python3 $C/blind7_loader_augment.py
        record blind7-rate-limited-server $S -- python3 $C/blind7_rate_limited_server.py
        record blind7-fsync-audit-log $S -- python3 $C/blind7_fsync_audit_log.py
        record blind7-python-ranking-metric $S -- python3 $C/blind7_python_ranking_metric.py
        record blind7-gil-feature-threads $S -- python3 $C/blind7_gil_feature_threads.py
        record blind7-subprocess-grader $S -- python3 $C/blind7_subprocess_grader.py
    elif [ "$SET" = blind8 ]; then
        # Batch 8 of the held-out programs, expected verdicts in tests/corpus/BLIND8_EXPECTED.md,
        # written before their first recording.
        S=--python-stacks
        record blind8-gnn-full-graph $S -- python3 $C/blind8_gnn_full_graph.py
        record blind8-jsonl-tokenizer-stream $S -- python3 $C/blind8_jsonl_tokenizer_stream.py
        record blind8-mcts-arena $S -- python3 $C/blind8_mcts_arena.py
        record blind8-crf-viterbi-backtrace $S -- python3 $C/blind8_crf_viterbi_backtrace.py
        record blind8-protein-bucket-empty-cache $S -- python3 $C/blind8_protein_bucket_empty_cache.py
        record blind8-topk-server-recompile $S -- python3 $C/blind8_topk_server_recompile.py
        record blind8-triton-lamb-per-param $S -- python3 $C/blind8_triton_lamb_per_param.py
    elif [ "$SET" = blind9 ]; then
        # Batch 9 of the held-out programs (one GPU), expected verdicts in
        # tests/corpus/BLIND9_EXPECTED.md, written before their first recording.
        S=--python-stacks
        record blind9-hf-style-accum-trainer $S -- python3 $C/blind9_hf_style_accum_trainer.py
        record blind9-graph-bucket-server $S -- python3 $C/blind9_graph_bucket_server.py
        record blind9-compiled-beam-autocomplete $S -- python3 $C/blind9_compiled_beam_autocomplete.py
        record blind9-ecg-python-augment $S -- python3 $C/blind9_ecg_python_augment.py
        record blind9-teacher-logits-host-cache $S -- python3 $C/blind9_teacher_logits_host_cache.py
        record blind9-dlrm-dense-adam $S -- python3 $C/blind9_dlrm_dense_adam.py
    elif [ "$SET" = blind9-ddp ]; then
        # Batch 9's two-GPU programs (DDP under torchrun, NCCL): one trace per rank. The Python
        # stacks reach the ranks through the environment the recorder sets for the job.
        S=--python-stacks
        record "blind9-ddp-frozen-buffer-broadcast.rank%q{RANK}" $S -- \
            torchrun --standalone --nproc_per_node=2 $C/blind9_ddp_frozen_buffer_broadcast.py
        record "blind9-ddp-rank0-metrics.rank%q{RANK}" $S -- \
            torchrun --standalone --nproc_per_node=2 $C/blind9_ddp_rank0_metrics.py
    elif [ "$SET" = blind10 ]; then
        # Batch 10 of the held-out programs (one GPU), expected verdicts in
        # tests/corpus/BLIND10_EXPECTED.md, written before their first recording.
        S=--python-stacks
        record blind10-kv-cache-sampler $S -- python3 $C/blind10_kv_cache_sampler.py
        record blind10-dit-nonfinite-guard $S -- python3 $C/blind10_dit_nonfinite_guard.py
        record blind10-compiled-debug-print $S -- python3 $C/blind10_compiled_debug_print.py
        record blind10-jsonl-telemetry-generator $S -- python3 $C/blind10_jsonl_telemetry_generator.py
        record blind10-cell-count-postprocess $S -- python3 $C/blind10_cell_count_postprocess.py
        record blind10-pointcloud-split-cap $S -- python3 $C/blind10_pointcloud_split_cap.py
        record blind10-moe-scalar-logging $S -- python3 $C/blind10_moe_scalar_logging.py
    elif [ "$SET" = blind11 ]; then
        # Batch 11 of the held-out programs (one GPU), expected verdicts in
        # tests/corpus/BLIND11_EXPECTED.md, written before their first recording.
        S=--python-stacks
        record_cu blind11-md-host-neighbor-list $C/blind11_md_host_neighbor_list.cu
        record blind11-triton-mil-constexpr-len $S -- python3 $C/blind11_triton_mil_constexpr_len.py
        record blind11-jpeg-thread-queue $S -- python3 $C/blind11_jpeg_thread_queue.py
        record blind11-shallow-water-gauges $S -- python3 $C/blind11_shallow_water_gauges.py
        record blind11-instance-mask-export $S -- env BLIND_STEPS=30 python3 $C/blind11_instance_mask_export.py
        record blind11-gru-session-accum $S -- env BLIND_STEPS=16 BLIND_EVAL_EVERY=5 python3 $C/blind11_gru_session_accum.py
        record blind11-satellite-nonblocking-upload $S -- \
            python3 $C/blind11_satellite_nonblocking_upload.py
    elif [ "$SET" = blind12 ]; then
        # Batch 12 of the held-out programs (one GPU), expected verdicts in
        # tests/corpus/BLIND12_EXPECTED.md, written before their first recording.
        S=--python-stacks
        record_cu blind12-heat-sweep-value-temporaries $C/blind12_heat_sweep_value_temporaries.cu
        record blind12-recurrent-ppo-reacher $S -- python3 $C/blind12_recurrent_ppo_reacher.py
        record blind12-compiled-detr-host-matching $S -- \
            python3 $C/blind12_compiled_detr_host_matching.py
        record blind12-triton-nbody-progress-bar $S -- python3 $C/blind12_triton_nbody_progress_bar.py
        record blind12-volume-elastic-loader $S -- python3 $C/blind12_volume_elastic_loader.py
        record blind12-tenant-model-swap $S -- python3 $C/blind12_tenant_model_swap.py
    elif [ "$SET" = blind13 ]; then
        # Batch 13 of the held-out programs (one GPU), expected verdicts in
        # tests/corpus/BLIND13_EXPECTED.md, written before their first recording.
        S=--python-stacks
        record_cu blind13-beamformer-pageable-streams $C/blind13_beamformer_pageable_streams.cu
        record blind13-progressive-resize-compiled $S -- \
            python3 $C/blind13_progressive_resize_compiled.py
        record blind13-asr-duration-batches $S -- python3 $C/blind13_asr_duration_batches.py
        record blind13-molecule-loop-gnn $S -- python3 $C/blind13_molecule_loop_gnn.py
        record blind13-dqn-prioritized-sumtree $S -- python3 $C/blind13_dqn_prioritized_sumtree.py
        record blind13-padded-embedding-server $S -- python3 $C/blind13_padded_embedding_server.py
    elif [ "$SET" = blind13-ddp ]; then
        # Batch 13's two-GPU programs (DDP under torchrun, NCCL): one trace per rank.
        S=--python-stacks
        record "blind13-ddp-ctr-accum-no-sync.rank%q{RANK}" $S -- \
            torchrun --standalone --nproc_per_node=2 $C/blind13_ddp_ctr_accum_no_sync.py
        record "blind13-ddp-length-grouped-shards.rank%q{RANK}" $S -- \
            torchrun --standalone --nproc_per_node=2 $C/blind13_ddp_length_grouped_shards.py
    elif [ "$SET" = blind14 ]; then
        # Batch 14 of the held-out programs (one GPU), expected verdicts in
        # tests/corpus/BLIND14_EXPECTED.md, written before their first recording.
        S=--python-stacks
        record_cu blind14-lidar-voxel-cub-temp $C/blind14_lidar_voxel_cub_temp.cu
        record blind14-gan-health-monitor $S -- python3 $C/blind14_gan_health_monitor.py
        record blind14-trainer-histogram-callback $S -- \
            python3 $C/blind14_trainer_histogram_callback.py
        record blind14-compiled-dgcnn-rooms $S -- python3 $C/blind14_compiled_dgcnn_rooms.py
        record blind14-ddim-guided-sampler $S -- python3 $C/blind14_ddim_guided_sampler.py
        record blind14-impala-actor-queue $S -- python3 $C/blind14_impala_actor_queue.py
        record blind14-kmeans-host-chunks $S -- python3 $C/blind14_kmeans_host_chunks.py
    elif [ "$SET" = blind14-ddp ]; then
        # Batch 14's two-GPU program (DDP under torchrun, NCCL): one trace per rank.
        S=--python-stacks
        record "blind14-ddp-rank0-eval-barrier.rank%q{RANK}" $S -- \
            torchrun --standalone --nproc_per_node=2 $C/blind14_ddp_rank0_eval_barrier.py
    elif [ "$SET" = blind15 ]; then
        # Batch 15 of the held-out programs (one GPU), expected verdicts in
        # tests/corpus/BLIND15_EXPECTED.md, written before their first recording.
        S=--python-stacks
        record_cu blind15-var-scenario-sync-d2h $C/blind15_var_scenario_sync_d2h.cu
        record blind15-nafnet-denoise-fp32 $S -- python3 $C/blind15_nafnet_denoise_fp32.py
        record blind15-yolox-simota-masks $S -- python3 $C/blind15_yolox_simota_masks.py
        record blind15-pathology-tile-loader $S -- python3 $C/blind15_pathology_tile_loader.py
        record blind15-bm25-rerank-service $S -- python3 $C/blind15_bm25_rerank_service.py
        record blind15-neural-ode-rk4 $S -- python3 $C/blind15_neural_ode_rk4.py
        record blind15-compiled-layerdrop-encoder $S -- \
            python3 $C/blind15_compiled_layerdrop_encoder.py
    elif [ "$SET" = blind15-ddp ]; then
        # Batch 15's two-GPU program (DDP under torchrun, NCCL): one trace per rank.
        S=--python-stacks
        record "blind15-ddp-crowd-scene-shards.rank%q{RANK}" $S -- \
            torchrun --standalone --nproc_per_node=2 $C/blind15_ddp_crowd_scene_shards.py
    elif [ "$SET" = blind16 ]; then
        # Batch 16 of the held-out programs (one GPU), expected verdicts in
        # tests/corpus/BLIND16_EXPECTED.md, written before their first recording.
        S=--python-stacks
        record_cu blind16-fx-correlator-pinned-per-block $C/blind16_fx_correlator_pinned_per_block.cu
        record blind16-ocr-ctc-lexicon-beam $S -- python3 $C/blind16_ocr_ctc_lexicon_beam.py
        record blind16-credit-csv-shard-workers $S -- python3 $C/blind16_credit_csv_shard_workers.py
        record blind16-feed-rerank-business-rules $S -- \
            python3 $C/blind16_feed_rerank_business_rules.py
        record blind16-wavenet-incremental-vocoder $S -- \
            python3 $C/blind16_wavenet_incremental_vocoder.py
        record blind16-compiled-forecast-lookbacks $S -- \
            python3 $C/blind16_compiled_forecast_lookbacks.py
        record blind16-weather-vit-accum-trainer $S -- python3 $C/blind16_weather_vit_accum_trainer.py
        record blind16-patent-search-host-index $S -- python3 $C/blind16_patent_search_host_index.py
    elif [ "$SET" = blind17 ]; then
        # Batch 17 of the held-out programs (one GPU), expected verdicts in
        # tests/corpus/BLIND17_EXPECTED.md, written before their first recording.
        S=--python-stacks
        record_cu blind17-fem-assembly-thread-workspaces $C/blind17_fem_assembly_thread_workspaces.cu
        record blind17-speech-enhance-reverb-mix-loader $S -- \
            python3 $C/blind17_speech_enhance_reverb_mix_loader.py
        record blind17-protein-torsion-host-features $S -- \
            python3 $C/blind17_protein_torsion_host_features.py
        record blind17-sensor-anomaly-channel-alerts $S -- \
            python3 $C/blind17_sensor_anomaly_channel_alerts.py
        record blind17-edsr-x4-large-crops $S -- python3 $C/blind17_edsr_x4_large_crops.py
        record blind17-ctr-field-gated-embeddings $S -- python3 $C/blind17_ctr_field_gated_embeddings.py
        record blind17-ct-slab-fbp-pageable $S -- python3 $C/blind17_ct_slab_fbp_pageable.py
        record blind17-compiled-action-clip-server $S -- \
            python3 $C/blind17_compiled_action_clip_server.py
    elif [ "$SET" = blind18 ]; then
        # Batch 18 of the held-out programs (one GPU), expected verdicts in
        # tests/corpus/BLIND18_EXPECTED.md, written before their first recording.
        S=--python-stacks
        record_cu blind18-pathtracer-bounce-malloc $C/blind18_pathtracer_bounce_malloc.cu
        record blind18-dna-enhancer-fasta-loader $S -- \
            python3 $C/blind18_dna_enhancer_fasta_loader.py
        record blind18-traffic-signal-numpy-env $S -- \
            python3 $C/blind18_traffic_signal_numpy_env.py
        record blind18-cloth-xpbd-substeps $S -- python3 $C/blind18_cloth_xpbd_substeps.py
        record blind18-lora-instruct-finetune $S -- python3 $C/blind18_lora_instruct_finetune.py
        record blind18-seismic-fd-wavefield $S -- python3 $C/blind18_seismic_fd_wavefield.py
        record blind18-highway-tracker-item-loop $S -- \
            python3 $C/blind18_highway_tracker_item_loop.py
        record blind18-hyperspectral-tile-pageable $S -- \
            python3 $C/blind18_hyperspectral_tile_pageable.py
    elif [ "$SET" = blind19 ]; then
        # Batch 19 of the held-out programs (one GPU), expected verdicts in
        # tests/corpus/BLIND19_EXPECTED.md, written before their first recording.
        S=--python-stacks
        record_cu blind19-pic-host-collisions $C/blind19_pic_host_collisions.cu
        record blind19-stem-separation-mix-loader $S -- \
            python3 $C/blind19_stem_separation_mix_loader.py
        record blind19-two-tower-market-metrics $S -- \
            python3 $C/blind19_two_tower_market_metrics.py
        record blind19-lbm-cylinder-wake $S -- python3 $C/blind19_lbm_cylinder_wake.py
        record blind19-nerf-lego-rays $S -- python3 $C/blind19_nerf_lego_rays.py
        record blind19-mri-sense-recon-service $S -- \
            python3 $C/blind19_mri_sense_recon_service.py
        record blind19-handwriting-ctc-lines $S -- python3 $C/blind19_handwriting_ctc_lines.py
        record blind19-othello-selfplay-arena $S -- \
            python3 $C/blind19_othello_selfplay_arena.py
    elif [ "$SET" = blind20 ]; then
        # Batch 20 of the held-out programs (one GPU), expected verdicts in
        # tests/corpus/BLIND20_EXPECTED.md, written before their first recording.
        S=--python-stacks
        record_cu blind20-tightbinding-scf-purification $C/blind20_tightbinding_scf_purification.cu
        record blind20-code-gpt-naive-attention $S -- python3 $C/blind20_code_gpt_naive_attention.py
        record blind20-lob-backtest-pageable-windows $S -- \
            python3 $C/blind20_lob_backtest_pageable_windows.py
        record blind20-dermoscopy-augment-workers $S -- \
            python3 $C/blind20_dermoscopy_augment_workers.py
        record blind20-churn-sweep-compile-per-trial $S -- \
            python3 $C/blind20_churn_sweep_compile_per_trial.py
        record blind20-epidemic-abm-region-policy $S -- \
            python3 $C/blind20_epidemic_abm_region_policy.py
        record blind20-grid-load-substation-features $S -- \
            python3 $C/blind20_grid_load_substation_features.py
        record blind20-layout-service-empty-cache $S -- \
            python3 $C/blind20_layout_service_empty_cache.py
    elif [ "$SET" = blind21 ]; then
        # Batch 21 of the held-out programs (one GPU), expected verdicts in
        # tests/corpus/BLIND21_EXPECTED.md, written before their first recording.
        S=--python-stacks
        record_cu blind21-pulse-doppler-cpi-buffers $C/blind21_pulse_doppler_cpi_buffers.cu
        record blind21-sar-ship-chip-loader $S -- python3 $C/blind21_sar_ship_chip_loader.py
        record blind21-warehouse-fleet-astar-dispatch $S -- \
            python3 $C/blind21_warehouse_fleet_astar_dispatch.py
        record blind21-constellation-rk4-conjunction $S -- \
            python3 $C/blind21_constellation_rk4_conjunction.py
        record blind21-flame-chemistry-newton-blocks $S -- \
            python3 $C/blind21_flame_chemistry_newton_blocks.py
        record blind21-protein-mlm-pretrain $S -- python3 $C/blind21_protein_mlm_pretrain.py
        record blind21-border-face-gallery-upload $S -- \
            python3 $C/blind21_border_face_gallery_upload.py
        record blind21-holter-ecg-compiled-lengths $S -- \
            python3 $C/blind21_holter_ecg_compiled_lengths.py
    elif [ "$SET" = blind22 ]; then
        # Batch 22 of the held-out programs (one GPU), expected verdicts in
        # tests/corpus/BLIND22_EXPECTED.md, written before their first recording.
        S=--python-stacks
        record_cu blind22-sfx-hitfinder-pageable-frames $C/blind22_sfx_hitfinder_pageable_frames.cu
        record blind22-era5-downscaling-resumed $S -- python3 $C/blind22_era5_downscaling_resumed.py
        record blind22-storm-surge-swe-substeps $S -- \
            python3 $C/blind22_storm_surge_swe_substeps.py
        record blind22-pileup-variant-accum-syncs $S -- \
            python3 $C/blind22_pileup_variant_accum_syncs.py
        record blind22-binpick-cells-grasp-check $S -- \
            python3 $C/blind22_binpick_cells_grasp_check.py
        record blind22-receipt-ocr-crnn-loader $S -- \
            python3 $C/blind22_receipt_ocr_crnn_loader.py
        record blind22-cryoem-picker-empty-cache $S -- \
            python3 $C/blind22_cryoem_picker_empty_cache.py
        record blind22-ranker-service-shape-recompiles $S -- \
            python3 $C/blind22_ranker_service_shape_recompiles.py
    elif [ "$SET" = blind23 ]; then
        # Batch 23 of the held-out programs (one GPU), expected verdicts in
        # tests/corpus/BLIND23_EXPECTED.md, written before their first recording.
        S=--python-stacks
        record_cu blind23-darcy-multigrid-check-sync $C/blind23_darcy_multigrid_check_sync.cu
        record blind23-seismic-faults-unet3d $S -- python3 $C/blind23_seismic_faults_unet3d.py
        record blind23-fleet-ekf-bank-launches $S -- \
            python3 $C/blind23_fleet_ekf_bank_launches.py
        record blind23-hvac-ppo-numpy-env $S -- python3 $C/blind23_hvac_ppo_numpy_env.py
        record blind23-birdsong-ast-loader $S -- python3 $C/blind23_birdsong_ast_loader.py
        record blind23-lightsheet-denoise-pageable $S -- \
            python3 $C/blind23_lightsheet_denoise_pageable.py
        record blind23-radar-nowcast-uncached $S -- \
            python3 $C/blind23_radar_nowcast_uncached.py
        record blind23-windfarm-horizon-recompiles $S -- \
            python3 $C/blind23_windfarm_horizon_recompiles.py
    elif [ "$SET" = blind24 ]; then
        # Batch 24 of the held-out programs (one GPU), expected verdicts in
        # tests/corpus/BLIND24_EXPECTED.md, written before their first recording.
        S=--python-stacks
        record_cu blind24-cloth-pbd-tiny-kernels $C/blind24_cloth_pbd_tiny_kernels.cu
        record blind24-ecg-arrhythmia-loader $S -- python3 $C/blind24_ecg_arrhythmia_loader.py
        record blind24-epidemic-abm-surrogate $S -- \
            python3 $C/blind24_epidemic_abm_surrogate.py
        record blind24-croptype-metrics-syncs $S -- \
            python3 $C/blind24_croptype_metrics_syncs.py
        record blind24-mri-unrolled-recon $S -- python3 $C/blind24_mri_unrolled_recon.py
        record blind24-traffic-gnn-nocache $S -- python3 $C/blind24_traffic_gnn_nocache.py
        record blind24-battery-pack-launches $S -- \
            python3 $C/blind24_battery_pack_launches.py
        record blind24-piv-pageable-frames $S -- python3 $C/blind24_piv_pageable_frames.py
    elif [ "$SET" = sampled ]; then
        S=--python-stacks
        record blind-camera-paced-sampled $S -- python3 $C/blind_camera_paced.py
        record blind-loader-pageable-sampled $S -- python3 $C/blind_loader_pageable.py
        record input-slow-loader-sampled $S -- python3 $C/input_slow_loader.py
        record input-main-process-sampled $S -- python3 $C/input_main_process.py
        record python-between-launches-sampled $S -- python3 $C/python_between_launches.py
        record blind-thread-server-sampled $S -- python3 $C/blind_thread_server.py
        record launch-bound-sampled -- python3 $C/launch_bound.py
        record gemm-steps-sampled -- python3 $C/gemm_steps.py
    elif [ "$SET" = blind3-ddp ]; then
        record "blind-ddp-slow-rank-loader.rank%q{RANK}" -- \
            torchrun --standalone --nproc_per_node=2 $C/blind_ddp_slow_rank_loader.py
    else
        for mode in exposed straggler; do
            record "ddp-$mode.rank%q{RANK}" -- \
                torchrun --standalone --nproc_per_node=2 $C/ddp_train.py --mode "$mode"
        done
    fi
    ls -la "$t"
    echo "failures: $failures"
} > "$OUT/corpus.log" 2>&1
rm -f "$t"/*.out
if [ -n "${XZ_EACH:-}" ]; then
    # Each trace was xz-compressed on its own as it was recorded (after_recording).
    rm -rf "$t"
    # The machine returns at most 8 files: more traces come back as one tar in 15 MiB parts
    # (cat traces.tar.* | tar -x).
    if [ "$(ls "$OUT" | wc -l)" -gt 7 ]; then
        (cd "$OUT" && tar -cf - ./*.xz* | split -b 15M - traces.tar. && rm -f ./*.xz*)
    fi
else
    tar -C "$OUT" -czf "$OUT/corpus-$SET.tgz" corpus && rm -rf "$t"
fi
cat "$OUT/corpus.log"
exit "$failures"
