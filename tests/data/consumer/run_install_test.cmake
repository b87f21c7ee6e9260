# Installs a dietcode build into a fresh prefix, then configures, builds and runs the consumer
# project against it, and checks the installed CLI starts. Run with cmake -P and
#   -DBUILD_DIR=<dietcode build> -DCONSUMER_DIR=<this folder> -DWORK_DIR=<scratch folder>
#   -DGENERATOR=<CMake generator>
foreach(var BUILD_DIR CONSUMER_DIR WORK_DIR GENERATOR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_install_test.cmake: -D${var}=... is required")
  endif()
endforeach()

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " command "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${command}\n${out}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

foreach(installed bin/dietcode include/dietcode/pack_abi.h share/dietcode/configs/gpus/h100.json)
  if(NOT EXISTS ${prefix}/${installed})
    message(FATAL_ERROR "not installed: ${prefix}/${installed}")
  endif()
endforeach()
run(${prefix}/bin/dietcode --version)
message(STATUS "installed CLI: ${last_output}")

run(${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/consumer -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/consumer)
run(${WORK_DIR}/consumer/consumer)
message(STATUS "consumer: ${last_output}")
if(NOT last_output MATCHES "pack ABI 4 from C, 4 from C\\+\\+")
  message(FATAL_ERROR "unexpected consumer output: ${last_output}")
endif()
file(REMOVE_RECURSE ${WORK_DIR})
