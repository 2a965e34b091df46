# Registries whose members join from their own file (codecs, sample orders): a member file
# holds a line `<MACRO>(<ident>) { ... }` at the start of a line, defining the global function
# `<PREFIX><ident>(<REGISTRY>&)`. This generates, at build time, one source file whose function
# <FUNCTION>(<REGISTRY>&) calls every such function found in the files matching GLOB, and adds
# it to TARGET. Calling them from generated code (not static registrar objects) keeps each
# member file linked in even from a static archive, and needs no hand-kept list.
function(lazycube_add_registrations TARGET)
  cmake_parse_arguments(R "" "NAME;MACRO;PREFIX;REGISTRY;FUNCTION;GLOB" "" ${ARGN})
  file(GLOB members CONFIGURE_DEPENDS ${R_GLOB})
  set(out "${CMAKE_CURRENT_BINARY_DIR}/generated/${R_NAME}.cpp")
  set(stamp "${CMAKE_CURRENT_BINARY_DIR}/generated/${R_NAME}.stamp")
  add_custom_command(
    OUTPUT "${stamp}"
    BYPRODUCTS "${out}"
    COMMAND "${CMAKE_COMMAND}" "-DOUTPUT=${out}" "-DMACRO=${R_MACRO}" "-DPREFIX=${R_PREFIX}"
            "-DREGISTRY=${R_REGISTRY}" "-DFUNCTION=${R_FUNCTION}" "-DGLOB=${R_GLOB}"
            -P "${PROJECT_SOURCE_DIR}/cmake/generate_registrations.cmake"
    COMMAND "${CMAKE_COMMAND}" -E touch "${stamp}"
    DEPENDS ${members} "${PROJECT_SOURCE_DIR}/cmake/generate_registrations.cmake"
    COMMENT "Collecting ${R_MACRO} registrations"
    VERBATIM)
  target_sources(${TARGET} PRIVATE "${out}" "${stamp}")
endfunction()
