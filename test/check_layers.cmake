# The layering of DESIGN §2, checked on every source file: a folder may include only from the
# folders below it. core <- persistence <- actors <- net <- apps; core <- transport <- net;
# core <- transport <- client <- apps. The client's public headers (client/include/warren, included
# as "warren/...") are installed, so they may include only each other and core.
# Run as: cmake -DSOURCE_DIR=... -P check_layers.cmake
cmake_minimum_required(VERSION 3.16)
set(allowed_core core)
set(allowed_transport core transport)
set(allowed_persistence core persistence)
set(allowed_actors core persistence actors)
set(allowed_net core transport persistence actors net)
set(allowed_client core transport client)
set(allowed_apps core transport persistence actors net client apps)

set(violations "")
foreach(layer core transport persistence actors net client apps)
  file(GLOB_RECURSE sources "${SOURCE_DIR}/${layer}/*.hpp" "${SOURCE_DIR}/${layer}/*.cpp")
  foreach(source ${sources})
    file(STRINGS "${source}" includes REGEX "^#include \"[a-z_]+/")
    foreach(line ${includes})
      string(REGEX REPLACE "^#include \"([a-z_]+)/.*" "\\1" folder "${line}")
      set(allowed ${allowed_${layer}})
      if(folder STREQUAL "warren")
        set(folder client)
      endif()
      if(source MATCHES "/client/include/")
        set(allowed core client)
      endif()
      if(NOT folder IN_LIST allowed)
        file(RELATIVE_PATH where "${SOURCE_DIR}" "${source}")
        string(APPEND violations "\n  ${where}: ${line} (${layer} may include only from: "
               "${allowed})")
      endif()
    endforeach()
  endforeach()
endforeach()

if(violations)
  message(FATAL_ERROR "includes against the layering:${violations}")
endif()
message(STATUS "layering: every include goes down the layers")
