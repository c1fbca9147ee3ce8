# Runs one fuzz target for a bounded time under ctest (see RANKSIGHT_FUZZ in the top-level CMakeLists.txt):
#   cmake -DFUZZER=path/fuzz_x -DSEEDS=fuzz/corpus/x -DWORK=build/.../fuzz-run/x [-DSECONDS=20] -P RunFuzz.cmake
# The first corpus directory is a scratch one in the build tree, wiped on every run, where libFuzzer writes
# what it finds; the repository's seed directory comes second and is only read. Crash inputs go to
# WORK/artifacts/; copy one to tests/data/fuzz-regressions/<target>/ once it is fixed.
if(NOT SECONDS)
  set(SECONDS 20)
endif()
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus ${WORK}/artifacts)
execute_process(
  COMMAND ${FUZZER} -max_total_time=${SECONDS} -rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=10
          -print_final_stats=1 -artifact_prefix=${WORK}/artifacts/ ${WORK}/corpus ${SEEDS}
  WORKING_DIRECTORY ${WORK}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(GLOB found ${WORK}/artifacts/*)
  message(FATAL_ERROR "${FUZZER} failed (${rc}); inputs that show the problem: ${found}")
endif()
