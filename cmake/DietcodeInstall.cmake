# Install rules and an exported package: a consumer's CMake does find_package(dietcode) and
# links dietcode::pack_abi for the C ABI header every kernel pack exports.
include(CMakePackageConfigHelpers)

add_library(dietcode_pack_abi INTERFACE)
add_library(dietcode::pack_abi ALIAS dietcode_pack_abi)
set_target_properties(dietcode_pack_abi PROPERTIES EXPORT_NAME pack_abi)
target_include_directories(dietcode_pack_abi INTERFACE
  $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)

# The installed CLI keeps the RPATH to libraries outside the system folders (an offline
# bundle's libxgboost, libdmlc, libfmt), so it starts without LD_LIBRARY_PATH.
set_target_properties(dietcode PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
install(TARGETS dietcode RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS dietcode_pack_abi EXPORT dietcodeTargets)
install(DIRECTORY include/dietcode DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY templates configs DESTINATION ${CMAKE_INSTALL_DATADIR}/dietcode)
install(EXPORT dietcodeTargets NAMESPACE dietcode::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dietcode)

configure_package_config_file(cmake/dietcodeConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/dietcodeConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dietcode)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/dietcodeConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/dietcodeConfig.cmake
              cmake/DietcodePack.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/dietcodeConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dietcode)
