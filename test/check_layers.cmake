# The layering of DESIGN §2, checked on every source file: a folder may include only from the
# folders below it. core <- persistence <- actors <- net <- apps; core <- transport <- net;
# core <- transport <- client <- apps. The client's public headers (client/include/warren, included
# as "warren/...") are installed, so they may include only each other and core.
# Inside actors/ and net/ the same holds between their parts (sub-folders), below.
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

# The parts of a layer: its sub-folders, and `shared` for the files directly in it. Every file
# of the layer must lie in one of the parts named; an include of "<layer>/<part>/..." (or of
# "<layer>/file", part `shared`) must name a part in allowed_<layer>_<part>.
function(check_parts layer)
  set(parts ${ARGN})
  file(GLOB_RECURSE sources "${SOURCE_DIR}/${layer}/*.hpp" "${SOURCE_DIR}/${layer}/*.cpp")
  foreach(source ${sources})
    file(RELATIVE_PATH where "${SOURCE_DIR}" "${source}")
    set(part shared)
    if(where MATCHES "^${layer}/([a-z_]+)/")
      set(part ${CMAKE_MATCH_1})
    endif()
    if(NOT part IN_LIST parts)
      string(APPEND violations "\n  ${where}: not in one of ${layer}'s parts (${parts})")
      continue()
    endif()
    file(STRINGS "${source}" includes REGEX "^#include \"${layer}/")
    foreach(line ${includes})
      set(folder shared)
      if(line MATCHES "^#include \"${layer}/([a-z_]+)/")
        set(folder ${CMAKE_MATCH_1})
      endif()
      if(NOT folder IN_LIST allowed_${layer}_${part})
        string(APPEND violations "\n  ${where}: ${line} (${layer}/${part} may include only from: "
               "${allowed_${layer}_${part}})")
      endif()
    endforeach()
  endforeach()
  set(violations "${violations}" PARENT_SCOPE)
endfunction()

# actors/: the protocols, message types and errors (common) at the bottom; storage (the
# persistence actor, what queues need to reach storage); routing, queue, stream; the vhost over
# them; the cluster actor; the node over the vhosts; connections at the top. No file lies
# directly in actors/.
set(allowed_actors_common common)
set(allowed_actors_storage common storage)
set(allowed_actors_routing common routing)
set(allowed_actors_queue common storage queue)
set(allowed_actors_stream common storage queue stream)
set(allowed_actors_vhost common storage routing queue stream vhost)
set(allowed_actors_cluster common storage cluster)
set(allowed_actors_node common storage routing vhost node)
set(allowed_actors_connection common queue node connection)
check_parts(actors common storage routing queue stream vhost cluster node connection)

# net/: the listener thread all three doors share (shared, directly in net/), and one folder per
# door; the management door acts through Cap'n Proto sessions.
set(allowed_net_shared shared)
set(allowed_net_amqp shared amqp)
set(allowed_net_capnp shared capnp)
set(allowed_net_http shared capnp http)
check_parts(net shared amqp capnp http)

if(violations)
  message(FATAL_ERROR "includes against the layering:${violations}")
endif()
message(STATUS "layering: every include goes down the layers")
