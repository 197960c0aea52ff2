# rt_add_cli_fuzz_target(NAME SOURCES...): an executable made of SOURCES plus rtune's own CLI sources (the command
# table and every cmd_*.c, as the rtune target lists them) with cli/main.c's main() renamed rt_fuzz_cli_main, linked
# like rtune. Used by fuzz/ (libFuzzer) and tests/unit/hardening/ (corpus replay). The rename is a source property of
# the calling directory only: the real rtune binary is unaffected.
function(rt_add_cli_fuzz_target name)
  get_target_property(srcs rtune SOURCES)
  get_target_property(libs rtune LINK_LIBRARIES)
  get_target_property(defs rtune COMPILE_DEFINITIONS)
  set(cli_srcs)
  foreach(s IN LISTS srcs)
    if(NOT IS_ABSOLUTE "${s}")
      set(s ${PROJECT_SOURCE_DIR}/cli/${s})
    endif()
    list(APPEND cli_srcs ${s})
  endforeach()
  add_executable(${name} ${ARGN} ${cli_srcs})
  set_source_files_properties(${PROJECT_SOURCE_DIR}/cli/main.c PROPERTIES COMPILE_DEFINITIONS main=rt_fuzz_cli_main
    COMPILE_OPTIONS -Wno-missing-prototypes)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/cli ${PROJECT_SOURCE_DIR}/tests/unit)
  target_link_libraries(${name} PRIVATE ${libs})
  if(defs)
    target_compile_definitions(${name} PRIVATE ${defs})
  endif()
  add_dependencies(${name} rtune)
endfunction()
