# Third-party dependencies, all from Debian packages or the CUDA toolkit.
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(fmt REQUIRED)
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)  # reads gzip-compressed tuning logs
find_package(CUDAToolkit 12 REQUIRED)

# NVRTC is linked by its library file: CUDA::nvrtc's link interface drags in the driver stub,
# and a binary that needs libcuda.so.1 cannot start on a machine without a GPU driver.
find_library(DIETCODE_NVRTC_LIBRARY NAMES nvrtc HINTS ${CUDAToolkit_LIBRARY_DIR} REQUIRED)
add_library(dietcode_nvrtc_lib INTERFACE)
target_link_libraries(dietcode_nvrtc_lib INTERFACE ${DIETCODE_NVRTC_LIBRARY})
target_include_directories(dietcode_nvrtc_lib SYSTEM INTERFACE ${CUDAToolkit_INCLUDE_DIRS})

# The driver API: headers only (cuda.h, cudaTypedefs.h); the library is dlopen'ed.
add_library(dietcode_cuda_headers INTERFACE)
target_include_directories(dietcode_cuda_headers SYSTEM INTERFACE ${CUDAToolkit_INCLUDE_DIRS})
target_link_libraries(dietcode_cuda_headers INTERFACE ${CMAKE_DL_LIBS})

# XGBoost's CMake config in Debian's package points at another package's executable, so the
# library is found by hand. libdmlc sits beside it on Debian and in the offline bundle.
find_path(XGBOOST_INCLUDE_DIR xgboost/c_api.h REQUIRED)
find_library(XGBOOST_LIBRARY NAMES xgboost REQUIRED)
add_library(dietcode_xgboost INTERFACE)
target_include_directories(dietcode_xgboost SYSTEM INTERFACE ${XGBOOST_INCLUDE_DIR})
target_link_libraries(dietcode_xgboost INTERFACE ${XGBOOST_LIBRARY})

# From an offline bundle (docs/offline-gpu-hosts.md) libxgboost lies outside the system library
# folders, and it needs libdmlc from the same folder. CMake puts that folder in the RPATH of
# every binary linking it, but as DT_RUNPATH by default, which the loader ignores when it
# resolves libxgboost's own dependencies; DT_RPATH (--disable-new-dtags) it honours.
get_filename_component(DIETCODE_XGBOOST_LIBRARY_DIR ${XGBOOST_LIBRARY} DIRECTORY)
if(NOT DIETCODE_XGBOOST_LIBRARY_DIR IN_LIST CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES)
  target_link_options(dietcode_xgboost INTERFACE -Wl,--disable-new-dtags)
endif()
message(STATUS "dietcode: xgboost ${XGBOOST_LIBRARY} (headers ${XGBOOST_INCLUDE_DIR})")
