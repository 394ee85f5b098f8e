# `mpirun --oversubscribe -np 2 kvcap size ... --mpi` prints the single-process report, byte for byte (issue 18): the
# candidates are split over the ranks and gathered, and each candidate's simulations are seeded the same wherever they
# run. Runs both; fails on any difference. Root may run Open MPI here (CI runs as root).
cmake_minimum_required(VERSION 3.25)
set(ENV{OMPI_ALLOW_RUN_AS_ROOT} 1)
set(ENV{OMPI_ALLOW_RUN_AS_ROOT_CONFIRM} 1)
set(args size --model llama-3.1-8b --prompt-tokens 2K --output-tokens 256 --rate 40 --ttft-p 500ms --tpot 30ms
    --gpus h100-sxm,l40s --max-tp 2 --max-pp 1 --disagg --top 3 --verify 5 --num-requests 1500 --threads 1
    --no-progress)
execute_process(COMMAND ${KVCAP} ${args} OUTPUT_VARIABLE one ERROR_VARIABLE err1 RESULT_VARIABLE rc1)
if(NOT rc1 EQUAL 0)
  message(FATAL_ERROR "single process failed (${rc1}):\n${err1}")
endif()
foreach(n 2 3)
  execute_process(COMMAND ${MPIRUN} --oversubscribe -np ${n} ${KVCAP} ${args} --mpi OUTPUT_VARIABLE many
                  ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT 300)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "mpirun -np ${n} failed (${rc}):\n${err}")
  endif()
  if(NOT many STREQUAL one)
    file(WRITE ${OUT}/mpi_one.txt "${one}")
    file(WRITE ${OUT}/mpi_${n}.txt "${many}")
    message(FATAL_ERROR "mpirun -np ${n} printed another report than one process: diff ${OUT}/mpi_one.txt "
                        "${OUT}/mpi_${n}.txt")
  endif()
endforeach()
string(FIND "${one}" "Verified by simulation" at)
if(at EQUAL -1)
  message(FATAL_ERROR "the report has no verification:\n${one}")
endif()
message(STATUS "mpirun -np 2 and -np 3 print the single-process report")
