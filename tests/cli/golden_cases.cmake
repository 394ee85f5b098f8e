# name, expected exit code, arguments
kvcap_golden(plan_table 0 plan --model llama-3.1-70b --gpu h100-sxm --tensor-parallel-size 4 --max-model-len 32K --contexts 1K,8K,32K,128K)
kvcap_golden(plan_json 0 plan --model deepseek-v2-lite --gpu l4 --tensor-parallel-size 2 --pipeline-parallel-size 2 --kv-cache-memory 12.13GiB,11.33GiB --max-model-len 1024 --contexts 1K,4K --format json)
kvcap_golden(plan_csv 0 plan --model mistral-7b-v0.1 --gpu h100-sxm --format csv)
kvcap_golden(compare_table 0 compare)
kvcap_golden(compare_csv 0 compare --deploy llama-3.1-8b@h100-sxm --deploy deepseek-v3@8xh200 --contexts 4K,128K --format csv)
kvcap_golden(import_hf_mixtral 0 import-hf %FIXTURES%/hf/Mixtral-8x7B-v0.1.json --name mixtral-8x7b)
kvcap_golden(plan_pp_stages 0 plan --model llama-3.1-405b --gpu h100-sxm --tensor-parallel-size 8 --pipeline-parallel-size 2 --kv-cache-dtype fp8 --max-model-len 128K --contexts 8K,128K)
kvcap_golden(plan_does_not_fit 3 plan --model llama-3.1-70b --gpu h100-sxm --contexts 1K)
kvcap_golden(plan_host_tier 0 plan --model llama-3.1-8b --gpu h200 --kv-offloading-size 64 --calibration %SOURCE%/profiles/calibrations/h200-2026-11-26.yaml --contexts 1K,8K,128K)
kvcap_golden(plan_host_tier_json 0 plan --model llama-3.1-70b --gpu h100-sxm --tensor-parallel-size 4 --pipeline-parallel-size 2 --kv-offloading-size 256 --contexts 4K,64K --format json)
kvcap_golden(plan_host_tier_hybrid 2 plan --model gpt-oss-20b --gpu h100-sxm --kv-offloading-size 64)
kvcap_golden(plan_what_if_cla_json 0 plan --model deepseek-v3 --gpu h200 --tensor-parallel-size 8 --kv-layer-sharing cla:2 --contexts 128K --format json)
kvcap_golden(err_what_if_cla_hybrid 2 plan --model gpt-oss-20b --gpu h100-sxm --kv-layer-sharing cla:2)
kvcap_golden(err_unknown_model 1 plan --model llama-3.1-8 --gpu h100-sxm)
kvcap_golden(err_bad_yaml 1 plan --model %DATA%/bad_syntax.yaml --gpu h100-sxm)
kvcap_golden(err_bad_fields 1 plan --model %DATA%/bad_fields.yaml --gpu h100-sxm)
kvcap_golden(err_bad_flag 2 plan --model llama-3.1-8b --gpu h100-sxm --max-model-len 12X)
kvcap_golden(err_mamba_max_num_seqs 3 simulate --model nemotron-3-nano-30b-a3b --gpu h100-sxm --max-model-len 131072 --rate 1 --num-requests 10 --prompt-tokens 100 --output-tokens 10)
kvcap_golden(err_simulate_weights_do_not_fit 3 simulate --model llama-3.1-70b --gpu l4 --rate 1 --num-requests 10)
kvcap_golden(err_override_pool_too_small 3 plan --model llama-3.1-8b --gpu h100-sxm --max-model-len 32K --num-gpu-blocks-override 100 --contexts 4K,32K)
kvcap_golden(plan_trtllm_kv_budget 0 plan --model llama-3.1-70b --gpu h100-sxm --tensor-parallel-size 2 --quantization fp8 --engine trtllm --max-model-len 8K --contexts 4K,8K)
kvcap_golden(plan_trtllm_vllm_budget_json 0 plan --model llama-3.1-70b --gpu h100-sxm --tensor-parallel-size 2 --quantization fp8 --engine trtllm --gpu-memory-utilization 0.9 --max-model-len 8K --contexts 8K --format json)
kvcap_golden(err_free_fraction_range 2 plan --model llama-3.1-8b --gpu h100-sxm --free-gpu-memory-fraction 1.5)
kvcap_golden(err_two_kv_budgets 2 plan --model llama-3.1-8b --gpu h100-sxm --gpu-memory-utilization 0.8 --free-gpu-memory-fraction 0.9)
# TensorRT-LLM lowers a max_seq_len its cache cannot hold (vLLM would refuse to start): plan and compare say so.
kvcap_golden(plan_trtllm_lowered_len 0 plan --model llama-3.1-70b --gpu h100-sxm --tensor-parallel-size 2 --engine trtllm --contexts 32K,64K)
# Its fit advice and size count only deployments that hold the length asked for; vLLM's block override is refused.
kvcap_golden(plan_trtllm_fit_advice 3 plan --model llama-3.1-70b --gpu h100-sxm --engine trtllm --contexts 8K)
kvcap_golden(size_trtllm_lowered_len 0 size --model llama-3.1-70b --prompt-tokens 2K --output-tokens 256 --rate 1 --ttft-p 60s --tpot 500ms --gpus h100-sxm --engine trtllm --max-model-len 131072 --top 2 --explain)
kvcap_golden(err_trtllm_blocks_override 1 plan --model llama-3.1-8b --gpu h100-sxm --engine trtllm --num-gpu-blocks-override 100)
kvcap_golden(compare_trtllm_lowered_len 0 compare --deploy llama-3.1-70b@4xh100-sxm "--deploy=llama-3.1-70b@2xh100-sxm --free-gpu-memory-fraction 0.9" --contexts 32K,64K)
kvcap_golden(err_mixed_chunk_engine 2 simulate --model llama-3.1-8b --gpu h100-sxm --engine vllm --enable-mixed-chunk --rate 4 --num-requests 10 --prompt-tokens 100 --output-tokens 10)
kvcap_golden(err_bad_tp 3 plan --model llama-3.1-8b --gpu h100-sxm --tensor-parallel-size 3)
kvcap_golden(err_missing_file 1 plan --model /nonexistent/model.yaml --gpu h100-sxm)
kvcap_golden(err_unknown_command 2 plna)
kvcap_golden(help_plan 0 plan --help)
kvcap_golden(plan_speed_table 0 plan --model llama-3.1-8b --gpu h100-sxm --batch 32 --prompt-tokens 2K --output-tokens 512 --contexts 4K)
kvcap_golden(err_bad_batch 2 plan --model llama-3.1-8b --gpu h100-sxm --batch -4)
kvcap_golden(plan_calibrated 0 plan --model llama-3.1-8b --gpu h200 --batch 8 --prompt-tokens 2K --contexts 4K --calibration %DATA%/calibration-example.yaml)
kvcap_golden(err_bad_calibration 1 plan --model llama-3.1-8b --gpu h200 --calibration %DATA%/bad_syntax.yaml)
kvcap_golden(size_table 0 size --model llama-3.1-70b --prompt-tokens 2K --output-tokens 256 --rate 10 --ttft-p 2s --tpot 50ms --gpus h100-sxm,h200,a100-80gb --max-pp 2)
kvcap_golden(size_workload_explain 0 size --model llama-3.1-8b --workload %DATA%/workload_rag.yaml --gpus l4,l40s --max-tp 2 --max-pp 1 --kv-cache-dtype fp8 --explain)
kvcap_golden(size_closed_csv 0 size --model mixtral-8x7b --prompt-tokens 1K --output-tokens 512 --concurrent-users 200 --ttft-p 1s --ttft-percentile 99 --tpot 40ms --gpus h100-sxm,a100-80gb --max-pp 1 --price h100-sxm=2.2 --top 3 --format csv)
kvcap_golden(size_json 0 size --model deepseek-v3 --prompt-tokens 4K --output-tokens 1K --rate 2 --ttft-p 5s --tpot 80ms --gpus h200 --max-pp 1 --kv-cache-dtype auto --format json)
kvcap_golden(help_size 0 size --help)
kvcap_golden(help_import_hf 0 import-hf --help)
kvcap_golden(err_size_zero_tpot 2 size --model llama-3.1-8b --prompt-tokens 1K --output-tokens 128 --rate 5 --ttft-p 1s --tpot 0ms)
kvcap_golden(err_size_negative_ttft 2 size --model llama-3.1-8b --prompt-tokens 1K --output-tokens 128 --rate 5 --ttft-p -2s --tpot 50ms)
# A rate so low that the costs per token run to 7 and more digits: compact figures, every column apart.
kvcap_golden(size_low_rate_costs 0 size --model llama-3.1-8b --prompt-tokens 512 --output-tokens 128 --rate 1e-6 --ttft-p 1s --tpot 50ms --gpus h100-sxm --top 2)
kvcap_golden(err_size_zero_rate 2 size --model llama-3.1-8b --prompt-tokens 1K --output-tokens 128 --rate 0 --ttft-p 1s --tpot 50ms)
kvcap_golden(err_size_percentile 2 size --model llama-3.1-8b --prompt-tokens 1K --output-tokens 128 --rate 5 --ttft-p 1s --ttft-percentile 100 --tpot 50ms)
kvcap_golden(err_size_rate_and_users 2 size --model llama-3.1-8b --prompt-tokens 1K --output-tokens 128 --rate 5 --concurrent-users 8 --ttft-p 1s --tpot 50ms)
kvcap_golden(err_size_impossible 1 size --model llama-3.1-8b --prompt-tokens 1K --output-tokens 128 --rate 5 --ttft-p 1s --tpot 100us --gpus h100-sxm,h200)
kvcap_golden(err_size_calibration_gpus 2 size --model llama-3.1-8b --prompt-tokens 1K --output-tokens 128 --rate 5 --ttft-p 1s --tpot 50ms --gpus h100-sxm,h200 --calibration %DATA%/calibration-example.yaml)
kvcap_golden(sweep_csv 0 sweep --models llama-3.1-8b,deepseek-v2-lite --gpus h100-sxm --tensor-parallel-sizes 1,2 --contexts 1K,32K --batches 1,64)
kvcap_golden(sweep_json 0 sweep --models mixtral-8x7b --gpus a100-80gb --tensor-parallel-size 2 --contexts 4K --batches 1,8 --format json)
kvcap_golden(err_sweep_no_models 2 sweep --gpus h100-sxm)
kvcap_golden(err_sweep_bad_batch 2 sweep --models llama-3.1-8b --gpus h100-sxm --batches 1,0)
# kvcap validate / check (issue 4): every problem with file:line:col, three formats, exit codes.
kvcap_golden(validate_ok 0 validate %DATA%/../../profiles/examples)
kvcap_golden(validate_errors 1 validate %DATA%/validate)
kvcap_golden(validate_errors_github 1 validate %DATA%/validate --format github)
kvcap_golden(validate_errors_json 1 validate %DATA%/validate/deploy-bad-tp.yaml --format json)
kvcap_golden(validate_missing_path 1 validate %DATA%/no-such-folder)
kvcap_golden(validate_no_args 2 validate)
kvcap_golden(validate_bad_format 2 validate %DATA%/validate --format xml)
kvcap_golden(check_example 0 check %DATA%/../../profiles/examples/requirements.yaml)
kvcap_golden(check_failing 1 check %DATA%/requirements-failing.yaml)
kvcap_golden(check_failing_json 1 check %DATA%/requirements-failing.yaml --format json)
kvcap_golden(check_invalid_file 1 check %DATA%/validate/requirements-bad.yaml)
kvcap_golden(check_missing_file 1 check %DATA%/no-such-requirements.yaml)
kvcap_golden(check_no_args 2 check)
kvcap_golden(simulate_table 0 simulate --model llama-3.1-8b --gpu h100-sxm --rate 4 --prompt-tokens lognormal:mean=1K,sigma=0.8,max=8K --output-tokens uniform:16-256 --num-requests 300 --seed 1 --ttft-target 500ms --tpot-target 20ms --no-wall-time)
kvcap_golden(simulate_trace_json 0 simulate --model llama-3.1-70b --gpu h100-sxm --tensor-parallel-size 4 --num-gpus 8 --router lor --trace %FIXTURES%/traces/AzureLLMInferenceTrace_conv.csv --num-requests 400 --trace-speedup 4 --format json --no-wall-time)
kvcap_golden(simulate_contiguous 0 simulate --model llama-3.1-8b --gpu l4 --max-model-len 4K --allocator contiguous --rate 2 --prompt-tokens 1K --output-tokens 128 --num-requests 100 --no-wall-time)
kvcap_golden(simulate_host_tier 0 simulate --model llama-3.1-8b --gpu h200 --kv-cache-memory 12GiB --max-model-len 32K --workload %SOURCE%/profiles/examples/workload-multi-turn.yaml --num-requests 600 --kv-offloading-size 64 --calibration %SOURCE%/profiles/calibrations/h200-2026-11-26.yaml --no-wall-time)
kvcap_golden(simulate_host_tier_no_link 2 simulate --model llama-3.1-8b --gpu b200 --rate 1 --prompt-tokens 1K --output-tokens 100 --num-requests 10 --kv-offloading-size 8)
kvcap_golden(err_trace_bad_row 1 simulate --model llama-3.1-8b --gpu h100-sxm --trace %DATA%/bad_trace.csv)
kvcap_golden(err_simulate_no_workload 2 simulate --model llama-3.1-8b --gpu h100-sxm --num-requests 10)
kvcap_golden(simulate_compare_allocators 0 simulate --model llama-3.1-8b --gpu h100-sxm --max-model-len 8K --allocator compare --rate 20 --prompt-tokens lognormal:mean=1K,sigma=0.8,max=6K --output-tokens uniform:32-512 --num-requests 1000 --no-wall-time)
# A closed loop compared: the benchmark's mean TTFT (first wave included) under the table, for both allocators.
kvcap_golden(simulate_compare_allocators_closed_loop 0 simulate --model llama-3.1-8b --gpu h100-sxm --max-model-len 8K --allocator compare --max-concurrency 32 --prompt-tokens 2K --output-tokens 200 --num-requests 320 --no-wall-time)
# Issue 13, the plausibility policy (docs/exit-codes-and-warnings.md): exit 3 when vLLM would not start or the
# work does not fit, exit 2 for a calibration from another device, a stable code on stderr.
kvcap_golden(plan_batch_does_not_fit 3 plan --model llama-3.1-8b --gpu h100-sxm --batch 1000000000 --contexts 4K --format json)
kvcap_golden(plan_batch_2000_100k 3 plan --model llama-3.1-8b --gpu h100-sxm --batch 2000 --prompt-tokens 100K --contexts 4K)
kvcap_golden(plan_context_beyond_max_model_len 3 plan --model llama-3.1-8b --gpu h100-sxm --max-model-len 4K --prompt-tokens 4K --output-tokens 512 --contexts 4K)
kvcap_golden(plan_kv_beyond_device 3 plan --model llama-3.1-8b --gpu h100-sxm --kv-cache-memory 500GiB --contexts 4K)
kvcap_golden(err_calibration_other_gpu 2 plan --model llama-3.1-8b --gpu h100-sxm --calibration %DATA%/calibration-example.yaml --contexts 4K)
kvcap_golden(err_calibration_cpu 2 plan --model llama-3.1-8b --gpu h200 --calibration %DATA%/plausibility/calibration-cpu.yaml --contexts 4K)
kvcap_golden(plan_calibration_forced 0 plan --model llama-3.1-8b --gpu h100-sxm --calibration %DATA%/calibration-example.yaml --calibration-force --contexts 4K --batch 8)
kvcap_golden(err_size_calibration_other_gpu 2 size --model llama-3.1-8b --prompt-tokens 1K --output-tokens 128 --rate 5 --ttft-p 1s --tpot 50ms --gpus h100-sxm --calibration %DATA%/calibration-example.yaml)
kvcap_golden(err_sweep_calibration_cpu 2 sweep --models llama-3.1-8b --gpus h200 --contexts 4K --batches 1 --calibration %DATA%/plausibility/calibration-cpu.yaml)
kvcap_golden(compare_does_not_fit 3 compare --deploy llama-3.1-8b@h100-sxm --deploy llama-3.1-70b@h100-sxm --contexts 4K --format csv)
kvcap_golden(compare_model_files 3 compare --deploy %FIXTURES%/hf/gpt-oss-120b.json@1xh100-sxm --deploy %FIXTURES%/hf/Llama-4-Maverick-17B-128E-Instruct.json@8xh200 --deploy %SOURCE%/profiles/models/llama-3.1-70b.yaml@2xh200 --contexts 4K,32K)
kvcap_golden(check_kv_1tib 1 check %DATA%/plausibility/requirements-kv-1tib.yaml)
kvcap_golden(validate_kv_2p62 1 validate %DATA%/plausibility/deployment-kv-2p62.yaml)
kvcap_golden(check_failing_github 1 check %DATA%/requirements-failing.yaml --format github)
# Units required where a bare number is ambiguous; integers range-checked with the flag named.
kvcap_golden(err_size_bare_tpot 2 size --model llama-3.1-8b --prompt-tokens 1K --output-tokens 128 --rate 5 --ttft-p 1s --tpot 40)
kvcap_golden(err_size_bare_ttft 2 size --model llama-3.1-8b --prompt-tokens 1K --output-tokens 128 --rate 5 --ttft-p 2 --tpot 40ms)
kvcap_golden(err_num_gpus_range 2 plan --model llama-3.1-8b --gpu h100-sxm --num-gpus 1000000)
kvcap_golden(err_simulate_num_gpus_range 2 simulate --model llama-3.1-8b --gpu h100-sxm --num-gpus 1000000 --rate 1 --prompt-tokens 1K --output-tokens 16 --num-requests 10)
kvcap_golden(err_compare_deploy_overflow 2 compare --deploy llama-3.1-8b@99999999999999999999999xh100-sxm)
kvcap_golden(validate_calibration_bad_points 1 validate %DATA%/plausibility/calibration-bad-points.yaml)
kvcap_golden(err_model_param_overflow 1 plan --model %DATA%/plausibility/model-param-overflow.yaml --gpu h100-sxm)
kvcap_golden(plan_shared_prefix_beyond_max_model_len 3 plan --model llama-3.1-8b --gpu h100-sxm --shared-prefix-tokens 1M --contexts 4K)
kvcap_golden(err_simulate_calibration_other_gpu 2 simulate --model llama-3.1-8b --gpu h100-sxm --rate 1 --prompt-tokens 1K --output-tokens 16 --num-requests 10 --calibration %DATA%/calibration-example.yaml)
kvcap_golden(err_sweep_kv_beyond_device 3 sweep --models llama-3.1-8b --gpus h100-sxm --contexts 4K --batches 1 --kv-cache-memory 500GiB)
# Closed loop (vllm bench serve --max-concurrency) and offline (--rate inf) load
kvcap_golden(simulate_closed_loop 0 simulate --model llama-3.1-8b --gpu h100-sxm --max-concurrency 64 --prompt-tokens 4K --output-tokens 512 --num-requests 640 --no-wall-time)
# A closed loop's benchmark mean (first wave included) in JSON, with one-token answers: no TPOT, null not 0.
kvcap_golden(simulate_benchmark_one_token_json 0 simulate --model llama-3.1-8b --gpu h100-sxm --max-concurrency 8 --prompt-tokens 1500 --output-tokens 1 --num-requests 80 --format json --no-wall-time)
kvcap_golden(simulate_closed_loop_think_json 0 simulate --model llama-3.1-8b --gpu h100-sxm --max-concurrency 16 --think-time 2s --rate 50 --prompt-tokens 1K --output-tokens 128 --num-requests 200 --format json --no-wall-time)
kvcap_golden(err_simulate_rate_inf_duration 2 simulate --model llama-3.1-8b --gpu h100-sxm --rate inf --prompt-tokens 1K --output-tokens 128 --duration 60s)
# A workload file's closed loop: the flags that would describe it again are refused, pointing at the file's keys; it
# needs a number of requests, as --max-concurrency without --rate does; one length out of range names the flag.
kvcap_golden(err_simulate_closed_file_think_time 2 simulate --model llama-3.1-8b --gpu h100-sxm --workload %DATA%/workload_closed.yaml --think-time 3s --num-requests 5)
kvcap_golden(err_simulate_closed_file_duration 2 simulate --model llama-3.1-8b --gpu h100-sxm --workload %DATA%/workload_closed.yaml --duration 10s)
kvcap_golden(err_simulate_closed_flags_duration 2 simulate --model llama-3.1-8b --gpu h100-sxm --max-concurrency 4 --duration 5s --prompt-tokens 100 --output-tokens 10)
kvcap_golden(err_simulate_prompt_too_long 2 simulate --model llama-3.1-8b --gpu h100-sxm --rate 1 --prompt-tokens 99999999999 --output-tokens 10 --num-requests 5)
# Arrivals at a rate pace the clients: staggering them is refused, naming what it applies to.
kvcap_golden(err_simulate_stagger_paced 2 simulate --model llama-3.1-8b --gpu h100-sxm --rate 10 --max-concurrency 4 --client-start staggered --prompt-tokens 1K --output-tokens 128 --num-requests 10)
kvcap_golden(err_simulate_client_start_open_loop 2 simulate --model llama-3.1-8b --gpu h100-sxm --rate 5 --client-start together --prompt-tokens 1K --output-tokens 128 --num-requests 10)
kvcap_golden(err_simulate_think_open_loop 2 simulate --model llama-3.1-8b --gpu h100-sxm --rate 2 --think-time 1s --prompt-tokens 1K --output-tokens 128 --num-requests 10)
# A max_model_len beyond the model's derived maximum: vLLM refuses it (KVCAP-E111, exit 3), in plan and in size.
kvcap_golden(err_plan_beyond_model_max_len 3 plan --model llama-3.1-8b --gpu h200 --max-model-len 200K --format json)
kvcap_golden(err_size_beyond_model_max_len 3 size --model llama-3.1-8b --prompt-tokens 200K --output-tokens 256 --rate 0.05 --ttft-p 60s --tpot 200ms --gpus h200 --emit vllm)
# KV formats without an engine flag (fp16 under a bf16 model, kvcap's int8 what-if) are notes, not flags.
kvcap_golden(size_emit_kv_what_if 0 size --model llama-3.1-8b --prompt-tokens 1K --output-tokens 128 --rate 1 --ttft-p 2s --tpot 100ms --gpus h100-sxm --kv-cache-dtype int8 --emit vllm --top 1)
# A config.json with text after its object is refused (yaml-cpp read the object and dropped the rest); a list with an
# empty item is a typo.
kvcap_golden(err_validate_json_trailing_garbage 1 validate %DATA%/config_trailing_garbage.json)
kvcap_golden(err_sweep_empty_list_item 2 sweep --models llama-3.1-8b, --gpus h100-sxm)
# check: a deployment vLLM refuses for its max_model_len (E111) fails `fits` and leaves other promises unevaluated; their
# JSON figures are null.
kvcap_golden(check_beyond_model_max_len_json 1 check %DATA%/requirements_beyond_model_max_len.yaml --format json)
# --kv-cache-memory 0 is vLLM's 'not set' (its profiling run): refused, not planned as a cache of nothing.
kvcap_golden(err_plan_kv_cache_memory_zero 2 plan --model llama-3.1-8b --gpu h100-sxm --kv-cache-memory 0)
kvcap_golden(err_plan_overflow_names_flags 1 plan --model llama-3.1-8b --gpu h100-sxm --max-num-batched-tokens 9000000000000000)
kvcap_golden(validate_requirements_kv_1tib 1 validate %DATA%/plausibility/requirements-kv-1tib.yaml)
kvcap_golden(err_block_size_not_vllm 1 plan --model llama-3.1-8b --gpu h100-sxm --block-size 7)
# Bounded work and honest goodput (issue 13)
kvcap_golden(err_simulate_timeline_rows 2 simulate --model llama-3.1-8b --gpu h100-sxm --trace %DATA%/trace_two_rows_far.csv --timeline timeline-refused.csv)
# A closed loop outlasts its arrivals' span (0 s): the run stops at the row limit and removes its partial file.
kvcap_golden(err_simulate_timeline_rows_closed_loop 2 simulate --model llama-3.1-8b --gpu h100-sxm --max-concurrency 4 --think-time 5s --prompt-tokens 512 --output-tokens 64 --num-requests 2000 --timeline-interval 1us --timeline timeline-stopped.csv)
kvcap_golden(err_simulate_too_many_requests 2 simulate --model llama-3.1-8b --gpu h100-sxm --rate 1 --prompt-tokens 1K --output-tokens 16 --num-requests 1000000000)
kvcap_golden(simulate_goodput_rejected 0 simulate --model llama-3.1-8b --gpu h100-sxm --max-model-len 2K --rate 4 --prompt-tokens uniform:1K-3K --output-tokens 64 --num-requests 100 --ttft-target 1s --no-wall-time)
kvcap_golden(simulate_csv_hostile_name 0 simulate --model %DATA%/hostile-name-model.yaml --gpu h100-sxm --rate 2 --prompt-tokens 1K --output-tokens 16 --num-requests 20 --format csv --no-wall-time)
kvcap_golden(err_workload_prefix_longer_than_prompts 1 simulate --model llama-3.1-8b --gpu h100-sxm --workload %DATA%/workload_prefix_too_long.yaml --num-requests 10)
# size --max-concurrency is --concurrent-users in vllm bench serve's words: the same output as size_closed_csv.
kvcap_golden(size_closed_csv_max_concurrency 0 size --model mixtral-8x7b --prompt-tokens 1K --output-tokens 512 --max-concurrency 200 --ttft-p 1s --ttft-percentile 99 --tpot 40ms --gpus h100-sxm,a100-80gb --max-pp 1 --price h100-sxm=2.2 --top 3 --format csv)
kvcap_golden(err_size_users_twice 2 size --model llama-3.1-8b --prompt-tokens 1K --output-tokens 128 --max-concurrency 8 --concurrent-users 8 --ttft-p 1s --tpot 50ms)
# A linear-attention hybrid: the raised block size, the state per request, the KV cache groups.
kvcap_golden(plan_qwen3_next 0 plan --model qwen3-next-80b-a3b --gpu h200 --tensor-parallel-size 2 --max-model-len 32K --contexts 4K,32K)
# Expert parallelism: DeepSeek-V3 as DP 8 / EP 8 on 8 H200s.
kvcap_golden(plan_deepseek_ep8 0 plan --model deepseek-v3 --gpu h200 --num-gpus 8 --enable-expert-parallel --max-model-len 128K --contexts 32K,128K)
kvcap_golden(plan_gemma3_vision 0 plan --model gemma-3-27b --gpu h100-sxm --tensor-parallel-size 2 --contexts 8K,128K)
kvcap_golden(plan_gemma3_language_model_only 0 plan --model gemma-3-27b --gpu h100-sxm --tensor-parallel-size 2 --language-model-only --contexts 8K,128K)
kvcap_golden(plan_kivi_int2_group128_json 0 plan --model llama-3.1-8b --gpu h200 --kv-cache-dtype int2 --kv-quant-group-size 128 --contexts 128K --format json)
kvcap_golden(plan_eviction_streaming 0 plan --model llama-3.1-8b --gpu h200 --kv-eviction streaming:sink=4,window=4092 --contexts 4K,128K)
kvcap_golden(plan_eviction_h2o_json 0 plan --model llama-3.1-8b --gpu h200 --kv-eviction h2o:budget=0.2 --contexts 128K --format json)
kvcap_golden(err_plan_eviction_syntax 2 plan --model llama-3.1-8b --gpu h200 --kv-eviction h2o:budget=2x)
kvcap_golden(err_plan_eviction_sliding 2 plan --model gpt-oss-20b --gpu h200 --kv-eviction h2o:budget=0.2)
kvcap_golden(simulate_eviction_streaming 0 simulate --model llama-3.1-8b --gpu h200 --kv-cache-memory 16GiB --max-model-len 64K --kv-eviction streaming:sink=4,window=4092 --max-concurrency 64 --prompt-tokens 32K --output-tokens 512 --num-requests 128 --no-wall-time)
kvcap_golden(err_simulate_eviction_host_tier 2 simulate --model llama-3.1-8b --gpu h200 --kv-eviction h2o:budget=0.2 --kv-offloading-size 64 --rate 1 --prompt-tokens 1K --output-tokens 100 --num-requests 10)
# Commands that had no golden before the front ends became thin shells (issue 12): the scorecard over the published
# measurements (its MAPEs are those docs/accuracy.md records), the built-in list, a workload file in the text grammar.
kvcap_golden(accuracy_scorecard 0 accuracy --fixtures %FIXTURES%)
# The published expert-parallel and NVFP4 runs (docs/accuracy.md, "Large models"); not a gate, their errors pinned.
kvcap_golden(accuracy_large_models 0 accuracy --points %SOURCE%/bench/accuracy/large_models.json)
kvcap_golden(list_builtin 0 list)
kvcap_golden(simulate_load_test_text_lengths 0 simulate --model llama-3.1-8b --gpu h100-sxm --workload %SOURCE%/profiles/examples/workload-load-test.yaml --num-requests 300 --no-wall-time --no-progress)
# Multi-turn conversations (docs/simulator.md): the example file, its prefix-cache hit rate; runs whose duration or
# conversations imply more than 10^7 requests are refused with the estimate.
kvcap_golden(simulate_multi_turn 0 simulate --model llama-3.1-8b --gpu h100-sxm --engine vllm --workload %SOURCE%/profiles/examples/workload-multi-turn.yaml --duration 60s --no-wall-time)
kvcap_golden(err_simulate_endless_conversation 2 simulate --model llama-3.1-8b --gpu h100-sxm --workload %DATA%/workload_endless_conversation.yaml --duration 10s)
kvcap_golden(err_simulate_duration_too_many 2 simulate --model llama-3.1-8b --gpu h100-sxm --rate 1000 --duration 1000000s --prompt-tokens 100 --output-tokens 10)
kvcap_golden(size_multi_turn 0 size --model llama-3.1-8b --workload %SOURCE%/profiles/examples/workload-multi-turn.yaml --gpus h100-sxm --top 3)
# Issue 13 (second hostile-input pass): a usage error before any output; a device given as a trace.
kvcap_golden(err_plan_shared_prefix_beyond_prompt 2 plan --model llama-3.1-8b --gpu h100-sxm --shared-prefix-tokens 4K --prompt-tokens 1K --format csv)
kvcap_golden(err_simulate_trace_device 1 simulate --model llama-3.1-8b --gpu h100-sxm --trace /dev/zero)
# compare: N of MODEL@NxGPU is the GPUs of one replica; a conflicting --tensor-parallel-size is refused, and a
# MODEL@GPU row with flags for several GPUs is labelled with their count.
kvcap_golden(err_compare_deploy_tp_conflict 2 compare --deploy llama-3.1-70b@4xh100-sxm --tensor-parallel-size 2)
kvcap_golden(compare_deploy_flags_relabel 0 compare --deploy llama-3.1-70b@h100-sxm --deploy llama-3.1-8b@4xh100-sxm --tensor-parallel-size 4 --pipeline-parallel-size 1 --contexts 8K --format csv)
# simulate --shared-prefix-tokens: every prompt begins with the prefix (one group, all requests); longer than the
# longest prompt it is KVCAP-E108 (exit 2).
kvcap_golden(simulate_shared_prefix_flag 0 simulate --model llama-3.1-8b --gpu h100-sxm --rate 20 --prompt-tokens 2K --output-tokens 64 --num-requests 300 --shared-prefix-tokens 1536 --no-wall-time --format csv)
kvcap_golden(err_simulate_shared_prefix_beyond_prompt 2 simulate --model llama-3.1-8b --gpu h100-sxm --rate 5 --prompt-tokens uniform:128-1K --output-tokens 64 --num-requests 10 --shared-prefix-tokens 2K)
kvcap_golden(plan_shared_prefix_short_contexts 0 plan --model llama-3.1-8b --gpu h100-sxm --shared-prefix-tokens 4K --contexts 1K,2K,8K --format csv)
# Requests beyond max_model_len: simulate with every request rejected reports no latency (null, not 0 s) and exits 3
# (E109); some rejected is W204; size refuses a max_model_len below the mean request (E104, exit 3).
kvcap_golden(err_simulate_all_rejected_json 3 simulate --model llama-3.1-8b --gpu h100-sxm --max-model-len 1K --rate 5 --prompt-tokens 2K --output-tokens 64 --num-requests 20 --no-wall-time --format json)
kvcap_golden(err_simulate_all_rejected_table 3 simulate --model llama-3.1-8b --gpu h100-sxm --max-model-len 1K --rate 5 --prompt-tokens 2K --output-tokens 64 --num-requests 20 --no-wall-time)
kvcap_golden(simulate_some_rejected_csv 0 simulate --model llama-3.1-8b --gpu h100-sxm --max-model-len 1K --rate 5 --prompt-tokens uniform:512-2K --output-tokens 64 --num-requests 20 --no-wall-time --format csv)
kvcap_golden(err_size_max_model_len_below_mean_request 3 size --model llama-3.1-8b --prompt-tokens 2K --output-tokens 256 --rate 5 --ttft-p 2s --tpot 50ms --max-model-len 1K --gpus h100-sxm)
# calibrate resolves --gpu before measuring: a misspelt GPU fails at once, not after minutes of kernels.
kvcap_golden(err_calibrate_unknown_gpu_first 1 calibrate --device cpu --quick --out /dev/null --gpu h100-sxmm)
# sweep: a context too long to prefill is an error before any row (not after the first context's rows).
kvcap_golden(err_sweep_context_too_long 1 sweep --models llama-3.1-8b --gpus h100-sxm --contexts 1K,1G --batches 1)
# Careless command lines: a stray word, a hexadecimal count, a list item twice, an empty folder to validate, a DCP
# vLLM refuses (exit 3, as a TP it refuses).
kvcap_golden(err_plan_stray_argument 2 plan --model llama-3.1-8b --gpu h100-sxm extra_arg)
kvcap_golden(err_plan_hex_tokens 2 plan --model llama-3.1-8b --gpu h100-sxm --max-model-len 0x1000)
kvcap_golden(err_sweep_duplicate_model 2 sweep --models llama-3.1-8b,llama-3.1-8b --gpus h100-sxm)
kvcap_golden(err_plan_duplicate_context 2 plan --model llama-3.1-8b --gpu h100-sxm --contexts 1K,1024)
kvcap_golden(err_validate_no_profiles 1 validate %DATA%/no-yaml)
kvcap_golden(err_plan_bad_dcp 3 plan --model llama-3.1-8b --gpu h100-sxm --tensor-parallel-size 2 --decode-context-parallel-size 4)
# A very low rate reads as itself (0.00202 req/s), not as 0.00.
kvcap_golden(simulate_very_low_rate 0 simulate --model llama-3.1-8b --gpu h100-sxm --rate 0.001 --prompt-tokens 1K --output-tokens 100 --num-requests 3 --no-wall-time)
# Red-team findings: sweep applies E106 (exit 3); a JUnit path with a profile's extension is refused (exit 2).
kvcap_golden(err_sweep_prefix_beyond_max_model_len 3 sweep --models mistral-7b-v0.1 --gpus h100-sxm --shared-prefix-tokens 64K --contexts 32K --batches 1)
kvcap_golden(sweep_prefix_warning_once 0 sweep --models llama-3.1-8b,qwen3-8b --gpus h100-sxm,h200 --contexts 1K,8K --batches 1 --shared-prefix-tokens 2048)
kvcap_golden(err_check_junit_profile_extension 2 check %SOURCE%/profiles/examples/requirements.yaml --junit %SOURCE%/profiles/examples/deployment-llama-3.1-70b-4xh100.yaml)
kvcap_golden(compare_deploy_data_parallel 0 compare --deploy llama-3.1-70b@4xh100-sxm --data-parallel-size 4 --contexts 8K --format csv)
# Careless input (issue 13): a GPU count that is not whole replicas, the same deployment, batch size or price twice.
kvcap_golden(err_num_gpus_not_whole_replicas 2 plan --model llama-3.1-8b --gpu h100-sxm --tensor-parallel-size 2 --num-gpus 3)
kvcap_golden(err_compare_deploy_twice 2 compare --deploy llama-3.1-8b@h100-sxm --deploy llama-3.1-8b@2xh200 --deploy llama-3.1-8b@h100-sxm)
kvcap_golden(err_sweep_batch_twice 2 sweep --models llama-3.1-8b --gpus h100-sxm --batches 1,8,01)
kvcap_golden(err_size_price_twice 2 size --model llama-3.1-8b --gpus h100-sxm --rate 1 --prompt-tokens 1K --output-tokens 100 --ttft-p 1s --tpot 50ms --price h100-sxm=2.2,h100-sxm=3)
kvcap_golden(err_size_max_model_len_json 3 size --model llama-3.1-8b --prompt-tokens 100K --output-tokens 1K --rate 1 --ttft-p 2s --tpot 50ms --max-model-len 8K --format json)
# The purchase answer (issue 17): best per GPU type, the Pareto frontier, launch commands that plan the same deployment.
kvcap_golden(size_emit_vllm 0 size --model qwen3-32b --prompt-tokens 1K --output-tokens 512 --concurrent-users 300 --ttft-p 1.5s --ttft-percentile 99 --tpot 40ms --gpus h100-sxm,h200,b200,l40s --top 5 --emit vllm)
kvcap_golden(size_emit_sglang_csv 0 size --model qwen3-32b --prompt-tokens 1K --output-tokens 512 --concurrent-users 300 --ttft-p 1.5s --ttft-percentile 99 --tpot 40ms --gpus h100-sxm,h200 --max-pp 1 --top 3 --emit sglang --format csv)
kvcap_golden(err_size_emit 2 size --model llama-3.1-8b --prompt-tokens 1K --output-tokens 128 --rate 5 --ttft-p 1s --tpot 50ms --emit trtllm)
kvcap_golden(size_verify 0 size --model llama-3.1-8b --prompt-tokens 2K --output-tokens 256 --rate 40 --ttft-p 500ms --tpot 30ms --gpus h100-sxm,l40s --max-tp 2 --max-pp 1 --kv-cache-dtype auto --top 3 --verify 2 --num-requests 1500 --threads 1)
kvcap_golden(size_trace_columns 0 size --model llama-3.1-8b --trace %DATA%/trace_custom_columns.csv --trace-columns sent_at,in_tokens,out_tokens --trace-speedup 2 --ttft-p 1s --tpot 50ms --gpus h100-sxm,l40s --max-tp 1 --max-pp 1 --top 2 --verify 1 --threads 1 --no-progress)
kvcap_golden(err_size_trace_speedup_without_trace 2 size --model llama-3.1-8b --rate 2 --prompt-tokens 1K --output-tokens 100 --trace-speedup 2 --ttft-p 1s --tpot 50ms)
kvcap_golden(err_size_trace_and_rate 2 size --model llama-3.1-8b --trace %FIXTURES%/traces/AzureLLMInferenceTrace_conv.csv --rate 5 --ttft-p 1s --tpot 50ms)
kvcap_golden(err_size_threads_without_verify 2 size --model llama-3.1-8b --prompt-tokens 1K --output-tokens 128 --rate 5 --ttft-p 1s --tpot 50ms --threads 2)
# Disaggregated prefill/decode (docs/disaggregation.md): simulate xPyD with the KV transfer in TTFT, size ranks xPyD
# beside aggregated deployments and emits both roles' commands, and the flags' errors.
kvcap_golden(simulate_disagg 0 simulate --model llama-3.1-8b --gpu h100-sxm --rate 10 --prompt-tokens 2K --output-tokens 256 --num-requests 500 --replicas 1 --prefill-replicas 1 --prefill-tp 2 --no-wall-time)
kvcap_golden(simulate_disagg_json 0 simulate --model llama-3.1-8b --gpu h100-sxm --rate 10 --prompt-tokens 2K --output-tokens 256 --num-requests 200 --prefill-replicas 1 --kv-transfer-link nvlink --no-wall-time --format json)
kvcap_golden(err_simulate_prefill_gpu_alone 2 simulate --model llama-3.1-8b --gpu h100-sxm --rate 10 --prompt-tokens 2K --output-tokens 256 --num-requests 10 --prefill-gpu h200)
kvcap_golden(err_simulate_kv_link 2 simulate --model llama-3.1-8b --gpu h100-sxm --rate 10 --prompt-tokens 2K --output-tokens 256 --num-requests 10 --prefill-replicas 1 --kv-transfer-link ethernet)
kvcap_golden(err_simulate_disagg_no_network 2 simulate --model llama-3.1-8b --gpu l40s --rate 1 --prompt-tokens 2K --output-tokens 256 --num-requests 10 --prefill-replicas 1)
kvcap_golden(size_disagg 0 size --model llama-3.1-70b --gpus h100-sxm,h200 --rate 6 --prompt-tokens 4K --output-tokens 512 --ttft-p 2s --tpot 40ms --engine vllm --quantization fp8 --kv-cache-dtype fp8 --max-pp 1 --disagg --top 4 --emit vllm)
kvcap_golden(size_disagg_json 0 size --model llama-3.1-70b --gpus h100-sxm --rate 6 --prompt-tokens 4K --output-tokens 512 --ttft-p 2s --tpot 40ms --quantization fp8 --kv-cache-dtype fp8 --max-pp 1 --disagg --top 2 --format json)
kvcap_golden(size_disagg_verify 0 size --model llama-3.1-70b --gpus h100-sxm --rate 6 --prompt-tokens 4K --output-tokens 512 --ttft-p 2s --tpot 40ms --quantization fp8 --kv-cache-dtype fp8 --max-pp 1 --disagg --top 2 --verify 2 --num-requests 600 --threads 1 --no-progress)
kvcap_golden(err_size_disagg_closed_loop 2 size --model llama-3.1-8b --prompt-tokens 1K --output-tokens 128 --concurrent-users 32 --ttft-p 1s --tpot 50ms --disagg)
kvcap_golden(err_size_mpi_without_verify 2 size --model llama-3.1-8b --prompt-tokens 1K --output-tokens 128 --rate 5 --ttft-p 1s --tpot 50ms --mpi)
kvcap_golden(simulate_disagg_trace 0 simulate --model llama-3.1-8b --gpu h100-sxm --trace %DATA%/trace_custom_columns.csv --trace-columns sent_at,in_tokens,out_tokens --prefill-replicas 1 --no-wall-time)
# The what-ifs side by side (issue 20): a --deploy value carries its row's own deployment flags; size searches with them.
kvcap_golden(compare_deploy_what_ifs 0 compare --deploy llama-3.1-8b@h200 "--deploy=llama-3.1-8b@h200 --kv-eviction h2o:budget=0.2" "--deploy=llama-3.1-8b@h200 --kv-cache-dtype int4 --kv-quant-group-size 64" "--deploy=llama-3.1-8b@h200 --kv-layer-sharing cla:2" --contexts 8K,128K)
kvcap_golden(err_compare_deploy_flag 2 compare "--deploy=llama-3.1-8b@h200 --gpu h100-sxm")
kvcap_golden(size_what_if_h2o 0 size --model llama-3.1-8b --gpus h100-sxm,h200 --prompt-tokens 32K --output-tokens 2K --rate 4 --ttft-p 3s --tpot 60ms --kv-eviction h2o:budget=0.2 --top 3)
# LMCache's local backends as a host tier (issue 20): capacity per rank in chunks, reload from CPU memory and disk.
kvcap_golden(plan_lmcache 0 plan --model llama-3.1-70b --gpu h200 --tensor-parallel-size 4 --lmcache-cpu-size 64 --lmcache-disk-size 500 --contexts 1K,32K,128K)
kvcap_golden(simulate_lmcache_disk 0 simulate --model llama-3.1-8b --gpu h200 --kv-cache-memory 12GiB --max-model-len 32K --workload %SOURCE%/profiles/examples/workload-multi-turn.yaml --num-requests 600 --lmcache-cpu-size 1 --lmcache-disk-size 64 --calibration %SOURCE%/profiles/calibrations/h200-2026-11-26.yaml --no-wall-time)
kvcap_golden(err_plan_lmcache_and_offloading 2 plan --model llama-3.1-8b --gpu h200 --lmcache-cpu-size 10 --kv-offloading-size 10)
kvcap_golden(compare_deploy_row_tp_with_dp 0 compare --data-parallel-size 2 --deploy llama-3.1-8b@h200 "--deploy=llama-3.1-8b@h200 --tensor-parallel-size 2" --contexts 8K --format csv)
kvcap_golden(compare_csv_beyond_max_model_len 0 compare --deploy llama-3.1-8b@h100-sxm --max-model-len 8K --contexts 4K,16K --format csv)
kvcap_golden(plan_csv_beyond_max_model_len 0 plan --model llama-3.1-8b --gpu h100-sxm --max-model-len 8K --contexts 4K,16K --format csv)
kvcap_golden(simulate_host_tier_mla 0 simulate --model deepseek-v2-lite --gpu h200 --kv-cache-memory 2GiB --max-model-len 16K --workload %SOURCE%/profiles/examples/workload-multi-turn.yaml --num-requests 300 --lmcache-cpu-size 4 --no-wall-time)
kvcap_golden(err_compare_deploy_same_twice 2 compare --deploy llama-3.1-8b@h200 "--deploy=llama-3.1-8b@h200 --kv-cache-dtype auto")
# Expert-parallel layouts of a MoE model (issue 16): the EP column, whole groups, one group's SGLang command.
kvcap_golden(size_ep_emit_sglang 0 size --model deepseek-r1 --gpus h200 --prompt-tokens 1000 --output-tokens 2000 --concurrent-users 2048 --ttft-p 10s --tpot 100ms --kv-cache-dtype fp8 --top 4 --emit sglang)
# sweep's data-parallel axis: with --enable-expert-parallel each DP size is an expert-parallel group (issue 16).
kvcap_golden(sweep_data_parallel_ep 0 sweep --models deepseek-v3 --gpus h200 --tensor-parallel-sizes 1,8 --data-parallel-sizes 1,8 --enable-expert-parallel --max-model-len 32K --contexts 8K --batches 64)
kvcap_golden(sweep_data_parallel_with_num_gpus 2 sweep --models deepseek-v3 --gpus h200 --data-parallel-sizes 8 --num-gpus 8)
kvcap_golden(size_ep_eplb_emit_vllm 0 size --model deepseek-r1 --gpus h200 --prompt-tokens 1000 --output-tokens 2000 --concurrent-users 1024 --ttft-p 10s --tpot 100ms --kv-cache-dtype fp8 --enable-eplb --eplb-config {\"num_redundant_experts\":32} --all2all-backend deepep_low_latency --top 3 --emit vllm)
# A points file: fields absent from a point are read as absent (P-1 has no ep, pp, kv_dtype), a layout kvcap cannot
# model is refused naming the file and the point.
kvcap_golden(accuracy_points_bad_ep 2 accuracy --points %DATA%/points_bad_ep.json)
# How the accuracy points' Hugging Face names map to built-in profiles: checkpoint-format and tuning suffixes dropped
# (nvidia/...-FP8, -Instruct, -it), Meta- prefixes, Llama 3.3 70B as 3.1 70B; a model without a profile is skipped.
kvcap_golden(accuracy_model_names 0 accuracy --points %DATA%/points_model_names.json)
kvcap_golden(accuracy_random_lengths 0 accuracy --points %DATA%/points_random_lengths.json)
kvcap_golden(accuracy_points_bad_ratio 2 accuracy --points %DATA%/points_bad_ratio.json)
# A point's fields are checked with its id named: a fractional client count, a rate beyond simulate's request limit,
# a GPU no profile has.
kvcap_golden(accuracy_points_bad_fields 2 accuracy --points %DATA%/points_bad_fields.json)
kvcap_golden(accuracy_points_bad_rate 2 accuracy --points %DATA%/points_bad_rate.json)
kvcap_golden(accuracy_points_unknown_gpu 2 accuracy --points %DATA%/points_unknown_gpu.json)
# kind static_batch: one wave of the batch (prefill together, then decode); a gate over no measured point fails.
kvcap_golden(accuracy_static_batch_gate_unscored 1 accuracy --points %DATA%/points_static_batch.json --max-mape tpot=50)
kvcap_golden(accuracy_gate_repeated_metric 2 accuracy --points %DATA%/points_static_batch.json --max-mape tpot=5,tpot=6)
# SGLang's prefill-first steps: closed-loop clients start together and stay in lockstep, in plan's steady state and in
# the simulator (docs/sizing.md, docs/simulator.md).
kvcap_golden(plan_sglang_lockstep 0 plan --model llama-3.1-8b --gpu h100-sxm --engine sglang --batch 64 --prompt-tokens 4K --output-tokens 512)
kvcap_golden(simulate_sglang_lockstep 0 simulate --model llama-3.1-8b --gpu h100-sxm --engine sglang --max-concurrency 64 --prompt-tokens 4K --output-tokens 512 --num-requests 640 --no-wall-time)
kvcap_golden(size_emit_sglang_mixed_chunk 0 size --model llama-3.1-8b --gpus h100-sxm --engine sglang --enable-mixed-chunk --rate 4 --prompt-tokens 1000 --output-tokens 200 --ttft-p 1s --tpot 50ms --emit sglang --top 1)
# A deployment without KV memory (E101): fits false and no speed figures (empty in CSV, null in JSON).
kvcap_golden(sweep_no_kv_memory_csv 0 sweep --models kimi-k2,llama-3.1-8b --gpus h100-sxm --contexts 4K --batches 1)
kvcap_golden(sweep_no_kv_memory_json 0 sweep --models kimi-k2 --gpus h100-sxm --contexts 4K --batches 1 --format json)
# A pool of exactly max_model_len tokens starts, but its null block leaves a request 8,176: the pool's limit is named.
kvcap_golden(err_simulate_pool_below_max_model_len 3 simulate --model llama-3.1-8b --gpu h100-sxm --max-model-len 8K --kv-cache-memory 1GiB --rate inf --prompt-tokens 8176 --output-tokens 20 --num-requests 3 --no-wall-time)
# A sliding-window model's one group: blocks of 16 and vLLM's logged token figure, not a false product.
kvcap_golden(plan_sliding_window_only 0 plan --model mistral-7b-v0.1 --gpu h200 --tensor-parallel-size 8 --max-model-len 32K --contexts 32K)
# --num-requests beyond the trace: the description says every row was replayed, not "first N".
kvcap_golden(simulate_trace_fewer_rows_than_asked 0 simulate --model llama-3.1-8b --gpu h100-sxm --trace %DATA%/trace_custom_columns.csv --trace-columns sent_at,in_tokens,out_tokens --num-requests 1000 --no-wall-time)
# --all2all-backend without expert parallelism across DP replicas: a usage error naming the flag (exit 2).
kvcap_golden(err_plan_all2all_without_dp 2 plan --model deepseek-v3 --gpu h200 --tensor-parallel-size 8 --enable-expert-parallel --all2all-backend deepep_low_latency)
# --kv-cache-memory 40: bytes, as vLLM reads it; below a mebibyte it is a missing unit (exit 2).
kvcap_golden(err_plan_kv_cache_memory_no_unit 2 plan --model llama-3.1-8b --gpu h100-sxm --kv-cache-memory 40)
# --verify with a run whose arrivals end within a minute: warned (an overloaded count can pass such a run).
kvcap_golden(size_verify_short_run_warning 0 size --model llama-3.1-8b --prompt-tokens 1K --output-tokens 64 --rate 4 --ttft-p 2s --tpot 50ms --gpus h100-sxm --max-tp 1 --max-pp 1 --top 1 --verify 1 --num-requests 20 --threads 1 --no-progress)
# The cheapest's mean batch within Poisson bursts of its KV limit: warned (preemption and recompute can collapse it).
kvcap_golden(size_kv_burst_warning 0 size --model mixtral-8x7b --prompt-tokens 16K --output-tokens 512 --rate 2 --ttft-p 2s --tpot 50ms --gpus h100-sxm --max-tp 1 --max-pp 1 --engine vllm --top 1 --no-progress)
# size --enable-expert-parallel on a dense model: a note, and its plain layouts.
kvcap_golden(size_expert_parallel_dense_note 0 size --model llama-3.1-8b --prompt-tokens 1K --output-tokens 64 --rate 4 --ttft-p 2s --tpot 50ms --gpus h100-sxm --max-tp 1 --max-pp 1 --enable-expert-parallel --top 1 --no-progress)
# --num-requests equal to the trace's rows: no "first N", no "more than the trace holds".
kvcap_golden(simulate_trace_rows_as_asked 0 simulate --model llama-3.1-8b --gpu h100-sxm --trace %DATA%/trace_custom_columns.csv --trace-columns sent_at,in_tokens,out_tokens --num-requests 60 --no-wall-time)
# --profiles: a folder's profile that differs from the built-in of its name is said on stderr; two of one name are refused.
kvcap_golden(check_profiles_shadow_builtin 0 check %SOURCE%/profiles/examples/requirements.yaml --profiles %DATA%/shadow)
kvcap_golden(err_check_profiles_duplicate 1 check %SOURCE%/profiles/examples/requirements.yaml --profiles %DATA%/shadow --profiles %SOURCE%/profiles)
# One output token per request: no decode step follows the prefill, the TPOT target is not applied (said in a note).
kvcap_golden(size_one_output_token 0 size --model llama-3.1-8b --prompt-tokens 2K --output-tokens 1 --rate 5 --ttft-p 2s --tpot 1ms --gpus h100-sxm --top 2)
kvcap_golden(err_size_percentile_hex 2 size --model llama-3.1-8b --gpus h200 --prompt-tokens 1K --output-tokens 128 --rate 1 --ttft-p 2s --tpot 50ms --ttft-percentile 0x50)
# A concurrency below 1 is cut, not rounded up to "1.00" (the request does not fit: E102 says so).
kvcap_golden(plan_concurrency_cut_below_one 3 plan --model llama-3.1-8b --gpu h100-sxm --kv-cache-memory 13107200000 --max-model-len 100016 --contexts 100001)
# compare's CSV carries 10 significant digits, as plan's (it printed 1.30429e+06).
kvcap_golden(compare_csv_precision 0 compare --deploy qwen3-30b-a3b@4xmi355x --tensor-parallel-size 4 --kv-cache-dtype fp8 --contexts 16,1K --format csv)
# Bytes quoted from a trace, a profile name or a search's diagnosis are escaped for the terminal.
kvcap_golden(err_simulate_trace_control_bytes 1 simulate --model llama-3.1-8b --gpu h200 --trace %DATA%/trace_control_bytes.csv --no-progress)
kvcap_golden(err_eplb_redundant_range 2 plan --model qwen3-30b-a3b --gpu h200 --num-gpus 2 --enable-expert-parallel --enable-eplb --eplb-config "{\"num_redundant_experts\": 9223372036854775807}")
kvcap_golden(err_empirical_weights_sum 2 simulate --model llama-3.1-8b --gpu h200 --rate 2 --prompt-tokens empirical:128@1e308,1K@1e308 --output-tokens 16 --num-requests 50 --no-progress)
