# dietcode_add_pack: build a dietcode kernel pack as part of a CMake project.
#
#   include(DietcodePack)   # or find_package(dietcode), which includes it
#   dietcode_add_pack(TARGET bert
#                     WORKLOAD ${CMAKE_SOURCE_DIR}/bert_base_dense.json
#                     LOG ${CMAKE_SOURCE_DIR}/bert_h100.jsonl    # optional: untuned without
#                     ARCH sm_80 sm_90                            # optional: dietcode's default
#                     MAX_KERNELS 8                               # optional
#                     ALLOW_SIMULATED)                            # optional
#   target_link_libraries(my_app PRIVATE bert)   # or dlopen $<TARGET_FILE:bert>
#
# Adds a custom command that runs `dietcode build` (no GPU needed) into the current binary
# folder, producing lib<TARGET>.so and <TARGET>.h, and an IMPORTED shared library <TARGET>
# whose include directory holds the header. The pack is rebuilt when the workload or the log
# changes. The dietcode CLI is the in-tree `dietcode` target when there is one, else
# DIETCODE_EXECUTABLE (found on the PATH by default).
include_guard(GLOBAL)

function(dietcode_add_pack)
  cmake_parse_arguments(PARSE_ARGV 0 ARG "ALLOW_SIMULATED" "TARGET;WORKLOAD;LOG;MAX_KERNELS"
                        "ARCH")
  if(NOT ARG_TARGET OR NOT ARG_WORKLOAD)
    message(FATAL_ERROR "dietcode_add_pack: TARGET and WORKLOAD are required")
  endif()
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "dietcode_add_pack: unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()

  if(TARGET dietcode)
    set(cli $<TARGET_FILE:dietcode>)
    set(cli_dep dietcode)
  else()
    find_program(DIETCODE_EXECUTABLE dietcode REQUIRED)
    set(cli ${DIETCODE_EXECUTABLE})
    set(cli_dep ${DIETCODE_EXECUTABLE})
  endif()

  get_filename_component(workload ${ARG_WORKLOAD} ABSOLUTE)
  set(library ${CMAKE_CURRENT_BINARY_DIR}/lib${ARG_TARGET}.so)
  set(header ${CMAKE_CURRENT_BINARY_DIR}/${ARG_TARGET}.h)
  set(command ${cli} build ${workload} -o ${library} --quiet)
  set(depends ${workload} ${cli_dep})
  if(ARG_LOG)
    get_filename_component(log ${ARG_LOG} ABSOLUTE)
    list(APPEND command --log ${log})
    list(APPEND depends ${log})
  endif()
  if(ARG_ARCH)
    list(JOIN ARG_ARCH "," archs)
    list(APPEND command --arch ${archs})
  endif()
  if(DEFINED ARG_MAX_KERNELS)
    list(APPEND command --max-kernels ${ARG_MAX_KERNELS})
  endif()
  if(ARG_ALLOW_SIMULATED)
    list(APPEND command --allow-simulated)
  endif()

  add_custom_command(OUTPUT ${library} ${header}
    COMMAND ${command}
    DEPENDS ${depends}
    COMMENT "dietcode: building kernel pack lib${ARG_TARGET}.so"
    VERBATIM)
  add_custom_target(${ARG_TARGET}_pack DEPENDS ${library} ${header})

  add_library(${ARG_TARGET} SHARED IMPORTED GLOBAL)
  # The include folder must exist when the target is used, before the pack is built.
  file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_target_properties(${ARG_TARGET} PROPERTIES
    IMPORTED_LOCATION ${library}
    IMPORTED_SONAME lib${ARG_TARGET}.so
    INTERFACE_INCLUDE_DIRECTORIES ${CMAKE_CURRENT_BINARY_DIR})
  add_dependencies(${ARG_TARGET} ${ARG_TARGET}_pack)
endfunction()
